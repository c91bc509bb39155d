"""A checkout whose C core was never built says what to do (checkers/linearizability/core.py)."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

HIDE_CORE = """
import importlib.abc, sys
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "checkers.linearizability._wgl":
            raise ModuleNotFoundError("No module named " + repr(name), name=name)
        return None
sys.meta_path.insert(0, Hide())
import checkers.linearizability
"""


def test_an_unbuilt_core_names_the_fix():
    r = subprocess.run([sys.executable, "-c", HIDE_CORE], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode != 0
    assert "C core (checkers/linearizability/_wgl.c) is not built: run `make venv`" in r.stderr
