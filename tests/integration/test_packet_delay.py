"""Packet delay on a real 3-node quorum. Where the kernel has no netem (this project's machines
and CI), the nfqueue shaper (nemesis/nfqueue_shaper.py) delays the packets: the start ops say
``"shaper": "nfqueue"``, each stop carries every shaper's final counts (printed as it exits),
client latency is measurably higher inside the faults where every link is delayed than
outside, the run is valid, and nothing is left: no shaper, no NFQUEUE rule, no pid file in
the nodes (kept for the look, then removed), no container or network afterwards."""
from __future__ import annotations

import json
import statistics

import pytest

from clusters.teardown import teardown_run
from history import NEMESIS, read_history
from history.pairing import pair_ops
from tests.integration.conftest import harness_run_id, run_labelled

pytestmark = pytest.mark.docker

SUBNET = "10.73.0.0/24"
#: a seed whose schedule delays every link (targets: all three nodes) for several seconds
SEED = 11
NODES = ["n1", "n2", "n3"]
#: sh, in a node: anything the packet faults may have left (prints nothing when clean)
LEFTOVERS = ("pgrep -fa '[k]c-shaper' ; iptables -w -S | grep -i nfqueue ; "
             "ls /tmp/ | grep 'shaper-.*[.]pid' ; true")


def fault_windows(history: list[dict]) -> list[tuple[float, float, dict]]:
    """(start s, stop s, start value) of each packet fault: from its start's info to its
    stop's invoke (the time the shaping surely held)."""
    out, open_ = [], {}
    for op in history:
        if op["process"] != NEMESIS:
            continue
        t = op["time"] / 1e9
        if op["f"] == "start-packet" and op["type"] == "info" and "error" not in op:
            open_[(op["value"] or {}).get("slot")] = (t, op["value"])
        elif op["f"] == "stop-packet" and op["type"] == "invoke":
            started = open_.pop((op["value"] or {}).get("slot"), None)
            if started:
                out.append((started[0], t, started[1]))
    end = history[-1]["time"] / 1e9
    return out + [(t, end, v) for t, v in open_.values()]


@pytest.mark.slow      # about 35 s; tests/test_nemesis_shaper.py and tests/test_nemesis_packet.py test the shaping without a run
def test_packet_delay_is_shaped_and_slows_clients(engine, kraft_chaos_run, tmp_path):
    store = tmp_path / "store"
    try:
        results, run_dir = kraft_chaos_run(nodes=3, time_limit=22, nemesis=["packet:delay"],
                                           nemesis_mode="overlap", nemesis_interval=2, nemesis_duration=6,
                                           concurrency=5, rate=50, subnet=SUBNET, seed=SEED,
                                           store=str(store), keep_cluster=True)
        containers, _ = run_labelled(engine, harness_run_id(run_dir, SEED))
        assert len(containers) == 3
        left = {}
        for c in containers:
            code, out = c.exec_run(["sh", "-c", LEFTOVERS])
            left[c.name] = out.decode().strip()
    finally:
        for d in store.glob("*/2*"):        # the kept cluster (and any run that failed half-way)
            teardown_run(engine, harness_run_id(d, SEED))
    assert left == {c: "" for c in left}, left
    assert run_labelled(engine, harness_run_id(run_dir, SEED)) == ([], [])
    assert results["valid"] is True, json.dumps(results["anomalies"])

    history = read_history(run_dir / "history.jsonl")
    windows = fault_windows(history)
    assert windows
    starts = [v for _a, _b, v in windows]
    for v in starts:
        assert v["kind"] == "delay" and 50 <= v["delay_ms"] <= 300 and v["jitter_ms"] == v["delay_ms"] // 2
        assert v["loss_pct"] == v["duplicate_pct"] == v["reorder_pct"] == 0
    netemless = [v for v in starts if v.get("netem") is False]
    assert netemless in ([], starts), starts          # the kernel has netem or it has not
    if netemless:
        assert all(v["shaper"] == "nfqueue" and "shaper_error" not in v for v in starts), starts
        stops = [op["value"] for op in history if op["process"] == NEMESIS and op["type"] == "info"
                 and op["f"] == "stop-packet" and op["value"]["targets"]]
        assert stops
        for v in stops:     # every shaper printed its counts as it exited, having dropped nothing
            assert set(v["shaped"]) == set(v["targets"]), v
            for counts in v["shaped"].values():
                assert counts["packets"] == counts["accepted"] and counts["dropped"] == 0, v
                assert counts["errors"] == 0, v
        assert sum(c["delayed"] for v in stops for c in v["shaped"].values()) > 20

    # latency of ok appends invoked while every link was delayed, against those outside faults
    every_link = [(a, b) for a, b, v in windows if sorted(v["targets"]) == NODES]
    assert sum(b - a for a, b in every_link) >= 3, (f"seed {SEED} no longer delays every link for 3 s: "
                                                    f"pick another", windows)
    inside, outside = [], []
    for inv, done in pair_ops(history):
        if inv["f"] != "append" or done is None or done["type"] != "ok":
            continue
        t, latency = inv["time"] / 1e9, (done["time"] - inv["time"]) / 1e6
        if any(a <= t <= b for a, b in every_link):
            inside.append(latency)
        elif not any(a - 0.5 <= t <= b + 1 for a, b, _v in windows):
            outside.append(latency)
    assert len(inside) >= 10 and len(outside) >= 50, (len(inside), len(outside))
    slow, fast = statistics.median(inside), statistics.median(outside)
    assert slow > 3 * fast and slow > fast + 40, (slow, fast)       # ms
