"""The simulator's workloads: one table, :data:`WORKLOADS`, of everything the simulator needs
to know about each workload it drives (workloads/registry.py names): the brokers it runs on,
its weight in the swarm's draw (sim/swarm.py), its default share of reads, its clients, and
whether those clients end a schedule with the final reads of the quorum's log.

A workload the simulator learns to drive joins with one line here (and, for clients of its own,
a function that imports them). Each clients class is imported when a schedule asks for it, not
with the table: reading the table (the options' checks, the swarm's draw, the command line)
then does not import the cores (about 0.4 s of every ``kraft-chaos`` start).
"""
from __future__ import annotations

import dataclasses
from typing import Callable


def _append_clients() -> type:
    from .clients import AppendClients
    return AppendClients


def _kv_clients() -> type:
    from .kv_clients import KvClients
    return KvClients


@dataclasses.dataclass(frozen=True)
class SimWorkload:
    """One workload the simulator drives.

    ``brokers``: the brokers it runs on (0: the quorum's own clients); ``weight``: its weight
    in the swarm's draw; ``read_fraction``: the share of a schedule's client ops that are
    reads when the options leave it at its default (0.1); ``clients``: a function returning
    the class of its clients over the quorum (their interface: sim/clients.py's
    AppendClients), None when the brokers' data plane runs them (sim/data_plane.py);
    ``final_reads``: whether those clients end a schedule with the final reads of the quorum's
    log (else a lone reader makes them, sim/schedule.py)."""

    brokers: int
    weight: float
    read_fraction: float
    clients: Callable[[], type] | None
    final_reads: bool = False

    def client_class(self) -> type:
        """The class of its clients over the quorum. Raises ValueError for a workload whose
        clients the data plane runs (``clients`` None)."""
        if self.clients is None:
            raise ValueError("this workload's clients are the data plane's (sim/data_plane.py)")
        return self.clients()


#: the simulator's workloads, by workloads/registry.py name
WORKLOADS: dict[str, SimWorkload] = {
    "append": SimWorkload(brokers=0, weight=3, read_fraction=0.1, clients=_append_clients,
                          final_reads=True),
    # the queue workload's polls are half its ops
    "queue": SimWorkload(brokers=3, weight=2, read_fraction=0.5, clients=None),
    # workloads/kv.py: a third each of reads, writes and cas
    "kv": SimWorkload(brokers=0, weight=2, read_fraction=1 / 3, clients=_kv_clients),
}


def workload_of(brokers: int) -> str:
    """The workload a fixed configuration with ``brokers`` runs (the first in :data:`WORKLOADS`
    on that many brokers, or on some when ``brokers`` > 0). Raises ValueError when none does."""
    for name, w in WORKLOADS.items():
        if (w.brokers > 0) == (brokers > 0):
            return name
    raise ValueError(f"no simulated workload runs on {brokers} broker(s)")
