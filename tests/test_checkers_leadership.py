"""epoch-regression, stale-leader and disruptive-election (checkers/leadership.py) on hand-made
histories: monitor samples every 250 ms and nemesis ops, times in ms."""
from __future__ import annotations

from checkers.fault_windows import fault_windows
from checkers.fold import CheckContext, ops_of, run_checkers
from checkers.leadership import DisruptiveElection, EpochRegression, StaleLeader

from .histories.builder import H

CTX = CheckContext(config={"fetch_timeout_ms": 2000})       # bound 4.5 s, window 5 s


def sample(h: H, node: str, at_ms: int, epoch: int, leader: int, ok: bool) -> dict:
    """One DescribeQuorum sample of ``node`` answered at ``at_ms``: ok when it leads."""
    p = 100 + int(node[1:])
    h.op("invoke", p, "describe-quorum", None, node=node, at_ms=at_ms - 1)
    if ok:
        return h.op("ok", p, "describe-quorum", {"LeaderId": leader, "LeaderEpoch": epoch,
                                                "HighWatermark": 1, "CurrentVoters": [], "Observers": []},
                    node=node, at_ms=at_ms)
    return h.op("fail", p, "describe-quorum", {"LeaderEpoch": epoch, "LeaderId": leader}, node=node,
                error="NOT_LEADER_OR_FOLLOWER", at_ms=at_ms)


def nemesis(h: H, f: str, value: dict, at_ms: int, done: dict | None = None) -> None:
    h.op("invoke", "nemesis", f, value, at_ms=at_ms)
    h.op("info", "nemesis", f, done or value, at_ms=at_ms + 1)


def check(h: H, cls) -> dict:
    return run_checkers(ops_of(sorted(h.ops, key=lambda o: o["time"])), {"c": cls(CTX)})["c"]


def ordered(h: H) -> H:
    h.ops.sort(key=lambda o: o["time"])
    for i, o in enumerate(h.ops):
        o["index"] = i
    return h


def test_epochs_that_only_rise_are_fine_and_a_drop_is_reported():
    h = H()
    sample(h, "n1", 100, 1, 1, True)
    sample(h, "n2", 110, 1, 1, False)
    sample(h, "n2", 400, 2, -1, False)       # n2 stands in epoch 2
    sample(h, "n2", 700, 1, 1, False)        # ... restarts, back in epoch 1: the vote was never written
    sample(h, "n1", 800, 1, 1, True)
    r = check(ordered(h), EpochRegression)
    assert r["valid"] is False
    (a,) = r["anomalies"]
    assert (a["node"], a["epoch"], a["earlier_epoch"]) == ("n2", 1, 2)
    assert h.ops[a["op"]]["time"] == 700_000_000 and h.ops[a["earlier_op"]]["time"] == 400_000_000
    h2 = H()
    for t, e in ((100, 1), (300, 2), (500, 2), (700, 5)):
        sample(h2, "n3", t, e, -1, False)
    assert check(ordered(h2), EpochRegression)["valid"] is True


def test_a_wiped_disk_starts_its_epochs_afresh_but_a_drop_on_one_disk_is_still_reported():
    h = H()
    sample(h, "n2", 100, 3, 1, False)
    nemesis(h, "start-wipe", {"kind": "nodes", "targets": ["n2"]}, 200,
            {"kind": "nodes", "targets": ["n2"], "wiped": {"n2": {"down": False, "old_directory_id": "a",
                                                                  "new_directory_id": "b", "last_offset": 9}}})
    sample(h, "n2", 600, 0, -1, False)       # the new disk: no quorum-state, epoch 0
    sample(h, "n2", 900, 4, 1, False)
    assert check(ordered(h), EpochRegression)["valid"] is True
    sample(h, "n2", 1200, 2, 1, False)       # below 4 on the same (new) disk
    r = check(ordered(h), EpochRegression)
    assert r["valid"] is False and [(a["epoch"], a["earlier_epoch"]) for a in r["anomalies"]] == [(2, 4)]
    h2 = H()                                  # no wipe: the same drop is a regression
    sample(h2, "n2", 100, 3, 1, False)
    sample(h2, "n2", 600, 0, -1, False)
    assert check(ordered(h2), EpochRegression)["valid"] is False


def test_a_leader_that_keeps_answering_long_after_a_newer_one_is_stale():
    h = H()
    for t in range(100, 12_000, 250):
        sample(h, "n1", t, 1, 1, True)                       # n1 never stops leading epoch 1
        if t >= 3000:
            sample(h, "n2", t + 5, 2, 2, True)               # n2 leads epoch 2 from 3 s
    r = check(ordered(h), StaleLeader)
    assert r["valid"] is False
    (a,) = r["anomalies"]
    assert (a["node"], a["epoch"], a["newer_epoch"]) == ("n1", 1, 2) and a["overstay_s"] > 4.5


