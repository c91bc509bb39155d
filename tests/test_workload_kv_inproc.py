"""The kv workload against a real in-process kraft quorum on loopback (no Docker).

The leader crashes mid-run and comes back, or is cut off from the majority;
the recorded history must be linearizable per key, and with the
``no-read-index`` switch it must not be. Verdicts come from the run's
checker (``checkers.registry.check_kv_linearizability``).
"""
from __future__ import annotations

import asyncio

from checkers.fold import CheckContext
from checkers.registry import check_kv_linearizability
from history import HistoryWriter, pair_ops, read_history
from tests.kraft_inproc import CLUSTER_ID, Partition, Running, loopback_cluster, wait_for_leader
from workloads.kv import CLIENT_FS, KvOptions, KvWorkload
from workloads.topology import Topology


def hist(*ops):
    """ops: (process, f, invoke value, start, end, completion type, completion value/error)."""
    events = []
    for p, f, value, t0, t1, typ, out in ops:
        events.append({"time": t0, "type": "invoke", "process": p, "f": f, "value": value})
        if t1 is not None:
            comp = {"time": t1, "type": typ, "process": p, "f": f, "value": value}
            if typ == "ok":
                comp["value"] = out
            else:
                comp["error"] = out
            events.append(comp)
    events.sort(key=lambda e: e["time"])
    for i, e in enumerate(events):
        e["index"] = i
    return events


async def run_kv(db, nodes, path, seed: int, during, **options) -> None:
    """Run the kv workload against the loopback cluster, into ``path``, while
    ``during()`` (a coroutine function) does its faults; ``options``: KvOptions."""
    hist = HistoryWriter(path)
    wl = KvWorkload(Topology.from_db(db, nodes), CLUSTER_ID, hist, seed,
                    KvOptions(timeout_ms=800, monitor_interval_ms=200, monitor_timeout_ms=300, **options))
    stop = asyncio.Event()
    task = asyncio.create_task(wl.run(stop))
    await during()
    stop.set()
    await task
    hist.close()


def nonlinearizable_keys(history, out_dir=None) -> list:
    """The key the run's checker found not linearizable (it stops at the first), or []."""
    r = check_kv_linearizability(history, CheckContext(run_dir=out_dir), timeout_s=60)
    assert r["valid"] in (True, False), r
    return r["illegal_partitions"]


def test_the_checker_judges_kv_histories_by_key():
    w1 = (0, "write", ["a", 1], 0, 10, "ok", ["a", 1])
    # a read after a completed write must see it
    assert nonlinearizable_keys(hist(w1, (1, "read", ["a", None], 20, 30, "ok", ["a", None]))) == ["a"]
    assert nonlinearizable_keys(hist(w1, (1, "read", ["a", None], 20, 30, "ok", ["a", 1]))) == []
    # a read concurrent with the write may see either
    assert nonlinearizable_keys(hist(w1, (1, "read", ["a", None], 5, 30, "ok", ["a", None]))) == []
    # a timed-out write may take effect at any time later, or never
    w_info = (0, "write", ["a", 2], 0, 10, "info", "timeout")
    r = lambda t, v: (t, "read", ["a", None], t * 10, t * 10 + 5, "ok", ["a", v])
    assert nonlinearizable_keys(hist(w_info, r(2, None), r(3, 2), r(4, 2))) == []
    assert nonlinearizable_keys(hist(w_info, r(2, 2), r(3, None))) == ["a"]
    # a cas-mismatch did not happen; a successful cas needs the old value
    cas_fail = (1, "cas", ["a", [1, 3]], 20, 30, "fail", "cas-mismatch")
    assert nonlinearizable_keys(hist(w1, cas_fail, r(4, 1))) == []
    cas_ok = (1, "cas", ["a", [2, 3]], 20, 30, "ok", ["a", [2, 3]])
    assert nonlinearizable_keys(hist(w1, cas_ok)) == ["a"]
    # keys are independent
    assert nonlinearizable_keys(hist(w1, (1, "read", ["b", None], 20, 30, "ok", ["b", None]))) == []


def test_kv_workload_across_a_leader_crash_is_linearizable(tmp_path):
    path = tmp_path / "history.jsonl"

    async def main():
        async with loopback_cluster(tmp_path / "data", 3) as (running, db, nodes):
            first = await wait_for_leader(list(running.values()))
            name = f"n{first.cfg.node_id}"

            async def crash_and_restart():
                await asyncio.sleep(0.8)
                await first.crash()
                await asyncio.sleep(1.2)
                running[name] = await Running(first.cfg).start()
                await asyncio.sleep(0.5)

            await run_kv(db, nodes, path, 11, crash_and_restart, concurrency=4, rate=80, keys=3)
            return name

    first = asyncio.run(main())
    history = read_history(path)
    pairs = [(i, c) for i, c in pair_ops(history) if i["f"] in CLIENT_FS]
    oks = [c for _, c in pairs if c is not None and c["type"] == "ok"]
    assert len(oks) > 50
    assert {c["f"] for c in oks} == {"read", "write", "cas"}
    assert {c["node"] for c in oks if c["f"] != "read"} - {first}, "workers followed the new leader"
    assert any(c["value"][1] is not None for c in oks if c["f"] == "read")
    assert nonlinearizable_keys(history, tmp_path) == []


def run_with_isolated_leader(tmp_path, unsafe) -> list[dict]:
    """The kv workload while the first leader is cut off from the other voters
    (check quorum off: it goes on believing it leads). Returns the history."""
    path = tmp_path / "history.jsonl"

    async def main():
        part = Partition()
        async with loopback_cluster(tmp_path / "data", 3, part, check_quorum=False,
                                    unsafe=frozenset(unsafe)) as (running, db, nodes):
            first = await wait_for_leader(list(running.values()))

            async def isolate_leader():
                await asyncio.sleep(0.4)
                part.isolate(first.node.id, [r.node.id for r in running.values() if r is not first])
                await asyncio.sleep(1.4)

            await run_kv(db, nodes, path, 5, isolate_leader, concurrency=6, rate=150, keys=2)

    asyncio.run(main())
    return read_history(path)


def test_an_isolated_leader_serves_no_stale_read(tmp_path):
    history = run_with_isolated_leader(tmp_path, ())
    assert nonlinearizable_keys(history, tmp_path) == []


def test_without_read_index_the_workload_records_stale_reads(tmp_path):
    history = run_with_isolated_leader(tmp_path, {"no-read-index"})
    assert nonlinearizable_keys(history, tmp_path) != []
