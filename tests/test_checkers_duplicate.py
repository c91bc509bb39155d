"""Tests for checkers/duplicate.py."""
from checkers.duplicate import check_duplicate
from tests.histories.builder import H, clean_run, data, lc


def test_clean_run_is_valid():
    h, _ = clean_run(40)
    assert check_duplicate(h.ops, None) == {"valid": True, "anomalies": []}


def test_value_twice_in_one_read_reported_once_per_offsets():
    h = H()
    h.append(0, 10, offset=1)
    h.append(0, 10 + 1, type="info")
    dup_log = [lc(0, 1, 1), data(1, 1, 10), lc(2, 2, 2), data(3, 2, 10)]
    _, r1 = h.read(0, dup_log, node="n1")
    h.nemesis("start-kill", {"kind": "leader", "targets": ["n2"]})
    _, r2 = h.read(0, dup_log, final=True, node="n3")
    r = check_duplicate(h.ops, None)
    assert r["valid"] is False
    [a] = r["anomalies"]
    assert a["value"] == 10 and a["offsets"] == [1, 3]
    assert a["ops"] == [r1["index"], r2["index"]] and a["op_count"] == 2
    assert a["nodes"] == ["n1", "n3"]


def test_same_value_in_different_reads_at_same_offset_is_fine():
    h = H()
    h.append(0, 10, offset=1)
    h.read(0, [lc(0, 1, 1), data(1, 1, 10)])
    h.read(0, [data(1, 1, 10)], frm=1)
    h.read(0, [lc(0, 1, 1), data(1, 1, 10)], final=True)
    assert check_duplicate(h.ops, None)["valid"] is True


def test_identical_leader_change_payloads_are_not_data_duplicates():
    h = H()
    rec = lc(0, 1, 1)
    h.read(0, [rec, [1, 1, "LeaderChange", rec[3]]])
    assert check_duplicate(h.ops, None)["valid"] is True
