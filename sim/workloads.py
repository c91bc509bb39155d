"""The simulator's workloads: one table, :data:`WORKLOADS`, of everything the simulator needs
to know about each workload it drives (workloads/registry.py names): the brokers it runs on,
its weight in the swarm's draw (sim/swarm.py), its default share of reads, its clients, and
whether those clients end a schedule with the final reads of the quorum's log.

A workload the simulator learns to drive joins with one line here. The clients are named
(``"module:Class"``, a :class:`sim.clients.AppendClients`-like class) rather than imported, so
that reading the table (the options' checks, the swarm's draw) does not import the cores.
"""
from __future__ import annotations

import dataclasses
import importlib


@dataclasses.dataclass(frozen=True)
class SimWorkload:
    """One workload the simulator drives.

    ``brokers``: the brokers it runs on (0: the quorum's own clients); ``weight``: its weight
    in the swarm's draw; ``read_fraction``: the share of a schedule's client ops that are
    reads when the options leave it at its default (0.1); ``clients``: ``"module:Class"`` of
    its clients over the quorum (their interface: sim/clients.py's AppendClients), None when
    the brokers' data plane runs them (sim/data_plane.py); ``final_reads``: whether those
    clients end a schedule with the final reads of the quorum's log (else a lone reader makes
    them, sim/schedule.py)."""

    brokers: int
    weight: float
    read_fraction: float
    clients: str | None
    final_reads: bool = False

    def client_class(self) -> type:
        """The clients class ``clients`` names. Raises ValueError for a workload whose clients
        the data plane runs (``clients`` None)."""
        if self.clients is None:
            raise ValueError("this workload's clients are the data plane's (sim/data_plane.py)")
        module, _, name = self.clients.partition(":")
        return getattr(importlib.import_module(module), name)


#: the simulator's workloads, by workloads/registry.py name
WORKLOADS: dict[str, SimWorkload] = {
    "append": SimWorkload(brokers=0, weight=3, read_fraction=0.1, clients="sim.clients:AppendClients",
                          final_reads=True),
    # the queue workload's polls are half its ops
    "queue": SimWorkload(brokers=3, weight=2, read_fraction=0.5, clients=None),
    # workloads/kv.py: a third each of reads, writes and cas
    "kv": SimWorkload(brokers=0, weight=2, read_fraction=1 / 3, clients="sim.kv_clients:KvClients"),
}


def workload_of(brokers: int) -> str:
    """The workload a fixed configuration with ``brokers`` runs (the first in :data:`WORKLOADS`
    on that many brokers, or on some when ``brokers`` > 0). Raises ValueError when none does."""
    for name, w in WORKLOADS.items():
        if (w.brokers > 0) == (brokers > 0):
            return name
    raise ValueError(f"no simulated workload runs on {brokers} broker(s)")
