"""How a client thread sends its ops: a leader belief, a client per node, routing.

Shared by the workloads (``append``, ``kv``). The generator decides which op
comes next (generator/); a :class:`ClientWorker` decides where it goes and
records it. A worker sends one op at a time (so one client per node
suffices). By default it sends to the node it believes leads: after an op
that did not succeed it follows the ``leader_id`` hint of a DefiniteError,
or picks a random other node. A worker made ``roaming`` sends every op to a
random node and never follows hints, as real clients with stale metadata do,
so deposed and isolated leaders are asked too.
"""
from __future__ import annotations

import random

from .recorder import Outcome


def pick_other(rng: random.Random, nodes: list[str], current: str | None) -> str:
    """A random node, other than ``current`` when there is a choice."""
    choices = [n for n in nodes if n != current] or nodes
    return rng.choice(choices)


class ClientWorker:
    """Base class of a workload's client (Jepsen's client: how to send an op).

    ``wl`` is the workload: it provides ``name``, ``seed``, ``topology``,
    ``history``, ``tally`` and ``pool()`` (a fresh
    :class:`workloads.clients.ClientPool`). ``index`` is the thread; the
    workload's ``name`` and ``index`` seed the worker's own
    ``Random(f"{seed}:{name}:worker:{index}")``. ``roaming``: see the module
    docstring. Subclasses map each ``f`` to a coroutine method in ``ops``
    (``{f: method name}``), each taking ``(op, process)`` and returning an
    :class:`~workloads.recorder.Outcome`.
    """

    ops: dict[str, str] = {}

    def __init__(self, wl, index: int, roaming: bool = False):
        self.wl, self.index, self.roaming = wl, index, roaming
        self.rng = random.Random(f"{wl.seed}:{wl.name}:worker:{index}")
        self.nodes = list(wl.topology.nodes)
        self.target = self.rng.choice(self.nodes)
        self.clients = wl.pool()

    async def invoke(self, op: dict, process: int) -> Outcome:
        """Send ``op`` (``f`` one of :attr:`ops`) as ``process``; record it; return its outcome.

        Raises ValueError for an ``f`` this workload does not have.
        """
        name = self.ops.get(op.get("f"))
        if name is None:
            raise ValueError(f"{self.wl.name} workload has no op {op.get('f')!r}: "
                             f"choose from {', '.join(self.ops)}")
        return await getattr(self, name)(op, process)

    def node_for(self, anywhere: bool = False) -> str:
        """Where the next op goes: a random node when roaming or ``anywhere``, else the believed leader."""
        if self.roaming or anywhere:
            return self.rng.choice(self.nodes)
        return self.target

    def after(self, out: Outcome, follow: bool = True) -> None:
        """With ``follow`` (and not roaming), update the leader belief after an op that did
        not succeed: the hinted leader, or a random other node."""
        if out.type == "ok" or not follow or self.roaming:
            return
        hinted = self.wl.topology.node_for_id(out.leader_hint)
        self.target = hinted if hinted is not None else pick_other(self.rng, self.nodes, self.target)

    async def close(self) -> None:
        """Close this worker's connections."""
        await self.clients.close()
