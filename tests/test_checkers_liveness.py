"""The liveness checker (checkers/liveness.py) on frozen small histories and hand-made ones:
a stuck span is judged only while an able majority (unharmed, uncut) existed, against a
bound of election timeouts from the run's config."""
from pathlib import Path

from checkers.fold import CheckContext
from checkers.liveness import Liveness, able_majority, bound_ns
from checkers.fault_windows import fault_windows
from checkers.registry import check_all_folds
from history import iter_history

HISTORIES = Path(__file__).parent / "histories"
S = 1_000_000_000


def judge(ops, config=None) -> dict:
    c = Liveness(CheckContext(None, config or {}))
    for op in ops:
        c.feed(op)
    return c.result(None)


def test_a_frozen_history_that_recovers_is_valid():
    # 3 voters; the leader n1 is killed from 5 s to 8 s, n2 leads from 7 s; writes resume
    r = judge(iter_history(HISTORIES / "liveness-valid.jsonl"))
    assert r["valid"] is True and r["anomalies"] == []
    assert r["voters"] == ["n1", "n2", "n3"] and r["bound_s"] == 10.0
    assert r["able_s"] == 30.0                   # n2 and n3 were an able majority throughout
    assert r["final_heal_ns"] == 8 * S
    assert 0 < r["heal_to_leader_s"] < 1 and 0 < r["heal_to_write_s"] < 1
    assert [x["final_heal_ns"] for x in r["recoveries"]] == [8 * S]
    assert r["slowest_recovery_s"] == r["heal_to_write_s"]


def test_a_frozen_history_stuck_with_an_able_majority_is_invalid():
    # the same, but no one leads and nothing commits from 4.5 s to 25 s (epochs keep climbing)
    r = judge(iter_history(HISTORIES / "liveness-stuck.jsonl"))
    assert r["valid"] is False and len(r["anomalies"]) == 1
    a = r["anomalies"][0]
    assert 20 < a["stuck_s"] < 21 and a["to_ns"] > 25 * S - 1
    assert a["until_op"] is not None and a["after_op"] is not None
    ops = list(iter_history(HISTORIES / "liveness-stuck.jsonl"))
    assert ops[a["op"]]["f"] == "describe-quorum"          # the first sample past the bound
    assert a["from_ns"] + 10 * S <= ops[a["op"]]["time"] < a["from_ns"] + 11 * S
    assert len(a["able"]) >= 2
    assert r["longest_stuck_s"] == a["stuck_s"]
    assert 17 < r["heal_to_leader_s"] < 18      # the final heal (8 s) to the first leader seen


def test_the_bound_is_a_multiple_of_the_runs_election_timeout():
    stuck = list(iter_history(HISTORIES / "liveness-stuck.jsonl"))
    assert bound_ns(CheckContext(None, {})) == 10 * S
    assert bound_ns(CheckContext(None, {"election_timeout_ms": 3000})) == 30 * S
    assert bound_ns(CheckContext(None, {"kafka_props": {"controller.quorum.election.timeout.ms": "500"}})) == 5 * S
    assert judge(stuck, {"election_timeout_ms": 3000})["valid"] is True    # 20 s < 30 s


def _dq(t, node, leads, process, index):
    value = {"LeaderId": int(node[1:]) if leads else -1, "LeaderEpoch": 1}
    return [{"index": index, "time": t, "type": "invoke", "process": process, "f": "describe-quorum",
             "value": None, "node": node},
            {"index": index + 1, "time": t + 1, "type": "ok" if leads else "fail", "process": process,
             "f": "describe-quorum", "value": value, "node": node,
             **({} if leads else {"error": "NOT_LEADER_OR_FOLLOWER"})}]


def _history(faults, leader_until_s, end_s=40):
    """5 voters sampled every second; n1 leads until ``leader_until_s`` and again from 35 s;
    ``faults``: nemesis ops (family, value, start s, stop s)."""
    ops = []
    t = 0
    while t < end_s:
        for k, n in enumerate(("n1", "n2", "n3", "n4", "n5")):
            leads = n == "n1" and (t < leader_until_s or t >= 35)
            ops += _dq(t * S + k, n, leads, 1000 + k, 0)
        t += 1
    for family, value, t0, t1 in faults:
        ops += [{"index": 0, "time": t0 * S, "type": "invoke", "process": "nemesis", "f": f"start-{family}",
                 "value": {"kind": value["kind"]}},
                {"index": 0, "time": t0 * S + 1, "type": "info", "process": "nemesis", "f": f"start-{family}",
                 "value": value},
                {"index": 0, "time": t1 * S, "type": "invoke", "process": "nemesis", "f": f"stop-{family}",
                 "value": None},
                {"index": 0, "time": t1 * S + 1, "type": "info", "process": "nemesis", "f": f"stop-{family}",
                 "value": None}]
    ops.sort(key=lambda o: o["time"])
    for i, op in enumerate(ops):
        op["index"] = i
    return ops


