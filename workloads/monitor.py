"""Periodic DescribeQuorum sampling of every node (KIP-595, DescribeQuorum), and what it saw.

Each node gets its own sampler with its own process id, so a process never
has two ops in flight. Samples are recorded as ``f: "describe-quorum"``
(invoke value null; ok value the leader's response body; a non-leader's
NOT_LEADER_OR_FOLLOWER is a ``fail`` whose value is the epoch and leader
that node answered with, ``{"LeaderEpoch": E, "LeaderId": L}``, L -1 when
it knows none). They feed the election-safety and epoch checkers and the
availability statistics, and :attr:`QuorumMonitor.view` lets the nemesis aim.
"""
from __future__ import annotations

import asyncio
import dataclasses

from history import outcomes

from .clients import ClientFactory, ClientPool
from .counters import OpTally, Sequence
from .recorder import record
from .topology import Topology


@dataclasses.dataclass
class NodeSeen:
    """One node's newest answer: its ``epoch`` and the ``leader`` id it named (-1: none),
    whether it answered as leader (``leading``), and when (``time`` s, event-loop clock)."""

    epoch: int
    leader: int
    leading: bool
    time: float


@dataclasses.dataclass
class QuorumView:
    """What the monitor has seen, for a nemesis to aim with (never for a checker).

    ``leader``: the node that most recently answered as leader in the
    highest epoch seen so far, or None (also once it stops answering at
    all). ``epoch``: that epoch (-1 before any). ``nodes``: each node's newest :class:`NodeSeen`. ``log_end``: the
    log end offset per node from the leader's last DescribeQuorum
    (CurrentVoters), and ``high_watermark`` its high watermark.
    ``elections``: how many times a new (epoch, leader) pair was seen.
    """

    leader: str | None = None
    epoch: int = -1
    nodes: dict[str, NodeSeen] = dataclasses.field(default_factory=dict)
    log_end: dict[str, int] = dataclasses.field(default_factory=dict)
    high_watermark: int = 0
    elections: int = 0

    def lagging(self, exclude: tuple[str, ...] = ()) -> list[str]:
        """Nodes ordered from the furthest behind to the most up to date (by ``log_end``;
        unknown ones first), leaving out ``exclude``."""
        return sorted((n for n in self.nodes if n not in exclude),
                      key=lambda n: (self.log_end.get(n, -1), n))


class QuorumMonitor:
    """Samples DescribeQuorum on every node every ``interval_ms`` (ms).

    ``leader`` is the newest leader seen, ``(epoch, leader_id)`` or None;
    ``view`` the :class:`QuorumView`; ``tally`` counts sample outcomes.
    """

    def __init__(self, topology: Topology, cluster_id: str, history, pids: Sequence,
                 interval_ms: int = 250, timeout_ms: int = 1000,
                 client_factory: ClientFactory | None = None):
        self.topology, self.cluster_id, self.history, self.pids = topology, cluster_id, history, pids
        self.interval_s = interval_ms / 1000.0
        self.timeout_ms = timeout_ms
        self.client_factory = client_factory
        self.tally = OpTally()
        self.leader: tuple[int, int] | None = None
        self.view = QuorumView()

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
                                   lambda: pool.get(node).describe_quorum(), lambda body: body,
                                   fail_value=_answered)
                if out.type == "ok":
                    self._saw(node, out.result, loop.time())
                elif out.type == "fail" and isinstance(out.error, outcomes.ClientError):
                    self._saw_other(node, out.error, loop.time())
                else:
                    self._unanswered(node)
                if out.type == "info":
                    process = self.pids.next()
                next_at = max(next_at + self.interval_s, loop.time())
                try:
                    await asyncio.wait_for(stop.wait(), max(0.0, next_at - loop.time()))
                except TimeoutError:
                    pass
        finally:
            await pool.close()

    def _saw(self, node: str, body: dict, now: float) -> None:
        epoch, leader = body.get("LeaderEpoch"), body.get("LeaderId")
        if not (isinstance(epoch, int) and isinstance(leader, int) and leader >= 0):
            return
        self.view.nodes[node] = NodeSeen(epoch, leader, True, now)
        if self.leader is None or epoch >= self.leader[0]:
            if self.leader != (epoch, leader):
                self.view.elections += 1
            self.leader = (epoch, leader)
            self.view.leader, self.view.epoch = node, epoch
            hw = body.get("HighWatermark")
            if isinstance(hw, int):
                self.view.high_watermark = hw
            # observers too (KIP-853): a wiped voter replicates as one before it is re-added
            for v in [*(body.get("CurrentVoters") or []), *(body.get("Observers") or [])]:
                name = self.topology.node_for_id(v.get("ReplicaId")) if isinstance(v, dict) else None
                if name is not None and isinstance(v.get("LogEndOffset"), int):
                    self.view.log_end[name] = v["LogEndOffset"]

    def _unanswered(self, node: str) -> None:
        """``node`` did not answer (refused, timed out): if the view had it as leader, the
        view no longer names one (a killed leader leads nothing)."""
        if self.view.leader == node:
            self.view.leader = None

    def _saw_other(self, node: str, err: outcomes.ClientError, now: float) -> None:
        epoch = err.leader_epoch
        if epoch is None:
            self._unanswered(node)
        if isinstance(epoch, int):
            self.view.nodes[node] = NodeSeen(epoch, err.leader_id if err.leader_id is not None else -1,
                                             False, now)
            if self.view.leader == node and epoch >= self.view.epoch:
                self.view.leader = None       # it no longer leads


def _answered(err: outcomes.ClientError) -> dict | None:
    """A non-leader's DescribeQuorum failure as history value: the epoch and leader it named."""
    if err.leader_epoch is None:
        return None
    return {"LeaderEpoch": err.leader_epoch, "LeaderId": err.leader_id if err.leader_id is not None else -1}
