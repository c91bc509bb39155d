"""The append workload against a real in-process kraft quorum on loopback (no Docker).

Three real nodes; the leader crashes mid-run and restarts before the final reads. The recorded history must pass
the log-safety checkers, and the workload must have followed the new leader.
"""
from __future__ import annotations

import asyncio

from checkers.log_safety import check_all
from history import HistoryWriter, read_history
from harness.run.leader import find_leader_async, wait_for_catch_up
from tests.kraft_inproc import CLUSTER_ID, Running, loopback_cluster, wait_for_leader
from workloads.append import AppendOptions, AppendWorkload, final_reads
from workloads.topology import Topology


def test_workload_survives_a_leader_crash_and_the_history_checks_out(tmp_path):
    path = tmp_path / "history.jsonl"

    async def main():
        async with loopback_cluster(tmp_path / "data", 3) as (running, db, nodes):
            first = await wait_for_leader(list(running.values()))
            first_name = f"n{first.cfg.node_id}"
            assert await find_leader_async(db, nodes, CLUSTER_ID) == first_name
            hist = HistoryWriter(path)
            wl = AppendWorkload(Topology.from_db(db, nodes), CLUSTER_ID, hist, 11,
                                AppendOptions(concurrency=4, rate=60, timeout_ms=800,
                                              monitor_interval_ms=200, monitor_timeout_ms=300))
            stop = asyncio.Event()
            task = asyncio.create_task(wl.run(stop))
            await asyncio.sleep(1.5)
            await first.crash()
            await asyncio.sleep(2.5)
            stop.set()
            await task
            alive = [n for n in nodes if n != first_name]
            leader = await find_leader_async(db, alive, CLUSTER_ID)
            assert leader is not None and leader != first_name
            # the crashed voter lags, so the quorum is not caught up until it restarts
            assert not await wait_for_catch_up(db, nodes, CLUSTER_ID, 0.5, poll_s=0.1)
            running[first_name] = await Running(first.cfg).start()
            assert await wait_for_catch_up(db, nodes, CLUSTER_ID, 10)
            leader = await find_leader_async(db, nodes, CLUSTER_ID)
            out = await final_reads(wl, leader, timeout_s=5, node_timeout_s=1, retry_delay_s=0.1)
            hist.close()
            return first_name, leader, out

    first, second, out = asyncio.run(main())
    history = read_history(path)
    assert out["linearizable"] is not None
    assert len(out["nodes"]) == 3 and all(v is not None for v in out["nodes"].values())
    result = check_all(history, None)
    assert all(n == 0 for n in result["anomaly_counts"].values()), result["anomaly_counts"]
    assert result["checkers"]["lost-write"]["valid"] is True
    oks = [op for op in history if op["f"] == "append" and op["type"] == "ok"]
    assert {op["node"] for op in oks} >= {first, second}     # workers followed the new leader
    assert len(oks) > 60
