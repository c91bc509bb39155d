"""A tiny deterministic runtime for the quorum cores (kraft/quorum/): a whole cluster in one
process, in virtual time, for tests (no asyncio, no sockets, no files).

Messages are handed over as objects after ``latency_ms``; a cut link drops them and
answers the sender's request with a failure after ``request_timeout_ms``. Each node
has a :class:`SimDisk` that keeps what was written, and keeps durable only what an
fsync (SyncLog) covered, so :meth:`SimCluster.crash` loses the rest (a power loss).
``python -m tests.quorum_sim`` times a 5-voter cluster under appends (events/s).
"""
from __future__ import annotations

import heapq
import random
import sys
import time

from kraft.core.events import (PersistElection, Received, Replied, Reply, Send, SetTimer, StateChanged,
                               SyncDone, SyncLog, TimerFired, TruncateLog, WriteLog)
from kraft.core.record_log import RecordLog
from kraft.core.states import ElectionState, StateKind
from kraft.core.unsafe import SAFE
from kraft.quorum import QuorumConfig, QuorumCore
from kraft.rules.voter_set import VoterHistory, VoterNode, VoterSet


class SimDisk:
    """``records`` written (page cache), ``durable`` how many of them an fsync covered,
    ``election`` the persisted quorum-state."""

    def __init__(self) -> None:
        self.records: list = []
        self.durable = 0
        self.election = ElectionState()
        self.syncs: list[list[int]] = []        # in flight, in order: [end, cap after truncations]

    def crash(self) -> None:
        """A power loss: what was not fsynced is gone (and the fsyncs in flight)."""
        del self.records[self.durable:]
        self.syncs.clear()

    def truncate(self, offset: int) -> None:
        del self.records[offset:]
        self.durable = min(self.durable, offset)
        for s in self.syncs:
            s[1] = min(s[1], offset)

    def synced(self) -> None:
        """The oldest fsync in flight finished."""
        if self.syncs:
            self.durable = max(self.durable, min(self.syncs.pop(0)[1], len(self.records)))


class SimCluster:
    """``n`` voters (ids 1..n, kraft.version 0) in virtual time from ``seed``; ``policy`` is the
    unsafe policy of every node; ``cfg`` overrides QuorumConfig fields."""

    def __init__(self, n: int = 3, seed: int = 0, policy=SAFE, latency_ms: float = 1.0,
                 fsync_ms: float = 0.5, **cfg):
        self.now = 0.0
        self.latency, self.fsync_ms = latency_ms, fsync_ms
        self.rng = random.Random(seed)
        self.seed = seed
        self.ids = list(range(1, n + 1))
        self.voters = VoterSet(tuple(VoterNode(i, None, "sim", 9000 + i) for i in self.ids))
        self.cfg = dict(election_timeout_ms=150, fetch_timeout_ms=300, request_timeout_ms=500,
                        fetch_max_wait_ms=100, election_backoff_max_ms=100, unsafe=policy)
        self.cfg.update(cfg)
        self.disks = {i: SimDisk() for i in self.ids}
        self.cores: dict[int, QuorumCore | None] = {}
        self.cut: set[frozenset] = set()
        self.heap: list = []
        self._seq = 0
        self._tokens = 0
        self.pending: dict = {}            # token -> (node, request, gen, to) of a peer request in flight
        self.replies: dict = {}            # client token -> response
        self.events = 0
        self.transitions: list[tuple[float, int, StateChanged]] = []
        self.lives: dict[int, int] = {i: 0 for i in self.ids}
        for i in self.ids:
            self.start(i)

    # -- nodes -----------------------------------------------------------------------------
    def start(self, i: int) -> QuorumCore:
        """(Re)build node ``i``'s core from what its disk durably holds, and start it."""
        disk = self.disks[i]
        self.lives[i] += 1
        core = QuorumCore(QuorumConfig(i, **self.cfg), RecordLog(disk.records[:disk.durable]),
                          VoterHistory(self.voters, 0), clock=lambda: self.now,
                          rng=random.Random(self.seed * 1000 + i * 10 + self.lives[i]),
                          wall_clock=lambda: int(self.now))
        del disk.records[disk.durable:]
        self.cores[i] = core
        self._run(i, core.start(disk.election))
        return core

    def crash(self, i: int) -> None:
        """Node ``i`` loses power: its core and everything not fsynced are gone."""
        self.cores[i] = None
        self.disks[i].crash()

    def isolate(self, i: int) -> None:
        """Cut node ``i`` off from every other node."""
        self.cut |= {frozenset((i, j)) for j in self.ids if j != i}

    def heal(self) -> None:
        self.cut.clear()

    def leader(self) -> QuorumCore | None:
        """The live leader of the highest epoch whose first record is committed, or None."""
        best = None
        for c in self.cores.values():
            if c is not None and c.leader_epoch_committed() and (best is None or c.epoch > best.epoch):
                best = c
        return best

    # -- the event loop --------------------------------------------------------------------
    def at(self, t: float, node: int, event) -> None:
        self._seq += 1
        heapq.heappush(self.heap, (t, self._seq, node, event))

    def client(self, node: int, msg) -> object:
        """Send client request ``msg`` to ``node`` now; returns the token its reply is filed
        under in :attr:`replies`."""
        self._tokens += 1
        token = ("client", self._tokens)
        self.at(self.now, node, (self.lives[node], Received(token, msg)))
        return token

    def run_for(self, ms: float) -> None:
        self.run_until(self.now + ms)

    def run_until(self, t: float) -> None:
        """Deliver every event due by ``t`` (ms), in time order (ties: in scheduling order)."""
        heap = self.heap
        while heap and heap[0][0] <= t:
            when, _, node, event = heapq.heappop(heap)
            self.now = when
            life, event = event
            core = self.cores.get(node)
            if core is None or life != self.lives[node]:
                continue                       # for a node that crashed since
            if type(event) is _Sync:
                self.disks[node].synced()
                event = SyncDone(event.end)
            self.events += 1
            self._run(node, core.step(event))
        self.now = max(self.now, t)

    def _run(self, i: int, effects: list) -> None:
        disk, life = self.disks[i], self.lives[i]
        for e in effects:
            t = type(e)
            if t is Send:
                self._send(i, e)
            elif t is Reply:
                self._reply(i, e)
            elif t is SetTimer:
                self.at(e.at, i, (life, TimerFired(e.key, e.at)))
            elif t is WriteLog:
                assert e.records[0].offset == len(disk.records), (i, e, len(disk.records))
                disk.records.extend(e.records)
            elif t is SyncLog:
                disk.syncs.append([e.end, e.end])
                self.at(self.now + self.fsync_ms, i, (life, _Sync(e.end)))
            elif t is TruncateLog:
                disk.truncate(e.offset)
            elif t is PersistElection:
                disk.election = e.state
            elif t is StateChanged:
                self.transitions.append((self.now, i, e))

    def _send(self, i: int, e: Send) -> None:
        self._tokens += 1
        token = (i, self._tokens)
        self.pending[token] = (i, e.msg, e.gen, e.to)
        if frozenset((i, e.to)) in self.cut or self.cores.get(e.to) is None:
            self.pending.pop(token)
            self.at(self.now + self.cfg["request_timeout_ms"], i,
                    (self.lives[i], Replied(e.to, e.msg, None, e.gen)))
            return
        self.at(self.now + self.latency, e.to, (self.lives[e.to], Received(token, e.msg)))

    def _reply(self, i: int, e: Reply) -> None:
        if e.token[0] == "client":
            self.replies[e.token] = e.msg
            return
        src, req, gen, to = self.pending.pop(e.token)
        if frozenset((i, src)) in self.cut:
            self.at(self.now + self.cfg["request_timeout_ms"], src, (self.lives[src], Replied(to, req, None, gen)))
            return
        self.at(self.now + self.latency, src, (self.lives[src], Replied(to, req, e.msg, gen)))


