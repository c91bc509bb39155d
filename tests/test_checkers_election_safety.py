"""Tests for checkers/election_safety.py."""
from checkers.election_safety import check_election_safety
from history.node_data import NodeData
from tests.histories.builder import H, clean_run, data, lc


def test_clean_run_is_valid():
    h, log = clean_run(20)
    nodes = {n: NodeData(n, [tuple(r) for r in log], None) for n in ("n1", "n2", "n3")}
    r = check_election_safety(h.ops, nodes)
    assert r["valid"] is True and r["epochs"] == 2


def test_two_leader_change_records_in_one_epoch_across_node_logs():
    nodes = {"n1": NodeData("n1", [tuple(lc(0, 1, 1)), tuple(lc(1, 3, 1))], None),
             "n2": NodeData("n2", [tuple(lc(0, 1, 1)), tuple(lc(1, 3, 2))], None)}
    r = check_election_safety([], nodes)
    assert r["valid"] is False
    [a] = r["anomalies"]
    assert a["epoch"] == 3
    assert a["leaders"] == {"1": [{"source": "log", "node": "n1", "offset": 1}],
                            "2": [{"source": "log", "node": "n2", "offset": 1}]}


def test_describe_quorum_sample_contradicts_read():
    h = H()
    _, rd = h.read(0, [lc(0, 1, 1), data(1, 1, 5)], node="n1")
    h.dq(1, "n3", 1, 1, type="fail")                   # non-leader refuses: no evidence
    h.nemesis("start-partition", {"kind": "isolate-one", "targets": ["n3"]})
    _, dq = h.dq(1, "n3", 3, 1)                          # n3 claims epoch 1 too
    r = check_election_safety(h.ops, None)
    [a] = r["anomalies"]
    assert a["epoch"] == 1 and set(a["leaders"]) == {"1", "3"}
    assert a["leaders"]["1"] == [{"source": "read", "op": rd["index"], "offset": 0, "node": "n1"}]
    assert a["leaders"]["3"][0]["op"] == dq["index"]


def test_describe_quorum_answered_by_node_other_than_leader_id():
    h = H()
    _, dq = h.dq(0, "n2", 1, 4)      # n2 answers as leader but names 1
    [a] = check_election_safety(h.ops, None)["anomalies"]
    assert a["epoch"] == 4 and set(a["leaders"]) == {"1", "2"}


def test_no_leader_and_same_leader_repeated_are_fine():
    h = H()
    h.dq(0, "n1", 1, 2)
    h.dq(0, "n1", 1, 2)
    h.dq(0, "n2", -1, 3)
    h.read(0, [lc(0, 2, 1)])
    assert check_election_safety(h.ops, {})["valid"] is True


def test_two_nodes_acknowledging_appends_of_one_epoch_is_two_leaders():
    h = H()
    h.append(0, 10, offset=1, epoch=2, node="n1")
    _, a2 = h.append(1, 11, offset=1, epoch=2, node="n3")     # n3 also acked in epoch 2
    h.append(2, 12, offset=2, epoch=3, node="n3")             # a later epoch of its own: fine
    h.append(3, 13, type="fail", node="n2")                   # a refusal is no evidence
    r = check_election_safety(h.ops, None)
    assert r["valid"] is False
    [a] = r["anomalies"]
    assert a["epoch"] == 2 and set(a["leaders"]) == {"1", "3"}
    assert a["leaders"]["3"] == [{"source": "ack", "op": a2["index"], "node": "n3"}]
