"""Clean stops: SIGTERM node processes (each waits for its own shutdown, then SIGKILL past the
DB's stop timeout) and start them again when the fault stops; the injector of the ``stop``
family (faults/stop.py)."""
from __future__ import annotations

from typing import Protocol, Sequence

from clusters.parallel import on_nodes
from faults.stop import SPEC
from nemesis.injector import Injector, signal_start
from nemesis.kill import restart_stop


#: seconds a node may take over its clean shutdown before the DB kills it (a Kafka broker's
#: controlled shutdown moves its leaderships first): long, since a kill would be no clean stop
STOP_WAIT_S = 30.0


class StoppableDB(Protocol):
    """A DB whose nodes can be shut down cleanly (``targets.kafka.db.KafkaDB``,
    ``targets.kraft_db.KraftDB``)."""

    def stop(self, node: str, timeout_s: float | None = None) -> bool:
        """SIGTERM the node's process and wait for it to exit (SIGKILL after the DB's timeout);
        True if one was running."""


def stop_nodes(db: StoppableDB, targets: Sequence[str]) -> dict[str, bool]:
    """Shut the process on each target down cleanly, in parallel.

    Returns ``{node: True if a process was running}``. Raises ``ValueError`` when the DB has
    no clean stop, and ``clusters.parallel.NodeErrors`` if a node could not be reached."""
    if not callable(getattr(db, "stop", None)):
        raise ValueError("nemesis stop needs a DB with a clean stop (SIGTERM): this one has none")
    return on_nodes(targets, lambda n: db.stop(n, timeout_s=STOP_WAIT_S), what="stop")


INJECTOR = Injector(SPEC, signal_start(stop_nodes), restart_stop)