def test_a_leader_that_resigns_within_the_check_quorum_window_is_fine():
    h = H()
    for t in range(100, 12_000, 250):
        if t < 6000:
            sample(h, "n1", t, 1, 1, True)                   # resigns 3 s after n2 appears
        if t >= 3000:
            sample(h, "n2", t + 5, 2, 2, True)
    assert check(ordered(h), StaleLeader)["valid"] is True


def test_a_paused_leader_answering_once_after_resume_is_not_stale():
    h = H()
    sample(h, "n1", 100, 1, 1, True)
    nemesis(h, "start-pause", {"kind": "leader"}, 200, {"kind": "leader", "targets": ["n1"]})
    for t in range(3000, 12_000, 250):
        sample(h, "n2", t, 2, 2, True)
    sample(h, "n1", 3100, 1, 1, True)                        # a request served just before the pause
    nemesis(h, "stop-pause", {"kind": "leader"}, 9000, {"kind": "leader", "targets": ["n1"]})
    sample(h, "n1", 9050, 1, 1, True)                        # one answer after SIGCONT, then it resigns
    assert check(ordered(h), StaleLeader)["valid"] is True


def _stable_then_new_epoch(h: H, faults) -> H:
    for t in range(100, 10_000, 250):
        sample(h, "n1", t, 1, 1, True)
    faults(h)
    for t in range(10_500, 12_000, 250):
        sample(h, "n3", t, 2, 3, True)
    for n in ("n2", "n3", "n4", "n5"):
        sample(h, n, 90, 1, 1, False)
    return ordered(h)


def test_a_new_epoch_while_the_leader_and_a_majority_were_unharmed_is_disruptive():
    def isolate_a_follower(h):
        nemesis(h, "start-partition", {"kind": "isolate-one"}, 2000,
                {"kind": "isolate-one", "targets": ["n5"],
                 "grudge": {"n1": ["n5"], "n2": ["n5"], "n3": ["n5"], "n4": ["n5"], "n5": ["n1", "n2", "n3", "n4"]}})
        nemesis(h, "stop-partition", {"kind": "isolate-one"}, 9500, {"kind": "isolate-one", "targets": ["n5"]})

    r = check(_stable_then_new_epoch(H(), isolate_a_follower), DisruptiveElection)
    assert r["valid"] is False
    (a,) = r["anomalies"]
    assert (a["epoch"], a["node"], a["previous_leader"]) == (2, "n3", "n1")
    assert "n5" not in a["healthy"] and "n1" in a["healthy"]


def test_healthy_nodes_dragged_into_epoch_after_epoch_with_no_leader_are_disruptive():
    """A rejoining voter without Pre-Vote keeps bumping the epoch; nobody is ever elected."""
    h = H()
    for t in range(100, 10_000, 250):
        sample(h, "n1", t, 1, 1, True)
        sample(h, "n2", t + 1, 1, 1, False)
        sample(h, "n3", t + 2, 1, 1, False)
    nemesis(h, "start-partition", {"kind": "isolate-one"}, 2000,
            {"kind": "isolate-one", "targets": ["n3"], "grudge": {"n1": ["n3"], "n2": ["n3"], "n3": ["n1", "n2"]}})
    nemesis(h, "stop-partition", {"kind": "isolate-one"}, 9500, {"kind": "isolate-one", "targets": ["n3"]})
    for k, t in enumerate(range(10_100, 14_000, 500)):
        for n in ("n1", "n2", "n3"):
            sample(h, n, t + int(n[1:]), 20 + k, -1, False)
    r = check(ordered(h), DisruptiveElection)
    assert r["valid"] is False
    (a,) = r["anomalies"]
    assert (a["previous_epoch"], a["previous_leader"], a["epoch"], a["node"]) == (1, "n1", 20, "n1")


def test_a_new_epoch_after_the_leader_was_cut_off_or_a_majority_harmed_is_not():
    def isolate_leader(h):
        nemesis(h, "start-partition", {"kind": "isolate-leader"}, 6000,
                {"kind": "isolate-leader", "targets": ["n1"],
                 "grudge": {"n1": ["n2", "n3", "n4", "n5"], "n2": ["n1"], "n3": ["n1"], "n4": ["n1"], "n5": ["n1"]}})

    def kill_three(h):
        nemesis(h, "start-kill", {"kind": "nodes", "targets": ["n2", "n3", "n4"]}, 8000)
        nemesis(h, "stop-kill", {"kind": "nodes"}, 9000, {"kind": "nodes", "targets": ["n2", "n3", "n4"]})

    for faults in (isolate_leader, kill_three):
        assert check(_stable_then_new_epoch(H(), faults), DisruptiveElection)["valid"] is True