def test_no_progress_while_no_majority_is_able_is_no_anomaly():
    # n1..n3 crashed from 5 s to 34 s: no majority of 5 is able, so 30 s without a leader is fine
    ops = _history([("crash", {"kind": "majority", "targets": ["n1", "n2", "n3"]}, 5, 34)], 5)
    r = judge(ops)
    assert r["valid"] is True and r["able_s"] < 12
    # with only n1 down, n2..n5 are an able majority: the same silence is stuck
    ops = _history([("kill", {"kind": "one", "targets": ["n1"]}, 5, 34)], 5)
    r = judge(ops)
    assert r["valid"] is False and 30 < r["anomalies"][0]["stuck_s"] < 32   # 4 s to 35 s


def test_a_partition_into_minorities_leaves_no_able_majority():
    grudge = {"n1": ["n3", "n4", "n5"], "n2": ["n3", "n4", "n5"], "n3": ["n1", "n2"], "n4": ["n1", "n2"],
              "n5": ["n1", "n2"]}
    bridge_cut = {"kind": "random-halves", "targets": ["n1", "n2"], "grudge": grudge}
    pause = {"kind": "one", "targets": ["n3"]}
    # {n1, n2} | {n3, n4, n5} with n3 paused: neither side is an able majority
    r = judge(_history([("partition", bridge_cut, 5, 34), ("pause", pause, 5, 34)], 5))
    assert r["valid"] is True
    # the cut alone leaves {n3, n4, n5}, a majority
    r = judge(_history([("partition", bridge_cut, 5, 34)], 5))
    assert r["valid"] is False
    windows = fault_windows(_history([("partition", bridge_cut, 5, 34)], 5))
    assert able_majority(["n1", "n2", "n3", "n4", "n5"], windows, 10 * S, 11 * S) == ["n3", "n4", "n5"]


def test_the_final_phase_after_the_heal_op_is_not_judged():
    ops = _history([], 40, end_s=20)
    t = 20 * S
    ops += [{"index": 0, "time": t, "type": "invoke", "process": "nemesis", "f": "heal", "value": {"kind": "all"}},
            {"index": 0, "time": t + 1, "type": "info", "process": "nemesis", "f": "heal", "value": {"kind": "all"}},
            {"index": 0, "time": t + 60 * S, "type": "invoke", "process": 5, "f": "read", "value": {}}]
    for i, op in enumerate(ops):
        op["index"] = i
    r = judge(ops)
    assert r["valid"] is True and r["final_heal_ns"] is None      # no fault ran


def test_without_monitor_samples_the_verdict_is_unknown():
    ops = [{"index": 0, "time": 0, "type": "invoke", "process": 0, "f": "append", "value": 1},
           {"index": 1, "time": 5, "type": "ok", "process": 0, "f": "append", "value": {"value": 1}}]
    assert judge(ops)["valid"] == "unknown"


def test_the_append_workload_runs_it_by_name():
    raw = check_all_folds(lambda: iter_history(HISTORIES / "liveness-stuck.jsonl"), ["liveness"])
    assert raw["valid"] is False and raw["anomaly_counts"]["liveness"] == 1


def test_every_heal_is_a_recovery_measured():
    kill = {"kind": "one", "targets": ["n2"]}
    pause = {"kind": "one", "targets": ["n3"]}
    ops = _history([("kill", kill, 5, 9), ("pause", pause, 8, 12), ("kill", kill, 20, 22)], 40)
    r = judge(ops)
    heals = [x["final_heal_ns"] for x in r["recoveries"]]
    assert heals == [12 * S + 1, 22 * S + 1]          # overlapping faults heal once, at the last stop
    assert all(0 <= x["heal_to_leader_s"] <= 1 for x in r["recoveries"])      # n1 led throughout
    assert r["final_heal_ns"] == 22 * S + 1 and r["slowest_recovery_s"] is None   # no writes here
