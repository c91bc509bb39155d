"""The Java runtime a node needs, checked where the nodes run it: this host (netns) or each
SSH host. Targets that run a JVM (``--db kafka``) ask for a minimum major version through
``clusters.registry.Software.min_java``; the backends run the host's ``java`` on ``PATH``.
"""
from __future__ import annotations

import re
import shutil
import subprocess

#: sh: print ``java <resolved path> <first line of java -version>`` or ``java-missing``
#: (``java -version`` writes to stderr; ``$j`` is ``java`` found on ``PATH``)
PROBE = ('j=$(command -v java 2>/dev/null)\n'
         'if [ -n "$j" ]; then echo "java $(readlink -f "$j") $("$j" -version 2>&1 | head -n 1)"\n'
         'else echo java-missing; fi\n')

_VERSION = re.compile(r'version "([^"]+)"')
_LINE = re.compile(r"^java (\S+) (.*)$", re.M)


def java_major(version_line: str) -> int | None:
    """The major version in ``java -version``'s first line (``openjdk version "17.0.15" ...`` ->
    17, ``java version "1.8.0_292"`` -> 8), or None when there is none."""
    m = _VERSION.search(version_line)
    if not m:
        return None
    parts = re.split(r"[._+-]", m.group(1))
    try:
        major = int(parts[0])
        return int(parts[1]) if major == 1 and len(parts) > 1 else major
    except ValueError:
        return None


def probe_problem(probe_output: str, min_major: int) -> str | None:
    """What is wrong with the ``java`` that :data:`PROBE` printed about (``probe_output``: the
    probe's stdout, other lines allowed), or None when it is at least ``min_major``. The text
    names the cause: no ``java`` on ``PATH``, a version it cannot read, or one too old."""
    if "java-missing" in probe_output.splitlines():
        return (f"no java on PATH (the nodes run a JVM: install a Java >= {min_major} runtime, "
                f"Debian: openjdk-{min_major}-jre-headless)")
    m = _LINE.search(probe_output)
    if not m:
        return f"java's version could not be read ({probe_output.strip()[-200:] or 'no output'})"
    major = java_major(m.group(2))
    if major is None:
        return f"{m.group(1)} did not report a version ({m.group(2).strip()[:200]!r})"
    if major < min_major:
        return f"{m.group(1)} is Java {major}; the nodes need Java >= {min_major}"
    return None


def local_java_problem(min_major: int, path: str | None = None) -> str | None:
    """:func:`probe_problem` for this host's ``java`` (on ``path``, default this process's
    ``PATH``), or None when it is at least ``min_major``. Never raises."""
    env = None if path is None else {"PATH": path}
    if shutil.which("java", path=path) is None:
        return probe_problem("java-missing", min_major)
    try:
        out = subprocess.run(["sh", "-c", PROBE], capture_output=True, text=True, timeout=60, env=env).stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"java -version could not run: {e}"
    return probe_problem(out, min_major)

