"""The queue checkers (checkers/queue_*.py) on synthetic histories: valid ones, each anomaly,
the unknown verdicts, and a 100k-op history judged in one streaming run."""

import pytest

from checkers.fold import CheckContext, ops_of
from checkers.queue_lost import check_queue_lost
from checkers.queue_offsets import check_queue_duplicate, check_queue_inconsistent_offsets
from checkers.queue_order import check_queue_nonmonotonic_poll, check_queue_reordered
from checkers.queue_checker import QUEUE_KINDS
from checkers.queue_phantom import check_queue_phantom
from checkers.registry import check_all_folds, make_checkers

#: what a run of the queue checker lists: the checker, then each kind (Jepsen's names)
ALL = ("queue", *QUEUE_KINDS)


class H:
    """A history builder: ``send``/``poll`` write invoke + completion (or just the invoke)."""

    def __init__(self):
        self.ops = []

    def _add(self, type_, process, f, value, **extra):
        op = {"index": len(self.ops), "time": len(self.ops) * 1000, "type": type_, "process": process,
              "f": f, "value": value, **extra}
        self.ops.append(op)
        return op

    def invoke_send(self, process, p, v):
        return self._add("invoke", process, "send", {"partition": p, "value": v})

    def complete_send(self, process, p, v, offset=None, type_="ok"):
        value = {"partition": p, "value": v}
        if type_ == "ok":
            value["offset"] = offset
        return self._add(type_, process, "send", value)

    def send(self, process, p, v, offset=None, type_="ok"):
        self.invoke_send(process, p, v)
        return self.complete_send(process, p, v, offset, type_)

    def poll(self, process, p, start, records, final=False, end=None, type_="ok"):
        value = {"partition": p, "from": start}
        if final:
            value.update(final=True, end=end)
        self._add("invoke", process, "poll", dict(value))
        done = {**value, "records": [list(r) for r in records]} if type_ == "ok" else value
        return self._add(type_, process, "poll", done)

    def drain(self, p, records, end=None, process=900, page=None):
        """Final pages of partition p from 0 (all records in one page unless ``page``)."""
        end = len(records) if end is None else end
        page = page or max(1, len(records))
        recs = list(records)
        start = 0
        while True:
            chunk = recs[start:start + page]
            self.poll(process + p, p, start, chunk, final=True, end=end)
            if not chunk:
                break
            start = chunk[-1][0] + 1
            if start >= end:
                break
        return self


def healthy():
    h = H()
    h.send(0, 0, 10, 0)
    h.send(1, 1, 11, 0)
    h.send(0, 0, 12, 1)
    h.poll(2, 0, 0, [(0, 10)])
    h.poll(2, 0, 1, [(1, 12)])
    h.poll(3, 1, 0, [(0, 11)])
    h.send(1, 2, 13, None, type_="info")     # unknown outcome, read in the drain: fine
    h.send(0, 2, 14, None, type_="fail")     # refused, never read: fine
    h.drain(0, [(0, 10), (1, 12)]).drain(1, [(0, 11)]).drain(2, [(0, 13)])
    return h.ops


def run_all(ops):
    res = check_all_folds(ops_of(ops), ("queue",))
    assert tuple(res["checkers"]) == ALL
    return res["checkers"]


def test_a_healthy_history_is_valid_for_every_checker():
    res = run_all(healthy())
    assert {n: r["valid"] for n, r in res.items()} == {n: True for n in ALL}
    assert res["unseen"]["acked"] == 3 and res["unseen"]["unjudged"] == 0
    assert res["reordered-send"]["compared"] == 3


def test_the_registry_builds_the_queue_checker_fresh():
    a, b = make_checkers(("queue",), CheckContext()), make_checkers(("queue",), CheckContext())
    assert set(a) == {"queue"} and a["queue"] is not b["queue"]


# -- lost ---------------------------------------------------------------------------------

def test_an_ack_missing_from_its_partitions_drain_is_lost_with_where_it_was_found():
    h = H()
    ack = h.send(0, 0, 10, 0)
    h.send(0, 0, 11, 1)
    ack2 = h.send(0, 1, 12, 0)
    h.drain(0, [(0, 11)]).drain(1, [(0, 10)])
    r = check_queue_lost(h.ops)
    assert r["valid"] is False and r["lost"] == 2
    assert r["anomalies"][0] == {"op": ack["index"], "partition": 0, "offset": 0, "value": 10, "node": None,
                                 "drain_end": 1, "drain_top": 0, "later_read": True, "found_in": [1]}
    assert r["anomalies"][1]["op"] == ack2["index"] and r["anomalies"][1]["found_in"] == []
    assert {d["partition"]: (d["acked"], d["lost"]) for d in r["drains"]} == {0: (2, 1), 1: (1, 1)}


def test_lost_is_unknown_for_a_partition_without_a_drain_and_false_wins_over_unknown():
    h = H()
    h.send(0, 0, 10, 0)
    h.send(0, 1, 11, 0)
    h.drain(0, [(0, 10)])
    r = check_queue_lost(h.ops)
    assert r["valid"] == "unknown" and r["unjudged"] == 1 and "note" in r
    h2 = H()
    h2.send(0, 0, 10, 0)
    h2.send(0, 1, 11, 0)
    h2.drain(0, [])
    assert check_queue_lost(h2.ops)["valid"] is False


