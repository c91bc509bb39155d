"""Crash faults: SIGKILL node processes, and restart them on heal; the injectors of the ``kill``
and ``crash`` families (they differ only in the kinds that choose their targets)."""
from __future__ import annotations

from typing import Sequence

from clusters.parallel import on_nodes
from faults import crash, kill
from nemesis.injector import Injector, signal_start
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


def restart_stop(ctl, fault, targets: list[str], out: dict) -> None:
    """The stop of a fault that took its targets down (an :class:`~nemesis.injector.Injector`'s
    ``stop``): start each again."""
    restart_nodes(ctl.db, targets)


INJECTOR = Injector(kill.SPEC, signal_start(kill_nodes), restart_stop)
CRASH = Injector(crash.SPEC, signal_start(kill_nodes), restart_stop)
