"""Periodic DescribeQuorum sampling of every node (KIP-595, DescribeQuorum).

Each node gets its own sampler with its own process id, so a process never
has two ops in flight. Samples are recorded as ``f: "describe-quorum"``
(invoke value null; ok value the response body; a non-leader's
NOT_LEADER_OR_FOLLOWER is a ``fail``). They feed the election-safety checker
and the availability statistics.
"""
from __future__ import annotations

import asyncio

from .clients import ClientFactory, ClientPool
from .counters import OpTally, Sequence
from .recorder import record
from .topology import Topology


class QuorumMonitor:
    """Samples DescribeQuorum on every node every ``interval_ms`` (ms).

    ``leader`` is the newest leader seen, ``(epoch, leader_id)`` or None;
    ``tally`` counts sample outcomes.
    """

    def __init__(self, topology: Topology, cluster_id: str, history, pids: Sequence,
                 interval_ms: int = 500, timeout_ms: int = 1000,
                 client_factory: ClientFactory | None = None):
        self.topology, self.cluster_id, self.history, self.pids = topology, cluster_id, history, pids
        self.interval_s = interval_ms / 1000.0
        self.timeout_ms = timeout_ms
        self.client_factory = client_factory
        self.tally = OpTally()
        self.leader: tuple[int, int] | None = None

    async def run(self, stop: asyncio.Event) -> None:
        """Sample until ``stop`` is set."""
        await asyncio.gather(*(self._sample_node(n, stop) for n in self.topology.nodes))

    async def _sample_node(self, node: str, stop: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        pool = ClientPool(self.topology, self.cluster_id, self.timeout_ms, self.client_factory)
        process = self.pids.next()
        next_at = loop.time()
        try:
            while not stop.is_set():
                out = await record(self.history, self.tally, process, "describe-quorum", None, node,
                                   lambda: pool.get(node).describe_quorum(), lambda body: body)
                if out.type == "ok":
                    self._saw(out.result)
                elif out.type == "info":
                    process = self.pids.next()
                next_at = max(next_at + self.interval_s, loop.time())
                try:
                    await asyncio.wait_for(stop.wait(), max(0.0, next_at - loop.time()))
                except TimeoutError:
                    pass
        finally:
            await pool.close()

    def _saw(self, body: dict) -> None:
        epoch, leader = body.get("LeaderEpoch"), body.get("LeaderId")
        if isinstance(epoch, int) and isinstance(leader, int) and leader >= 0:
            if self.leader is None or epoch >= self.leader[0]:
                self.leader = (epoch, leader)
