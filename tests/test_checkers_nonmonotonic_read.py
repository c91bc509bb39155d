"""Tests for checkers/nonmonotonic_read.py."""
from checkers.nonmonotonic_read import check_nonmonotonic_read
from tests.histories.builder import H, clean_run, data, lc


def test_clean_run_is_valid():
    h, _ = clean_run(40, read_window=3)
    r = check_nonmonotonic_read(h.ops, None)
    assert r["valid"] is True and r["reads"] > 5


def test_shorter_prefix_after_a_completed_longer_read():
    h = H()
    log = [lc(0, 1, 1), data(1, 1, 10), data(2, 1, 11)]
    _, long_read = h.read(0, log, node="n1")
    h.nemesis("start-partition", {"kind": "isolate-leader", "targets": ["n1"]})
    stale_inv, stale = h.read(1, log[:2], node="n2")
    r = check_nonmonotonic_read(h.ops, None)
    assert r["valid"] is False
    [a] = r["anomalies"]
    assert a == {"kind": "nonmonotonic", "op": stale["index"], "invoke": stale_inv["index"],
                 "node": "n2", "high_watermark": 2, "earlier_op": long_read["index"],
                 "earlier_f": "read", "earlier_high_watermark": 3}


def test_concurrent_reads_may_see_different_prefixes():
    h = H()
    log = [lc(0, 1, 1), data(1, 1, 10), data(2, 1, 11)]
    i1 = h.invoke(0, "read", {"from": 0, "linearizable": True, "final": False}, node="n1")
    i2 = h.invoke(1, "read", {"from": 0, "linearizable": True, "final": False}, node="n2")
    h.complete(i1, "ok", h.read_value(log))
    h.complete(i2, "ok", h.read_value(log[:1]))     # overlaps the longer read: allowed
    assert check_nonmonotonic_read(h.ops, None)["valid"] is True


def test_read_older_than_a_completed_ack():
    h = H()
    _, ack = h.append(0, 10, offset=1)
    h.append(1, 11, type="info")
    _, rd = h.read(2, [lc(0, 1, 1)], node="n2")
    [a] = check_nonmonotonic_read(h.ops, None)["anomalies"]
    assert a["op"] == rd["index"] and a["earlier_op"] == ack["index"]
    assert a["earlier_f"] == "append" and a["earlier_high_watermark"] == 2


def test_final_non_linearizable_reads_are_not_compared():
    h = H()
    log = [lc(0, 1, 1), data(1, 1, 10)]
    h.read(0, log, final=True)
    h.read(0, log[:1], lin=False, final=True, node="n3")   # a lagging node's own prefix
    assert check_nonmonotonic_read(h.ops, None)["valid"] is True


def test_malformed_reads_are_flagged():
    h = H()
    _, gap = h.read(0, [lc(0, 1, 1), data(2, 1, 10)], hw=3)        # offset 1 missing
    _, short = h.read(0, [lc(0, 1, 1)], hw=2, lin=False, final=True, node="n2")
    _, order = h.read(0, [data(2, 1, 10), data(1, 1, 11)], frm=1)
    h.op("invoke", 0, "read", {"from": 0, "linearizable": True, "final": False})
    nohw = h.op("ok", 0, "read", {"from": 0, "linearizable": True, "final": False, "records": []})
    r = check_nonmonotonic_read(h.ops, None)
    mal = {a["op"]: a["problem"] for a in r["anomalies"] if a["kind"] == "malformed"}
    assert set(mal) == {gap["index"], short["index"], order["index"], nohw["index"]}
    assert "2 records for range [0, 3)" in mal[gap["index"]]
    assert "expected offset 1" in mal[order["index"]]
    assert "1 records for range [0, 2)" in mal[short["index"]]
    assert "high_watermark None" in mal[nohw["index"]]
