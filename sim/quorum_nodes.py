"""Quorum nodes in the simulator: a :class:`kraft.quorum.QuorumCore` rebuilt from its
:class:`sim.disk.SimDisk` at every (re)start, as kraft/runtime/raft.py does from its data dir.

At kraft.version 0 the voters are the static set 1..N (no directory ids). At kraft.version
1 (KIP-853) each disk is formatted with ``--initial-controllers`` (its ``bootstrap`` voter
set, directory ids ``d<id>.<generation>``); a wiped disk is formatted again with
``--no-initial-controllers`` and a fresh directory id, so the node restarts as an observer
until a voter change adds it.
"""
from __future__ import annotations


import random

from kraft.core.record_log import RecordLog
from kraft.core.unsafe import Unsafe
from kraft.quorum import QuorumConfig, QuorumCore
from kraft.rules.voter_set import VoterHistory, VoterNode, VoterSet

from .disk import SimDisk
from .runtime import Runtime, SimNode

#: the quorum timeouts of a real run (kraft/runtime/config.py defaults, ms): exported scenarios replay
#: on real clusters with the same timing
TIMEOUTS = dict(election_timeout_ms=1000, fetch_timeout_ms=2000, request_timeout_ms=2000,
                fetch_max_wait_ms=500, election_backoff_max_ms=1000, retry_backoff_ms=20)


def directory_id(node_id: int, generation: int) -> str:
    """The directory id of node ``node_id``'s disk after ``generation`` wipes."""
    return f"d{node_id}.{generation}"


def voter_node(node_id: int, dir_id: str | None) -> VoterNode:
    """The VoterNode of ``node_id`` (endpoint ``n<id>:9093``)."""
    return VoterNode(node_id, dir_id, f"n{node_id}", 9093)


def initial_voters(ids: list[int], kraft_version: int) -> VoterSet:
    """The bootstrap voter set of ``ids`` (directory ids at kraft.version 1)."""
    return VoterSet(tuple(voter_node(i, directory_id(i, 0) if kraft_version else None) for i in ids))


class QuorumNode(SimNode):
    """A quorum node: ``kraft_version``, ``bootstrap`` (its disk's bootstrap voter set; None:
    formatted as an observer), ``policy`` (kraft.core.unsafe) and ``all_ids`` (the discovery
    targets of an observer)."""

    def __init__(self, node_id: int, disk: SimDisk, kraft_version: int, bootstrap: VoterSet | None,
                 policy: Unsafe, all_ids: tuple[int, ...], fetch_max_records: int = 2000):
        super().__init__(node_id, f"n{node_id}", disk)
        self.kraft_version = kraft_version
        self.bootstrap = bootstrap
        self.policy = policy
        self.all_ids = all_ids
        self.fetch_max_records = fetch_max_records

    def wipe(self) -> None:
        """The disk fails and is formatted again (kraft.version 1: as an observer)."""
        gen = self.disk.generation + 1
        self.disk.wipe(directory_id(self.id, gen) if self.kraft_version else None)
        self.bootstrap = None if self.kraft_version else self.bootstrap

    def build(self, rt: Runtime):
        disk = self.disk
        cfg = QuorumConfig(self.id, disk.directory_id, unsafe=self.policy, fetch_max_records=self.fetch_max_records,
                           bootstrap_servers=tuple(i for i in self.all_ids if i != self.id), **TIMEOUTS)
        history = VoterHistory(self.bootstrap if self.bootstrap is not None else VoterSet(), self.kraft_version)
        rng = random.Random((rt.seed * 1_000_003 + self.id) * 1009 + self.life)
        core = QuorumCore(cfg, RecordLog(list(disk.log(None).records)), history, clock=lambda: rt.now,
                          rng=rng, wall_clock=rt.wall_clock(self))
        return core, core.start(disk.election)


def quorum_nodes(rt: Runtime, voters: int, kraft_version: int, policy: Unsafe,
                 fetch_max_records: int = 2000, node_class: type = QuorumNode) -> list[QuorumNode]:
    """Add and start ``voters`` quorum nodes 1..voters (of ``node_class``, a QuorumNode or a
    subclass); returns them."""
    ids = list(range(1, voters + 1))
    boot = initial_voters(ids, kraft_version)
    out = []
    for i in ids:
        node = node_class(i, SimDisk(directory_id(i, 0) if kraft_version else None), kraft_version,
                          boot, policy, tuple(ids), fetch_max_records)
        rt.add(node)
        out.append(node)
    for node in out:
        rt.start(node.id)
    return out


