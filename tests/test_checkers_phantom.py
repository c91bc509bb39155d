"""Tests for checkers/phantom.py."""
from checkers.phantom import check_phantom
from tests.histories.builder import H, clean_run, data, lc


def test_clean_run_is_valid_even_with_info_appends_in_the_log():
    h, log = clean_run(30)
    assert check_phantom(h.ops, None) == {"valid": True, "anomalies": []}
    # an append that timed out (info) may still have happened: not a phantom
    h2 = H()
    h2.append(0, 10, type="info")
    h2.append(1, 11, offset=2)
    h2.read(1, [lc(0, 1, 1), data(1, 1, 10), data(2, 1, 11)], final=True)
    assert check_phantom(h2.ops, None)["valid"] is True


def test_never_attempted_value_in_a_read():
    h = H()
    h.append(0, 10, offset=1)
    h.nemesis("start-pause", {"kind": "one", "targets": ["n2"]})
    _, r1 = h.read(0, [lc(0, 1, 1), data(1, 1, 10), data(2, 1, 777)], node="n2")
    h.nemesis("stop-pause")
    _, r2 = h.read(0, [lc(0, 1, 1), data(1, 1, 10), data(2, 1, 777)], final=True, node="n1")
    r = check_phantom(h.ops, None)
    assert r["valid"] is False
    [a] = r["anomalies"]
    assert a["value"] == 777 and a["reason"] == "never-attempted" and a["append"] is None
    assert a["seen"] == [{"op": r1["index"], "offset": 2, "node": "n2"},
                         {"op": r2["index"], "offset": 2, "node": "n1"}]
    assert a["seen_count"] == 2


def test_failed_append_in_the_final_log():
    h = H()
    _, failed = h.append(0, 10, type="fail", node="n2")
    _, read = h.read(0, [lc(0, 1, 1), data(1, 1, 10)], final=True)
    [a] = check_phantom(h.ops, None)["anomalies"]
    assert a["value"] == 10 and a["reason"] == "append-failed" and a["append"] == failed["index"]
    assert a["seen"] == [{"op": read["index"], "offset": 1, "node": "n1"}]


def test_leader_change_records_and_failed_reads_are_ignored():
    h = H()
    h.read(0, [lc(0, 1, 1), data(1, 1, 5)], type="info")   # not ok: no value to judge
    h.read(0, [lc(0, 1, 1)])
    assert check_phantom(h.ops, None)["valid"] is True
