"""Pause faults: SIGSTOP node processes, and SIGCONT them on heal; the ``pause`` family's
injector."""
from __future__ import annotations

from typing import Sequence

from clusters.parallel import on_nodes
from faults.pause import SPEC
from nemesis.injector import Injector, signal_start
from nemesis.process_db import ProcessDB


def pause_nodes(db: ProcessDB, targets: Sequence[str]) -> dict[str, bool]:
    """SIGSTOP the process on each target, in parallel.

    Returns ``{node: True if a process was paused}``. Raises
    ``clusters.parallel.NodeErrors`` if any node could not be reached.
    """
    return on_nodes(targets, db.pause, what="pause")


def resume_nodes(db: ProcessDB, targets: Sequence[str]) -> dict[str, bool]:
    """SIGCONT the process on each target, in parallel.

    Returns ``{node: True if a process was resumed}``. Raises
    ``clusters.parallel.NodeErrors`` on failure.
    """
    return on_nodes(targets, db.resume, what="resume")


def _stop(ctl, fault, targets: list[str], out: dict) -> None:
    resume_nodes(ctl.db, targets)


INJECTOR = Injector(SPEC, signal_start(pause_nodes), _stop)
