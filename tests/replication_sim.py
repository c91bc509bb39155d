"""A tiny deterministic runtime for the brokers' replication cores (kraft/replication/): three
brokers hosting one partition, in virtual time, with messages handed over after
``latency_ms`` and an fsync taking ``fsync_ms``; the controller's side is this file's
(LeaderAndIsr, AlterPartition accepted at once).

``python -m tests.replication_sim [EVENTS [INTERVAL_MS]]`` times EVENTS (default 300000)
events while the leader takes an acks=-1 Produce every INTERVAL_MS (default 5).
"""
from __future__ import annotations

import heapq
import sys
import time

from kraft.core.events import (CheckpointHighWatermark, ProposeIsr, Received, Replied, Reply, Send, SetTimer,
                               SyncDone, SyncLog, TimerFired, TruncateLog, WriteLog)
from kraft.core.record_log import RecordLog
from kraft.replication import BrokerConfig, BrokerCore
from kraft.replication.messages import IsrAnswer, LeaderAndIsr, ProduceRequest

KEY = ("t", 0)


class BrokerSim:
    """Brokers 1..3 with partition ("t", 0), led by broker 1, ISR all three, min.insync 2."""

    def __init__(self, latency_ms: float = 1.0, fsync_ms: float = 0.5):
        self.now, self.latency, self.fsync_ms = 0.0, latency_ms, fsync_ms
        self.heap: list = []
        self._seq = 0
        self.events = 0
        self.pending: dict = {}
        self.replies: dict = {}
        self.partition_epoch = 0
        self.isr = (1, 2, 3)
        self.cores = {}
        for b in (1, 2, 3):
            core = BrokerCore(BrokerConfig(b, replica_lag_time_max_ms=1000), clock=lambda: self.now)
            core.add_partition(KEY, RecordLog(), 0)
            self.cores[b] = core
        self._announce()

    def _announce(self) -> None:
        for b in self.cores:
            self.at(self.now, b, LeaderAndIsr(KEY, 1, 1, self.partition_epoch, self.isr, (1, 2, 3), 2))

    def at(self, t: float, node: int, event) -> None:
        self._seq += 1
        heapq.heappush(self.heap, (t, self._seq, node, event))

    def run_until(self, t: float) -> None:
        while self.heap and self.heap[0][0] <= t:
            self.now, _, node, event = heapq.heappop(self.heap)
            self.events += 1
            self._run(node, self.cores[node].step(event))
        self.now = t

    def _run(self, b: int, effects: list) -> None:
        for e in effects:
            t = type(e)
            if t is Send:
                self._seq += 1
                token = (b, self._seq)
                self.pending[token] = (b, e)
                self.at(self.now + self.latency, e.to, Received(token, e.msg))
            elif t is Reply:
                if e.token in self.pending:
                    src, send = self.pending.pop(e.token)
                    self.at(self.now + self.latency, src, Replied(send.to, send.msg, e.msg, send.gen))
                else:
                    self.replies[e.token] = e.msg
            elif t is SetTimer:
                self.at(e.at, b, TimerFired(e.key, e.at))
            elif t is SyncLog:
                self.at(self.now + self.fsync_ms, b, SyncDone(e.end, e.log))
            elif t is ProposeIsr:                  # the controller accepts at once
                self.partition_epoch += 1
                self.isr = e.isr
                self.at(self.now + self.latency, b, IsrAnswer(e.log, e.isr, e.partition_epoch, 0))
                self._announce()
            elif t not in (WriteLog, TruncateLog, CheckpointHighWatermark):
                raise AssertionError(f"unexpected effect {e!r}")


def main(argv: list[str]) -> int:
    target = int(argv[0]) if argv else 300_000
    interval = float(argv[1]) if len(argv) > 1 else 5.0
    sim = BrokerSim()
    in_core = [0.0]
    for core in sim.cores.values():
        def timed(ev, step=core.step, clock=time.perf_counter):
            t = clock()
            out = step(ev)
            in_core[0] += clock() - t
            return out
        core.step = timed
    t0, i = time.perf_counter(), 0
    while sim.events < target:
        sim.run_until(sim.now + interval)
        i += 1
        sim.at(sim.now, 1, Received(("client", i), ProduceRequest(KEY, -1, i)))
    dt = time.perf_counter() - t0
    acked = sum(1 for r in sim.replies.values() if r.error_code == 0)
    print(f"{sim.events} events in {dt:.2f} s ({sim.now / 1000:.1f} simulated s, {i} produces, {acked} acked, "
          f"{sim.events / (sim.now / 1000):,.0f} events per simulated s)")
    print(f"  whole loop: {sim.events / dt:,.0f} events/s, {dt / sim.events * 1e6:.1f} us/event")
    print(f"  core.step only: {sim.events / in_core[0]:,.0f} events/s, {in_core[0] / sim.events * 1e6:.1f} us/event")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
