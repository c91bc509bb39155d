"""Tests for checkers/divergence.py."""
from checkers.divergence import check_divergence
from history.node_data import NodeData
from tests.histories.builder import H, clean_run, data, lc


def _nd(name, records, hw=None):
    return NodeData(name, [tuple(r) for r in records], hw)


def test_clean_nodes_agree_and_uncommitted_tail_may_differ():
    h, log = clean_run(20)
    nodes = {n: _nd(n, log) for n in ("n1", "n2", "n3")}
    r = check_divergence(h.ops, nodes)
    assert r["valid"] is True and r["anomalies"] == []
    assert r["high_watermarks"] == {n: len(log) for n in nodes}
    # a different uncommitted tail above the high watermarks is fine
    nodes["n3"] = _nd("n3", log + [data(len(log), 9, 424242)])
    assert check_divergence(h.ops, nodes)["valid"] is True


def test_divergence_below_both_high_watermarks_from_final_reads():
    h = H()
    common = [lc(0, 1, 1), data(1, 1, 10)]
    a_log = common + [data(2, 1, 11), data(3, 1, 12)]
    b_log = common + [data(2, 2, 21), data(3, 2, 22), data(4, 2, 23)]
    h.read(0, a_log, lin=False, final=True, node="n1")
    h.read(0, b_log, lin=False, final=True, node="n2")
    nodes = {"n1": _nd("n1", a_log, hw=1), "n2": _nd("n2", b_log, hw=1)}   # reads override
    r = check_divergence(h.ops, nodes)
    assert r["valid"] is False
    [a] = r["anomalies"]
    assert a["nodes"] == ["n1", "n2"] and a["offset"] == 2 and a["count"] == 2 and a["limit"] == 4
    assert a["records"] == {"n1": [2, 1, "data", 11], "n2": [2, 2, "data", 21]}


def test_checkpoint_used_without_final_read_and_epoch_compared():
    h = H()
    h.nemesis("start-kill", {"kind": "one", "targets": ["n3"]})
    a_log = [lc(0, 1, 1), data(1, 1, 10)]
    c_log = [lc(0, 1, 1), data(1, 2, 10)]                 # same payload, other epoch
    nodes = {"n1": _nd("n1", a_log, hw=2), "n3": _nd("n3", c_log, hw=2)}
    [a] = check_divergence(h.ops, nodes)["anomalies"]
    assert a["offset"] == 1 and a["nodes"] == ["n1", "n3"]
    nodes["n3"] = _nd("n3", c_log, hw=1)                 # differing record not committed on n3
    assert check_divergence(h.ops, nodes)["valid"] is True


def test_missing_record_below_high_watermark_counts():
    nodes = {"n1": _nd("n1", [lc(0, 1, 1), data(1, 1, 10), data(2, 1, 11)], hw=3),
             "n2": _nd("n2", [lc(0, 1, 1), data(1, 1, 10)], hw=3)}
    [a] = check_divergence([], nodes)["anomalies"]
    assert a["offset"] == 2 and a["records"] == {"n1": [2, 1, "data", 11], "n2": None}


def test_unknown_without_node_data_or_high_watermarks():
    assert check_divergence([], None)["valid"] == "unknown"
    nodes = {"n1": _nd("n1", [lc(0, 1, 1)], hw=1), "n2": _nd("n2", [lc(0, 1, 1)])}
    r = check_divergence([], nodes)
    assert r["valid"] == "unknown"
    assert any("n2" in note for note in r["notes"])
    assert check_divergence([], {"n1": _nd("n1", [lc(0, 1, 1)], hw=1)})["valid"] is True
