"""Tests for checkers/stats.py."""
import pytest

from checkers.stats import check_stats, quantile
from tests.histories.builder import H, data, lc


def test_counts_latency_and_availability():
    h = H()
    h.nemesis("start-kill", {"kind": "leader", "targets": ["n1"]})          # before client ops
    i = h.invoke(0, "describe-quorum", None, node="n1", at_ms=1000)          # t0 = 1.0 s
    h.complete(i, "ok", {"LeaderId": 1, "LeaderEpoch": 1}, at_ms=1010)       # window 0
    i = h.invoke(0, "append", 1, node="n1", at_ms=1020)
    h.complete(i, "ok", {"value": 1, "offset": 1, "epoch": 1}, at_ms=1050)  # 30 ms, window 0
    i = h.invoke(0, "append", 2, node="n1", at_ms=2100)
    h.complete(i, "fail", 2, error="NOT_LEADER_OR_FOLLOWER", at_ms=2110)
    i = h.invoke(0, "describe-quorum", None, node="n2", at_ms=2200)
    h.complete(i, "fail", None, error="NOT_LEADER_OR_FOLLOWER", at_ms=2210)  # window 1: no leader
    i = h.invoke(0, "append", 3, node="n2", at_ms=3100)
    h.complete(i, "ok", {"value": 3, "offset": 2, "epoch": 2}, at_ms=3110)  # 10 ms, window 2
    i = h.invoke(0, "append", 4, node="n2", at_ms=3200)
    h.complete(i, "info", 4, error="timeout", at_ms=4500)                   # window 3 (last op)
    h.nemesis("stop-kill")                                                  # after: not a client op
    r = check_stats(h.ops, None)
    assert r["valid"] is True
    assert r["counts"]["append"] == {"ok": 2, "fail": 1, "info": 1}
    assert r["counts"]["describe-quorum"] == {"ok": 1, "fail": 1, "info": 0}
    assert r["counts"]["start-kill"] == {"ok": 0, "fail": 0, "info": 1}
    assert r["windows"] == 4                            # 1.0 s .. 4.5 s
    assert r["availability"] == pytest.approx(1 / 4)
    assert r["append_availability"] == pytest.approx(2 / 4)
    lat = r["latency_ms"]["append"]
    assert lat["n"] == 2 and lat["p50"] == pytest.approx(10) and lat["max"] == pytest.approx(30)
    assert "start-kill" not in r["latency_ms"]
    assert r["epochs"] == {"max": 1, "leaders": 1}


def test_epochs_count_the_leaders_seen():
    h = H()
    for t, (epoch, leader) in enumerate([(1, 1), (1, 1), (2, 3), (5, 2), (5, 2)]):
        i = h.invoke(t, "describe-quorum", None, node=f"n{leader}", at_ms=100 * t)
        h.complete(i, "ok", {"LeaderId": leader, "LeaderEpoch": epoch}, at_ms=100 * t + 5)
    assert check_stats(h.ops, None)["epochs"] == {"max": 5, "leaders": 3}
    assert check_stats([], None)["epochs"] == {"max": None, "leaders": 0}


def test_no_describe_quorum_and_empty_history():
    h = H()
    h.append(0, 1, offset=1)
    h.read(0, [lc(0, 1, 1), data(1, 1, 1)])
    r = check_stats(h.ops, None)
    assert r["availability"] is None and r["append_availability"] == 1.0 and r["windows"] == 1
    e = check_stats([], None)
    assert e["windows"] == 0 and e["availability"] is None and e["latency_ms"] == {}


def test_quantile_nearest_rank():
    vals = list(range(1, 101))
    assert quantile(vals, 0.5) == 50 and quantile(vals, 0.99) == 99 and quantile(vals, 1.0) == 100
    assert quantile([7], 0.9) == 7 and quantile([], 0.5) is None
