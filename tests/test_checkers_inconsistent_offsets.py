"""Tests for checkers/inconsistent_offsets.py."""
from checkers.inconsistent_offsets import check_inconsistent_offsets
from tests.histories.builder import H, clean_run, data, lc


def test_clean_run_is_valid():
    h, _ = clean_run(40, read_window=5)
    assert check_inconsistent_offsets(h.ops, None) == {"valid": True, "anomalies": []}


def test_two_reads_disagree_on_an_offset():
    h = H()
    _, ack = h.append(0, 10, offset=1, epoch=1)
    _, r1 = h.read(0, [lc(0, 1, 1), data(1, 1, 10)], node="n1")
    h.nemesis("start-partition", {"kind": "random-halves", "targets": ["n1"],
                                  "grudge": {"n1": ["n2", "n3"]}})
    _, r2 = h.read(1, [lc(0, 1, 1), data(1, 2, 20)], lin=False, final=True, node="n3")
    r = check_inconsistent_offsets(h.ops, None)
    assert r["valid"] is False
    [a] = r["anomalies"]
    assert a["offset"] == 1
    variants = {rec["payload"]: rec for rec in a["records"]}
    assert set(variants) == {10, 20}
    assert variants[10]["ops"] == [ack["index"], r1["index"]] and variants[10]["count"] == 2
    assert variants[20]["ops"] == [r2["index"]] and variants[20]["epochs"] == [2]


def test_ack_disagrees_with_read():
    h = H()
    _, ack = h.append(0, 10, offset=1)
    _, rd = h.read(0, [lc(0, 1, 1), data(1, 1, 11)])
    [a] = check_inconsistent_offsets(h.ops, None)["anomalies"]
    assert a["offset"] == 1
    assert sorted(rec["ops"][0] for rec in a["records"]) == [ack["index"], rd["index"]]


def test_type_mismatch_and_leader_change_payloads_compared():
    h = H()
    h.read(0, [lc(0, 1, 1)])
    h.read(0, [lc(0, 1, 2)])                       # different LeaderId at offset 0
    h.read(0, [lc(0, 1, 1), data(1, 1, 5)])
    h.read(0, [lc(0, 1, 1), lc(1, 1, 1)])           # data vs LeaderChange at offset 1
    r = check_inconsistent_offsets(h.ops, None)
    assert [a["offset"] for a in r["anomalies"]] == [0, 1]
    assert {rec["type"] for rec in r["anomalies"][1]["records"]} == {"data", "LeaderChange"}


def test_same_record_different_epoch_is_not_compared():
    h = H()
    h.append(0, 10, offset=1, epoch=1)
    h.read(0, [lc(0, 1, 1), data(1, 1, 10)])
    h.read(0, [lc(0, 1, 1), data(1, 2, 10)], final=True)
    h.append(0, 11, type="fail")
    r = check_inconsistent_offsets(h.ops, None)
    assert r["valid"] is True
