"""Roaming clients (workloads/worker.py): every op to a random node, no hint following; and
their own pace in ClientWorkload.client_generator."""
from __future__ import annotations

import asyncio
import collections
import random

import pytest

from generator import Context, Wait
from history import HistoryWriter, read_history
from history import outcomes
from workloads.append import AppendClient, AppendOptions, AppendWorkload
from workloads.counters import Sequence
from workloads.kv import KvOptions, KvWorkload

from .nemesis_fakes import FakeHistory
from .workload_fakes import NODES, topology

LEADER = "n2"


class Quorum:
    """A toy quorum: ``LEADER`` appends; other nodes refuse with a hint to it."""

    def __init__(self):
        self.log, self.sent = [], []

    def factory(self, host, port, cluster_id, timeout_ms):
        return FakeClient(self, host.split(".")[-1])


class FakeClient:
    def __init__(self, q: Quorum, node: str):
        self.q, self.node = q, node

    def _check(self, what):
        self.q.sent.append((what, self.node))
        if self.node != LEADER:
            raise outcomes.DefiniteError("NOT_LEADER_OR_FOLLOWER", "", int(LEADER[1:]), 4)

    async def append(self, value):
        self._check("append")
        self.q.log.append(value)
        return len(self.q.log) - 1, 4

    async def put(self, key, value):
        self._check("put")
        self.q.log.append([key, value])
        return {"offset": len(self.q.log) - 1, "epoch": 4}

    async def read(self, from_offset=0, max_records=None, linearizable=True):
        self._check("read")
        return {"high_watermark": len(self.q.log), "records": []}

    async def describe_quorum(self):
        self._check("describe-quorum")
        return {"LeaderId": int(LEADER[1:]), "LeaderEpoch": 4, "HighWatermark": len(self.q.log),
                "CurrentVoters": [], "Observers": []}

    async def close(self):
        pass


def workload(cls=AppendWorkload, opts_cls=AppendOptions, history=None, seed=3, **opts):
    q = Quorum()
    wl = cls(topology(), "cid", history or FakeHistory(), seed, opts_cls(**opts), Sequence(0), q.factory)
    return wl, q


async def send_appends(w: AppendClient, n: int) -> list[str]:
    outs = []
    for v in range(n):
        out = await w.invoke({"f": "append", "value": v}, process=0)
        outs.append(out.op["node"] if "node" in out.op else None)
    return outs


def test_workers_the_last_fraction_roam():
    wl, _ = workload(concurrency=10, roaming_clients=0.25)
    ws = wl.workers()
    assert wl.roaming_threads() == 2
    assert [i for i, w in ws.items() if w.roaming] == [8, 9]
    assert all(isinstance(w, AppendClient) and w.index == i for i, w in ws.items())
    wl0, _ = workload(concurrency=3, roaming_clients=0.0)
    assert not any(w.roaming for w in wl0.workers().values())
    wl1, _ = workload(concurrency=3, roaming_clients=1.0)
    assert all(w.roaming for w in wl1.workers().values())


def test_a_roaming_worker_sends_to_random_nodes_and_ignores_hints():
    wl, q = workload(concurrency=2, roaming_clients=0.5)
    w = wl.workers()[1]
    assert w.roaming
    target = w.target
    nodes = asyncio.run(send_appends(w, 60))
    counts = collections.Counter(nodes)
    assert set(counts) == set(NODES) and min(counts.values()) >= 10
    assert w.target == target                   # the hints it got changed nothing
    # after a refusal with a hint it still goes elsewhere, not only to the leader
    after_fail = [b for a, b in zip(nodes, nodes[1:]) if a != LEADER]
    assert set(after_fail) == set(NODES)


def test_a_plain_worker_follows_the_hint_and_stays_with_the_leader():
    wl, q = workload(concurrency=2, roaming_clients=0.5)
    w = wl.workers()[0]
    assert not w.roaming
    nodes = asyncio.run(send_appends(w, 20))
    first_leader = nodes.index(LEADER)
    assert first_leader <= 1 and nodes[first_leader:] == [LEADER] * (20 - first_leader)


