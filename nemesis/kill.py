"""Crash faults: SIGKILL node processes, and restart them on heal."""
from __future__ import annotations

from typing import Sequence

from clusters.parallel import on_nodes
from nemesis.process_db import ProcessDB


def kill_nodes(db: ProcessDB, targets: Sequence[str]) -> dict[str, bool]:
    """SIGKILL the process on each target, in parallel.

    Returns ``{node: True if a process was killed}``. Raises
    ``clusters.parallel.NodeErrors`` if any node could not be reached.
    """
    return on_nodes(targets, db.kill, what="kill")


def restart_nodes(db: ProcessDB, targets: Sequence[str]) -> dict[str, bool]:
    """Start the process on each target that is not running, in parallel.

    Returns ``{node: True if it was started}`` (False: it was already
    running). Raises ``clusters.parallel.NodeErrors`` on failure.
    """
    return on_nodes(targets, db.start, what="restart")