def test_a_drain_short_of_its_end_or_with_a_gap_cannot_judge():
    h = H()
    h.send(0, 0, 10, 0)
    h.poll(900, 0, 0, [(0, 10)], final=True, end=5)          # stopped at 1 of 5
    r = check_queue_lost(h.ops)
    assert r["valid"] == "unknown" and r["drains"][0]["reached"] == 1
    g = H()
    g.send(0, 0, 10, 0)
    g.poll(900, 0, 2, [(2, 10)], final=True, end=3)          # pages from 2: 0 and 1 never read
    assert check_queue_lost(g.ops)["valid"] == "unknown"


def test_a_paged_drain_counts_as_complete_and_failed_pages_are_ignored():
    h = H()
    for i in range(5):
        h.send(0, 0, 100 + i, i)
    h.poll(900, 0, 0, [(0, 100), (1, 101)], final=True, end=5)
    h.poll(900, 0, 2, [], final=True, end=5, type_="fail")
    h.poll(900, 0, 2, [(2, 102), (3, 103), (4, 104)], final=True, end=5)
    r = check_queue_lost(h.ops)
    assert r["valid"] is True and r["drains"][0]["pages"] == 2


def test_an_ack_without_offset_is_judged_by_value():
    h = H()
    h.send(0, 0, 10, -1)
    h.drain(0, [])
    r = check_queue_lost(h.ops)
    assert r["valid"] is False and r["anomalies"][0]["offset"] is None


# -- duplicate, inconsistent offsets ------------------------------------------------------------

def test_one_value_at_two_offsets_is_a_duplicate_with_every_position():
    h = H()
    h.send(0, 0, 10, 1)
    p1 = h.poll(1, 0, 0, [(0, 10), (1, 10)])
    p2 = h.poll(2, 0, 0, [(0, 10)])
    h.drain(0, [(0, 10), (1, 10)])
    r = check_queue_duplicate(h.ops)
    assert r["valid"] is False and len(r["anomalies"]) == 1
    a = r["anomalies"][0]
    assert a["value"] == 10
    pos = {(x["partition"], x["offset"]): x for x in a["positions"]}
    assert set(pos) == {(0, 0), (0, 1)}
    assert pos[(0, 1)]["sources"] == ["send", "poll"] and pos[(0, 1)]["count"] == 3
    assert p1["index"] in pos[(0, 0)]["ops"] and p2["index"] in pos[(0, 0)]["ops"]
    assert check_queue_duplicate(healthy())["valid"] is True


def test_a_value_in_two_partitions_is_a_duplicate_too():
    h = H()
    h.poll(1, 0, 0, [(0, 10)])
    h.poll(2, 1, 0, [(0, 10)])
    a = check_queue_duplicate(h.ops)["anomalies"]
    assert [(x["partition"], x["offset"]) for x in a[0]["positions"]] == [(0, 0), (1, 0)]


def test_two_values_at_one_offset_across_acks_and_reads_are_inconsistent():
    h = H()
    ack = h.send(0, 0, 10, 3)
    h.send(0, 1, 11, 3)                        # same offset, other partition: fine
    rd = h.poll(1, 0, 3, [(3, 20)])
    r = check_queue_inconsistent_offsets(h.ops)
    assert r["valid"] is False
    assert r["anomalies"] == [{"partition": 0, "offset": 3, "values": [
        {"value": 10, "ops": [ack["index"]], "sources": ["send"], "count": 1},
        {"value": 20, "ops": [rd["index"]], "sources": ["poll"], "count": 1}]}]
    assert check_queue_inconsistent_offsets(healthy())["valid"] is True


# -- reordered ---------------------------------------------------------------------------------

def test_a_send_acknowledged_before_another_was_invoked_must_have_the_lower_offset():
    h = H()
    a = h.send(0, 0, 10, 5)
    b = h.send(1, 0, 11, 4)                   # invoked after a's ack, yet lower
    h.send(1, 1, 12, 0)                       # other partition: not compared
    r = check_queue_reordered(h.ops)
    assert r["valid"] is False
    assert r["anomalies"] == [{"op": b["index"], "invoke": b["index"] - 1, "partition": 0, "offset": 4,
                               "value": 11, "earlier_op": a["index"], "earlier_offset": 5, "earlier_value": 10}]


def test_concurrent_sends_may_land_in_either_order_and_equal_offsets_are_reordered():
    h = H()
    h.invoke_send(0, 0, 10)
    h.invoke_send(1, 0, 11)
    h.complete_send(0, 0, 10, 6)
    h.complete_send(1, 0, 11, 5)              # concurrent with 10: any order
    assert check_queue_reordered(h.ops)["valid"] is True
    h.send(2, 0, 12, 6)                       # after both: must be above 6
    r = check_queue_reordered(h.ops)
    assert r["valid"] is False and r["anomalies"][0]["earlier_offset"] == 6


