"""The linearizability search's C core (``_wgl``, built from ``_wgl.c`` by ``make venv``).

Imported through here so that a checkout whose extension was never built fails with a
message saying what to do, rather than a bare ``ImportError: cannot import name '_wgl'``.
"""
from __future__ import annotations

try:
    from . import _wgl
except ImportError as e:            # pragma: no cover - exercised by a subprocess test
    raise ImportError("the linearizability checker's C core (checkers/linearizability/_wgl.c) is not built: "
                      "run `make venv` (or `pip install -e .`), which compiles it") from e

__all__ = ["_wgl"]