class _Sync:
    """An fsync finishing: the sim disk becomes durable up to ``end``, then the core gets
    SyncDone(end)."""

    __slots__ = ("end",)

    def __init__(self, end: int):
        self.end = end


def leader_kinds(cluster: SimCluster) -> dict[int, StateKind]:
    """Each live node's state."""
    return {i: c.state.kind for i, c in cluster.cores.items() if c is not None}


def main(argv: list[str]) -> int:
    """``python -m tests.quorum_sim [EVENTS [INTERVAL_MS]]``: time EVENTS (default 300000)
    events of a 5-voter cluster serving one Append every INTERVAL_MS (default 5) of virtual
    time; prints events/s for the whole loop and for the cores' ``step`` alone."""
    from kraft.quorum.client_messages import AppendRequest
    target = int(argv[0]) if argv else 300_000
    interval = float(argv[1]) if len(argv) > 1 else 5.0
    c = SimCluster(5, seed=1)
    in_core = [0.0]
    for core in c.cores.values():
        step, clock = core.step, time.perf_counter

        def timed(ev, step=step, clock=clock):
            t = clock()
            out = step(ev)
            in_core[0] += clock() - t
            return out
        core.step = timed
    t0 = time.perf_counter()
    i = 0
    while c.events < target:
        c.run_for(interval)
        lead = c.leader()
        if lead is not None:
            i += 1
            c.client(lead.id, AppendRequest(i))
    dt = time.perf_counter() - t0
    acked = sum(1 for r in c.replies.values() if r.error_code == 0)
    print(f"{c.events} events in {dt:.2f} s ({c.now / 1000:.1f} simulated s, {i} appends, {acked} acked, "
          f"{c.events / max(c.now / 1000, 1e-9):,.0f} events per simulated s)")
    print(f"  whole loop: {c.events / dt:,.0f} events/s, {dt / c.events * 1e6:.1f} us/event")
    print(f"  core.step only: {c.events / in_core[0]:,.0f} events/s, {in_core[0] / c.events * 1e6:.1f} us/event")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
