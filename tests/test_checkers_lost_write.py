"""Tests for checkers/lost_write.py."""
from checkers.lost_write import check_lost_write
from tests.histories.builder import H, clean_run, data, lc


def test_clean_run_is_valid():
    h, log = clean_run(30)
    r = check_lost_write(h.ops, None)
    assert r["valid"] is True and r["anomalies"] == []
    assert r["acked"] == sum(1 for rec in log if rec[2] == "data")
    assert r["final_read"] == max(o["index"] for o in h.ops
                                  if o["type"] == "ok" and o["f"] == "read"
                                  and o["value"]["linearizable"] and o["value"]["final"])


def test_ack_overwritten_at_its_offset_is_lost():
    h = H()
    h.append(0, 10, offset=1, epoch=1)
    _, lost = h.append(1, 11, offset=2, epoch=1, node="n1")
    h.nemesis("start-partition", {"kind": "isolate-leader", "targets": ["n1"]})
    h.append(2, 12, type="info", node="n1")
    h.append(3, 13, offset=2, epoch=2, node="n2")       # new leader reuses offset 2
    h.nemesis("stop-partition")
    h.read(3, [lc(0, 1, 1), data(1, 1, 10), data(2, 2, 13)], final=True, node="n2")
    r = check_lost_write(h.ops, None)
    assert r["valid"] is False
    [a] = r["anomalies"]
    assert a["op"] == lost["index"] and a["value"] == 11 and a["offset"] == 2
    assert a["epoch"] == 1 and a["node"] == "n1"
    assert a["found"] == [2, 2, "data", 13] and a["found_at"] == []


def test_ack_past_final_high_watermark_is_lost_and_moved_value_reported():
    h = H()
    _, moved = h.append(0, 10, offset=1)
    _, beyond = h.append(0, 11, offset=2)
    # final read: offset 1 holds another value; offset 2 is past the high watermark (2)
    h.read(0, [lc(0, 1, 1), data(1, 1, 99)], final=True)
    r = check_lost_write(h.ops, None)
    by_op = {a["op"]: a for a in r["anomalies"]}
    assert set(by_op) == {moved["index"], beyond["index"]}
    assert by_op[beyond["index"]]["found"] is None


def test_value_at_other_offset_is_reported_with_found_at():
    h = H()
    _, ack = h.append(0, 10, offset=1)
    h.read(0, [lc(0, 1, 1), data(1, 1, 50), data(2, 1, 10)], final=True)
    [a] = check_lost_write(h.ops, None)["anomalies"]
    assert a["op"] == ack["index"] and a["found_at"] == [2] and a["found"] == [1, 1, "data", 50]


def test_no_final_linearizable_read_is_unknown_unless_no_acks():
    h = H()
    h.append(0, 10, offset=1)
    h.read(0, [lc(0, 1, 1), data(1, 1, 10)], lin=False, final=True, node="n1")   # not linearizable
    h.read(0, [lc(0, 1, 1), data(1, 1, 10)], final=True, type="info")           # timed out
    assert check_lost_write(h.ops, None)["valid"] == "unknown"
    h2 = H()
    h2.append(0, 10, type="fail")
    h2.append(0, 11, type="info")
    assert check_lost_write(h2.ops, None)["valid"] is True


def test_uses_last_final_read_and_skips_acks_below_its_from():
    h = H()
    _, early = h.append(0, 10, offset=1)
    h.read(0, [lc(0, 1, 1)], final=True)                         # stale final read, superseded
    h.read(0, [data(1, 1, 10), data(2, 1, 11)], frm=1, final=True)
    _, a2 = h.append(0, 11, offset=2)
    r = check_lost_write(h.ops, None)
    assert r["valid"] is True and r["unjudged"] == 0
    h.read(0, [data(2, 1, 11)], frm=2, final=True)
    r = check_lost_write(h.ops, None)
    assert r["valid"] is True and r["unjudged"] == 1


# -- acks without an offset (Kafka's CreateTopics: the write is acknowledged, not placed) ----

def offsetless_ack(h, process, v, node="b1"):
    inv = h.invoke(process, "append", v, node=node)
    return h.complete(inv, "ok", {"value": v})


def test_offsetless_ack_present_anywhere_in_the_final_log_is_not_lost():
    h = H()
    offsetless_ack(h, 0, 10)
    offsetless_ack(h, 1, 11)
    h.read(0, [lc(0, 1, 1), data(1, 1, 11), [2, 1, "TopicRecord", {"name": "other"}], data(3, 1, 10)],
           final=True)
    r = check_lost_write(h.ops, None)
    assert r["valid"] is True and r["acked"] == 2 and r["unjudged"] == 0


def test_offsetless_ack_missing_from_the_final_log_is_lost():
    h = H()
    offsetless_ack(h, 0, 10)
    lost = offsetless_ack(h, 1, 11, node="b2")
    h.read(0, [lc(0, 1, 1), data(1, 1, 10)], final=True)
    r = check_lost_write(h.ops, None)
    assert r["valid"] is False
    [a] = r["anomalies"]
    assert a["op"] == lost["index"] and a["value"] == 11 and a["offset"] is None and a["node"] == "b2"


def test_offsetless_ack_cannot_be_judged_when_the_final_log_does_not_start_at_zero():
    h = H()
    offsetless_ack(h, 0, 11)
    h.read(0, [data(5, 1, 10)], frm=5, final=True)
    r = check_lost_write(h.ops, None)
    assert r["valid"] is True and r["unjudged"] == 1
