"""Tests for checkers/log_safety.py: combined verdict, and speed on large histories."""
import json

from checkers.log_safety import CHECKERS, check_all, combine
from history import HistoryWriter, read_history
from history.node_data import NodeData
from tests.histories.builder import clean_run, data


def test_combine():
    assert combine([True, True]) is True
    assert combine([True, "unknown"]) == "unknown"
    assert combine(["unknown", False, True]) is False
    assert combine([]) is True


def test_clean_run_with_nodes_is_valid_and_serialisable(tmp_path):
    h, log = clean_run(30)
    nodes = {n: NodeData(n, [tuple(r) for r in log], None) for n in ("n1", "n2", "n3")}
    r = check_all(h.ops, nodes)
    assert r["valid"] is True, {k: v for k, v in r["checkers"].items() if v["valid"] is not True}
    assert set(r["checkers"]) == set(CHECKERS) and set(r["anomaly_counts"]) == set(CHECKERS)
    assert all(n == 0 for n in r["anomaly_counts"].values())
    assert r["stats"]["counts"]["append"]["ok"] > 0
    json.dumps(r)


def test_unknown_without_nodes_false_with_a_lost_write():
    h, log = clean_run(10)
    assert check_all(h.ops, None)["valid"] == "unknown"      # divergence cannot be judged
    # corrupt the final linearizable read: drop the last acked value
    final = [o for o in h.ops if o["type"] == "ok" and o["f"] == "read"
             and o["value"]["final"] and o["value"]["linearizable"]][-1]
    last = final["value"]["records"][-1]
    final["value"]["records"][-1] = data(last[0], last[1], 5)
    r = check_all(h.ops, None)
    assert r["valid"] is False
    assert r["anomaly_counts"]["lost-write"] == 1 and r["anomaly_counts"]["phantom"] == 1
    assert r["anomaly_counts"]["inconsistent-offsets"] == 1


def test_large_history_round_trips_and_checks_clean(tmp_path):
    h, log = clean_run(12_000, read_window=20)
    assert len(h.ops) > 30_000
    path = tmp_path / "history.jsonl"
    with HistoryWriter(path) as w:                       # round-trip through the file format
        for op in h.ops:
            extra = {k: v for k, v in op.items()
                     if k not in ("index", "time", "type", "process", "f", "value", "node", "error")}
            w.append(op["type"], op["process"], op["f"], op["value"], node=op.get("node"),
                     error=op.get("error"), **extra)
    ops = read_history(path)
    assert len(ops) == len(h.ops) and [op["f"] for op in ops] == [op["f"] for op in h.ops]
    nodes = {n: NodeData(n, [tuple(r) for r in log], len(log)) for n in ("n1", "n2", "n3")}
    r = check_all(ops, nodes)
    assert r["valid"] is True, r["anomaly_counts"]
