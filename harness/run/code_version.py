"""Which commit of kraft-chaos ran: recorded as ``"commit"`` in each run's ``test.json``.

Source: ``git rev-parse HEAD`` and ``git status --porcelain
--untracked-files=no`` in the project's checkout (the folder holding
``harness/``). Each git call gets :data:`GIT_TIMEOUT_S`.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

#: seconds each git call may take before the commit counts as unknown
GIT_TIMEOUT_S = 5.0

#: the project root: the parent of ``harness/``
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _git(args: list[str], cwd: Path) -> str | None:
    """``git ARGS`` in ``cwd``: its stdout, or None when git is missing, fails or times out."""
    # The work tree is the one at cwd, whatever the caller's environment names.
    env = {k: v for k, v in os.environ.items()
           if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}
    try:
        p = subprocess.run(["git", "--no-optional-locks", *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=GIT_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    return p.stdout if p.returncode == 0 else None


def code_commit(repo_dir: Path | None = None) -> str | None:
    """The commit of the code in ``repo_dir``: its hash, plus ``-dirty`` when tracked files differ.

    The hash is ``git rev-parse HEAD``: 40 lowercase hex digits (64 in a
    SHA-256 repository), e.g. ``"3f1c...9a0e"`` or ``"3f1c...9a0e-dirty"``.

    ``repo_dir`` defaults to the project root (:data:`PROJECT_ROOT`); then
    it must be the top of the work tree, so an installed copy inside some
    other checkout (a venv's site-packages) does not report that checkout's
    commit. ``-dirty`` means ``git status --porcelain --untracked-files=no``
    lists something (staged or unstaged changes to tracked files; untracked
    files do not count).

    Returns None, never raises, when git is missing, ``repo_dir`` is not in a
    git work tree or has no commit yet, or a git call fails or takes longer
    than :data:`GIT_TIMEOUT_S` (also for ``git status``: an unknown state is
    not reported as clean).
    """
    default = repo_dir is None
    cwd = PROJECT_ROOT if default else Path(repo_dir)
    if not cwd.is_dir():
        return None
    out = _git(["rev-parse", "--show-toplevel", "HEAD"], cwd)
    if out is None:
        return None
    lines = out.split("\n")
    if len(lines) < 2:
        return None
    top, head = lines[0].strip(), lines[1].strip()
    if len(head) not in (40, 64) or any(c not in "0123456789abcdef" for c in head):
        return None
    if default:
        try:
            if Path(top).resolve() != cwd.resolve():
                return None
        except OSError:
            return None
    status = _git(["status", "--porcelain", "--untracked-files=no"], cwd)
    if status is None:
        return None
    return head + "-dirty" if status.strip() else head