def test_roaming_reads_go_anywhere_whatever_read_any_node_says():
    wl, q = workload(concurrency=1, roaming_clients=1.0, read_any_node=0.0)
    w = wl.workers()[0]

    async def reads():
        for _ in range(40):
            await w.invoke({"f": "read", "value": {"from": 0, "linearizable": True, "final": False}}, 0)
    asyncio.run(reads())
    assert {n for what, n in q.sent if what == "read"} == set(NODES)


def test_kv_roaming_worker_too():
    wl, q = workload(KvWorkload, KvOptions, concurrency=2, roaming_clients=0.5)
    w = wl.workers()[1]

    async def writes():
        for v in range(40):
            await w.invoke({"f": "write", "value": ["k0", v % 5]}, 0)
    asyncio.run(writes())
    assert {n for what, n in q.sent} == set(NODES)


def pace(gen, threads, seconds, busy=()):
    """Drive ``gen`` on a fake clock: every thread not in ``busy`` asks whenever it may (ops
    complete at once). Returns the op count per thread."""
    counts = collections.Counter()
    rngs = {t: random.Random(f"t{t}") for t in threads}
    t = 0.0
    while t < seconds:
        waits = []
        for th in threads:
            if th in busy:
                continue
            a = gen.op(Context(t, th, th, rngs[th], None))
            while isinstance(a, dict):
                counts[th] += 1
                a = gen.op(Context(t, th, th, rngs[th], None))
            if isinstance(a, Wait):
                waits.append(a.until)
        if not waits:
            break
        t = min(waits)
    return counts


def test_client_generator_paces_roaming_threads_apart():
    wl, _ = workload(concurrency=10, roaming_clients=0.2, rate=50)
    threads = list(range(10))
    counts = pace(wl.client_generator(), threads, 200)
    plain, roam = sum(counts[t] for t in range(8)), counts[8] + counts[9]
    assert 40 * 200 * 0.9 < plain < 40 * 200 * 1.1           # 8/10 of the rate
    assert 10 * 200 * 0.85 < roam < 10 * 200 * 1.15          # 2/10 of the rate
    # with the plain threads all busy, the roaming ones still get only their share
    alone = pace(wl.client_generator(), threads, 200, busy=range(8))
    assert 10 * 200 * 0.85 < alone[8] + alone[9] < 10 * 200 * 1.15
    assert "nemesis" not in counts
    assert wl.client_generator().op(Context(0, "nemesis", "nemesis", random.Random(0), None)) is None


@pytest.mark.parametrize("fraction", [0.0, 1.0])
def test_client_generator_with_none_or_all_roaming_gives_the_whole_rate(fraction):
    wl, _ = workload(concurrency=4, roaming_clients=fraction, rate=20)
    counts = pace(wl.client_generator(), list(range(4)), 200)
    assert 20 * 200 * 0.9 < sum(counts.values()) < 20 * 200 * 1.1


def test_a_run_with_only_roaming_clients(tmp_path):
    path = tmp_path / "history.jsonl"
    hist = HistoryWriter(path)
    wl, q = workload(history=hist, concurrency=3, roaming_clients=1.0, rate=300, read_fraction=0.0,
                     monitor_interval_ms=50)

    async def main():
        stop = asyncio.Event()
        task = asyncio.create_task(wl.run(stop))
        await asyncio.sleep(0.4)
        stop.set()
        await asyncio.wait_for(task, 10)
    asyncio.run(main())
    hist.close()
    appends = [op for op in read_history(path) if op["f"] == "append" and op["type"] != "invoke"]
    by_node = collections.Counter((op["node"], op["type"]) for op in appends)
    assert len(appends) > 30
    assert {n for n, _ in by_node} == set(NODES)
    assert {t for (n, t) in by_node if n == LEADER} == {"ok"}
    assert all(t == "fail" for (n, t) in by_node if n != LEADER)
