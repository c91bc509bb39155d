"""Quorum nodes in the simulator: a :class:`kraft.quorum.QuorumCore` rebuilt from its
:class:`sim.disk.SimDisk` at every (re)start by the real node's recovery
(kraft/storage/recovery.py), as kraft/runtime/raft.py does from its data dir.

At kraft.version 0 the voters are the static set 1..N (no directory ids). At kraft.version
1 (KIP-853) each disk is formatted with ``--initial-controllers`` (its ``bootstrap`` voter
set, directory ids ``d<id>.<generation>``); a wiped disk is formatted again with
``--no-initial-controllers`` and a fresh directory id, so the node restarts as an observer
until a voter change adds it.
"""
from __future__ import annotations


import random

from kraft.core.unsafe import Unsafe
from kraft.quorum import QuorumConfig
from kraft.rules.voter_set import VoterNode, VoterSet
from kraft.storage.recovery import recover, start_quorum

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
    """A quorum node: ``kraft_version``, ``static_voters`` (its configured voters, those of
    kraft.version 0), ``policy`` (kraft.core.unsafe) and ``all_ids`` (the discovery targets of
    an observer). What it was formatted with (the bootstrap voters, the directory id) is on
    its disk."""

    def __init__(self, node_id: int, disk: SimDisk, kraft_version: int, static_voters: VoterSet,
                 policy: Unsafe, all_ids: tuple[int, ...], fetch_max_records: int = 2000):
        super().__init__(node_id, f"n{node_id}", disk)
        self.kraft_version = kraft_version
        self.static_voters = static_voters
        self.policy = policy
        self.all_ids = all_ids
        self.fetch_max_records = fetch_max_records

    def wipe(self) -> None:
        """The disk fails and is formatted again (kraft.version 1: ``--no-initial-controllers``,
        an observer with a fresh directory id)."""
        gen = self.disk.generation + 1
        if self.kraft_version:
            self.disk.wipe(directory_id(self.id, gen), (self.kraft_version, None))
        else:
            self.disk.wipe(None)

    def build(self, rt: Runtime):
        """Recover from the disk (kraft/storage/recovery.py), carry out the recovery's cut, and
        start the core."""
        disk = self.disk
        recovered = recover(disk.contents(self.static_voters), self.policy)
        disk.recovered(recovered.cut_torn_tail)
        cfg = QuorumConfig(self.id, recovered.directory_id, unsafe=self.policy,
                           fetch_max_records=self.fetch_max_records,
                           bootstrap_servers=tuple(i for i in self.all_ids if i != self.id), **TIMEOUTS)
        rng = random.Random((rt.seed * 1_000_003 + self.id) * 1009 + self.life)
        return start_quorum(recovered, cfg, clock=lambda: rt.now, rng=rng, wall_clock=rt.wall_clock(self))


def quorum_nodes(rt: Runtime, voters: int, kraft_version: int, policy: Unsafe,
                 fetch_max_records: int = 2000, node_class: type = QuorumNode) -> list[QuorumNode]:
    """Add and start ``voters`` quorum nodes 1..voters (of ``node_class``, a QuorumNode or a
    subclass); returns them. At kraft.version 1 each disk is formatted with the bootstrap voter
    set (``--initial-controllers``); at 0 with none (the static voters)."""
    ids = list(range(1, voters + 1))
    boot = initial_voters(ids, kraft_version)
    static = initial_voters(ids, 0)
    out = []
    for i in ids:
        disk = SimDisk(directory_id(i, 0), (kraft_version, boot)) if kraft_version else SimDisk(None)
        node = node_class(i, disk, kraft_version, static, policy, tuple(ids), fetch_max_records)
        rt.add(node)
        out.append(node)
    for node in out:
        rt.start(node.id)
    return out