# -- nonmonotonic poll ---------------------------------------------------------------------------

def test_records_out_of_order_within_a_poll_or_before_its_from_are_nonmonotonic():
    h = H()
    bad1 = h.poll(1, 0, 0, [(0, 1), (2, 3), (1, 2)])
    bad2 = h.poll(2, 1, 5, [(4, 9), (5, 10)])
    r = check_queue_nonmonotonic_poll(h.ops)
    assert r["valid"] is False
    assert [(a["case"], a["op"], a["offset"], a["previous_offset"]) for a in r["anomalies"]] == [
        ("within-poll", bad1["index"], 1, 2), ("before-from", bad2["index"], 4, 5)]


def test_a_seek_back_is_allowed_and_processes_are_judged_apart():
    h = H()
    h.poll(1, 0, 0, [(0, 1), (1, 2)])
    h.poll(1, 0, 0, [(0, 1)])                   # the process sought back to 0: allowed
    h.poll(2, 0, 0, [(0, 1)])                   # another process: its own positions
    r = check_queue_nonmonotonic_poll(h.ops)
    assert r["valid"] is True and r["seeks"] == 1 and r["polls"] == 3


def test_without_from_a_poll_is_compared_with_where_the_process_left_off():
    h = H()
    h.poll(1, 0, 0, [(0, 1), (1, 2)])
    h._add("invoke", 1, "poll", {"partition": 0})
    bad = h._add("ok", 1, "poll", {"partition": 0, "records": [[1, 2]]})
    r = check_queue_nonmonotonic_poll(h.ops)
    assert [(a["case"], a["op"], a["previous_offset"]) for a in r["anomalies"]] == [("backwards", bad["index"], 2)]


# -- phantom -------------------------------------------------------------------------------------

def test_read_values_never_sent_sent_elsewhere_or_refused_are_phantoms():
    h = H()
    h.send(0, 0, 10, 0)
    failed = h.send(0, 0, 11, None, type_="fail")
    h.send(0, 1, 12, 0)
    h.invoke_send(3, 0, 13)                    # still in flight: may be written
    rd = h.poll(1, 0, 0, [(0, 10), (1, 11), (2, 12), (3, 99), (4, 13)])
    h.poll(2, 0, 0, [(3, 99)])
    r = check_queue_phantom(h.ops)
    assert r["valid"] is False
    got = {a["value"]: a for a in r["anomalies"]}
    assert set(got) == {11, 12, 99}
    assert got[11]["reason"] == "send-failed" and got[11]["send"] == failed["index"]
    assert got[12]["reason"] == "wrong-partition" and got[12]["sent_to"] == [1]
    assert got[99]["reason"] == "never-sent" and got[99]["seen_count"] == 2
    assert got[99]["seen"][0] == {"op": rd["index"], "offset": 3, "node": None}
    assert check_queue_phantom(healthy())["valid"] is True


def test_a_value_retried_after_a_fail_and_written_is_no_phantom():
    h = H()
    h.send(0, 0, 10, None, type_="fail")
    h.send(1, 0, 10, None, type_="info")
    h.poll(2, 0, 0, [(0, 10)])
    assert check_queue_phantom(h.ops)["valid"] is True


# -- malformed input, scale ------------------------------------------------------------------------

def test_malformed_ops_are_skipped_not_raised_on():
    h = H()
    h._add("invoke", 0, "send", "garbage")
    h._add("ok", 0, "send", {"partition": "x", "value": 1, "offset": 0})
    h._add("invoke", 1, "poll", {"partition": 0, "from": 0})
    h._add("ok", 1, "poll", {"partition": 0, "from": 0, "records": [[True, 1], "x", [0, 5, 6], [0, 7]]})
    h._add("invoke", 2, "poll", None)
    h._add("ok", 2, "poll", None)
    res = run_all(h.ops)
    assert res["phantom"]["anomalies"][0]["value"] == 7     # the one well-formed record
    assert res["unseen"]["valid"] is True and res["reordered-send"]["valid"] is True


def synthetic(n_sends: int, partitions: int = 3, page: int = 100):
    """~2 ops a send plus polls of every record and a paged drain: a healthy large history."""
    h = H()
    logs = [[] for _ in range(partitions)]
    for v in range(n_sends):
        p = v % partitions
        h.send(v % 10, p, v, len(logs[p]))
        logs[p].append(v)
    for p, log in enumerate(logs):
        recs = list(enumerate(log))
        for s in range(0, len(recs), page):
            h.poll(20 + p, p, s, recs[s:s + page])
        h.drain(p, recs, page=page * 10)
    return h.ops


def test_a_100k_op_history_is_checked_by_every_queue_checker():
    """A healthy 100k-op history: every checker judges it valid and counts every send. (How
    long it takes is a figure, not a test: tests make no timing assertions.)"""
    ops = synthetic(50_000)
    assert len(ops) >= 100_000
    res = run_all(ops)
    assert {n: r["valid"] for n, r in res.items()} == {n: True for n in ALL}
    assert res["unseen"]["acked"] == 50_000