def test_fault_windows_span_invoke_to_stop_and_open_faults_run_to_the_end():
    h = H()
    nemesis(h, "start-kill", {"kind": "one"}, 1000, {"kind": "one", "targets": ["n2"]})
    nemesis(h, "stop-kill", {"kind": "one"}, 2000, {"kind": "one", "targets": ["n2"]})
    nemesis(h, "start-partition", {"kind": "nodes", "slot": "lag"}, 3000,
            {"kind": "nodes", "slot": "lag", "targets": ["n1"], "grudge": {"n1": ["n2"], "n2": ["n1"]}})
    sample(h, "n1", 5000, 1, 1, True)
    w = fault_windows(ordered(h).ops)
    assert w.is_down("n2", 1500, 1600 * 10**6) and not w.is_down("n2", 2_100_000_000, 4_000_000_000)
    assert w.is_cut("n2", "n1", 4_000_000_000, 4_100_000_000)      # never stopped: to the end
    assert not w.is_cut("n1", "n3", 0, 5_000_000_000)


def test_a_node_that_stopped_answering_is_no_evidence_of_a_disruptive_election():
    """Two followers die on their own (no fault): the leader loses its quorum and resigns."""
    h = H()
    for t in range(100, 12_000, 250):
        if t < 9000:
            sample(h, "n1", t, 1, 1, True)
        else:
            sample(h, "n1", t, 2, -1, False)              # n1 resigned: epoch 2, no leader
        sample(h, "n2", t + 1, 1 if t < 9000 else 2, -1, False)
        for n in ("n3", "n4"):                             # refused connections from 6 s
            p = 100 + int(n[1:])
            h.op("invoke", p, "describe-quorum", None, node=n, at_ms=t + 2)
            if t < 6000:
                h.op("fail", p, "describe-quorum", {"LeaderEpoch": 1, "LeaderId": 1}, node=n, at_ms=t + 3)
            else:
                h.op("fail", p, "describe-quorum", None, node=n, error="connection", at_ms=t + 3)
    assert check(ordered(h), DisruptiveElection)["valid"] is True


def test_crashed_node_reports_nodes_found_dead_after_the_faults_stopped():
    from checkers.crashes import CrashedNode
    h = H()
    nemesis(h, "heal", {"kind": "all"}, 1000, {"kind": "all", "held": ["n2"], "restarted": ["n2", "n3"],
                                               "errors": {}})
    r = check(ordered(h), lambda ctx: CrashedNode(ctx))
    assert r["valid"] is False and r["anomalies"] == [{"node": "n3", "op": 1}]
    assert check(ordered(H()), lambda ctx: CrashedNode(ctx))["note"] == "no heal op in the history"


def test_the_windows_follow_a_fetch_timeout_set_by_extra_server_properties():
    from checkers.leadership import stable_window_ns, stale_leader_bound_ns
    props = CheckContext(config={"kafka_props": {"controller.quorum.fetch.timeout.ms": "30000"}})
    assert stale_leader_bound_ns(props) == 46_500_000_000 and stable_window_ns(props) == 61_000_000_000
    assert stale_leader_bound_ns(CheckContext()) == stale_leader_bound_ns(CTX) == 4_500_000_000



def test_a_kafka_follower_that_names_no_epoch_still_answered():
    """Kafka's followers answer DescribeQuorum with NOT_LEADER_OR_FOLLOWER and name no epoch or
    leader: that is a reply (the node is up and reachable), not silence. A rejoining follower
    that deposes the leader of a healthy majority is then disruptive (KAFKA-16164, 3.x); the
    same history with the followers refusing connections is not evidence."""
    def history(error: str) -> H:
        h = H()
        for t in range(100, 12_000, 250):
            sample(h, "n1", t, 1 if t < 10_000 else 9, 1, True)
            for n in ("n2", "n3"):
                p = 100 + int(n[1:])
                h.op("invoke", p, "describe-quorum", None, node=n, at_ms=t + 1)
                h.op("fail", p, "describe-quorum", None, node=n, error=error, at_ms=t + 2)
        nemesis(h, "start-partition", {"kind": "isolate-one"}, 2000,
                {"kind": "isolate-one", "targets": ["n3"], "grudge": {"n1": ["n3"], "n2": ["n3"], "n3": ["n1", "n2"]}})
        nemesis(h, "stop-partition", {"kind": "isolate-one"}, 3000, {"kind": "isolate-one", "targets": ["n3"]})
        return ordered(h)

    r = check(history("NOT_LEADER_OR_FOLLOWER"), DisruptiveElection)
    assert r["valid"] is False
    (a,) = r["anomalies"]
    assert (a["previous_epoch"], a["epoch"], a["node"], a["healthy"]) == (1, 9, "n1", ["n1", "n2", "n3"])
    assert check(history("connection"), DisruptiveElection)["valid"] is True
