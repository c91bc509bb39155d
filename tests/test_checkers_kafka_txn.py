"""Jepsen's Kafka workload checker (checkers/kafka_txn): a small frozen history for every anomaly
kind, each showing exactly that kind with an explanation naming its ops, key and offsets; the
allowed kinds and the flags; the verdict unknown for what cannot be read."""
from __future__ import annotations

import pytest

from checkers.fold import CheckContext, check_list
from checkers.kafka_txn import KINDS, Options, TxnChecker, check_ops, options_of, parse_forbid
from checkers.registry import check_all_folds
from checkers.fold import ops_of


def o(index, process, type, f, value, **extra) -> dict:
    """An op with ``time`` = ``index`` (ns), as Jepsen's own tests write them."""
    return {"index": index, "time": index, "process": process, "type": type, "f": f, "value": value, **extra}


def op_pair(i, process, f, invoke, done, type="ok", **extra) -> list[dict]:
    """Invoke ``invoke`` at index ``i`` and complete it with ``done`` at ``i + 1``."""
    return [o(i, process, "invoke", f, invoke), o(i + 1, process, type, f, done, **extra)]


def found(result: dict) -> dict[str, list[dict]]:
    """Kind -> its anomalies, for the kinds that have any."""
    return {k: r["anomalies"] for k, r in result["by_kind"].items() if r["anomalies"]}


def only(history, kind, **opts) -> tuple[list[dict], dict]:
    """Check ``history``; assert ``kind`` is the one kind shown; return its anomalies and the result."""
    r = check_ops(history, Options(**opts))
    kinds = found(r)
    assert set(kinds) == {kind}, {k: [a["explanation"] for a in v] for k, v in kinds.items()}
    return kinds[kind], r


def reindex(ops: list[dict]) -> list[dict]:
    for i, op in enumerate(ops):
        op["index"] = op["time"] = i
    return ops


def sends_then_reader(values: list[tuple[str, int, object]], reader_process: int = 9) -> list[dict]:
    """One ok send op of ``[(key, offset, value)]`` by process 0, then an ok poll reading them all."""
    inv = [["send", k, v] for k, _o, v in values]
    done = [["send", k, [off, v]] for k, off, v in values]
    polled: dict = {}
    for k, off, v in sorted(values, key=lambda t: (t[0], t[1])):
        polled.setdefault(k, []).append([off, v])
    return op_pair(0, 0, "send", inv, done) + op_pair(2, reader_process, "poll", [["poll"]], [["poll", polled]])


# --- one frozen history per kind ---------------------------------------------------------------

def test_g1a_an_ok_poll_reads_a_failed_send():
    h = reindex(op_pair(0, 0, "send", [["send", "x", 2], ["send", "y", 3]], [["send", "x", 2], ["send", "y", 3]],
                        type="fail")
                + op_pair(0, 1, "poll", [["poll"]], [["poll", {"x": [[0, 2]]}]]))
    (a,), r = only(h, "G1a")
    assert r["valid"] is False and r["error_kinds"] == ["G1a"]
    assert (a["op"], a["writer"], a["key"], a["offset"], a["value"]) == (3, 1, "x", 0, 2)
    assert a["explanation"].startswith("op 3 (ok poll, process 1) polled 2 from key x at offset 0, which op 1 "
                                       "(fail send, process 0) sent")


def test_lost_write_a_committed_send_below_what_was_read_was_never_read():
    # an info op sends a to x at 0 and c to y; a poll of c proves it committed; b (offset 1 of x)
    # is read, so a, below it, must have been read too
    h = reindex(op_pair(0, 0, "send", [["send", "x", "a"], ["send", "y", "c"]],
                        [["send", "x", [0, "a"]], ["send", "y", [0, "c"]]], type="info")
                + op_pair(0, 1, "send", [["send", "x", "b"]], [["send", "x", [1, "b"]]])
                + op_pair(0, 2, "poll", [["poll"]], [["poll", {"y": [[0, "c"]]}]])
                + op_pair(0, 3, "poll", [["poll"]], [["poll", {"x": [[1, "b"]]}]]))
    (a,), r = only(h, "lost-write")
    assert (a["key"], a["value"], a["offset"], a["op"], a["max_read"], a["max_read_offset"]) == ("x", "a", 0, 1, 7, 1)
    assert "op 1 (info send, process 0) sent a to key x at offset 0" in a["explanation"]
    assert "op 7 (ok poll, process 3) read b at offset 1" in a["explanation"]


def test_unseen_an_acknowledged_send_never_polled():
    h = reindex(op_pair(0, 0, "send", [["send", "x", 5]], [["send", "x", [4, 5]]])
                + op_pair(0, 1, "poll", [["poll"]], [["poll", {}]]))
    (a,), r = only(h, "unseen")
    assert (a["key"], a["count"], a["values"], a["offsets"], a["ops"]) == ("x", 1, [5], [4], [1])
    assert a["explanation"] == "1 acknowledged send to key x never polled by an ok poll: 5 (op 1 at offset 4)"


def test_duplicate_one_value_at_two_offsets():
    # Jepsen's duplicate test: a sent at 1, b (info) and a read again at 3
    h = reindex(op_pair(0, 0, "send", [["send", "x", "a"]], [["send", "x", [1, "a"]]])
                + op_pair(0, 1, "send", [["send", "x", "b"]], [["send", "x", "b"]], type="info")
                + op_pair(0, 2, "poll", [["poll"]], [["poll", {"x": [[2, "b"], [3, "a"]]}]]))
    (a,), _r = only(h, "duplicate")
    assert (a["key"], a["value"], a["count"], a["offsets"]) == ("x", "a", 2, [1, 3])
    assert a["ops"] == [1, 5]
    assert a["explanation"].startswith("value a of key x is at 2 offsets, 1, 3: op 1 sent it at offset 1, "
                                       "op 5 polled it at offset 3")


def test_inconsistent_offsets_two_values_at_one_offset():
    # Jepsen's real-world example: two acknowledged sends given offset 537
    h = reindex(op_pair(0, 379, "send", [["send", 11, 641]], [["send", 11, [537, 641]]])
                + op_pair(0, 363, "send", [["send", 11, 645]], [["send", 11, [537, 645]]])
                + op_pair(0, 1, "poll", [["poll"]], [["poll", {11: [[537, 641]]}]])
                + op_pair(0, 2, "poll", [["poll"]], [["poll", {11: [[537, 645]]}]]))
    (a,), _r = only(h, "inconsistent-offsets")
    assert (a["key"], a["offset"], a["index"], a["values"]) == ("11", 537, 0, [641, 645])
    assert a["ops"] == [1, 3, 5, 7]
    assert a["explanation"] == ("offset 537 of key 11 holds 2 values: 641 (sent by op 1, polled by op 5), "
                                "645 (sent by op 3, polled by op 7)")


ABC = op_pair(0, 0, "send", [["send", "x", "a"], ["send", "x", "b"], ["send", "x", "c"]],
              [["send", "x", [0, "a"]], ["send", "x", [1, "b"]], ["send", "x", [2, "c"]]])


def test_poll_skip_a_consumer_jumps_over_a_record_between_ops():
    h = reindex([dict(x) for x in ABC]
                + op_pair(0, 1, "poll", [["poll"]], [["poll", {"x": [[0, "a"]]}]])
                + op_pair(0, 1, "poll", [["poll"]], [["poll", {"x": [[2, "c"]]}]])
                + op_pair(0, 2, "poll", [["poll"]], [["poll", {"x": [[1, "b"]]}]]))
    (a,), r = only(h, "poll-skip")
    assert r["valid"] is False
    assert (a["key"], a["ops"], a["offsets"], a["delta"], a["skipped"]) == ("x", [3, 5], [0, 2], 2, ["b"])
    assert a["explanation"] == ("process 1 polled key x up to offset 0 (a) in op 3, then op 5 (ok poll, process 1) "
                                "polled from offset 2 (c), skipping 1 record at offsets 1 (values b)")


def test_nonmonotonic_poll_a_consumer_reads_a_record_again_in_its_next_op():
    h = reindex([dict(x) for x in ABC]
                + op_pair(0, 1, "poll", [["poll"]], [["poll", {"x": [[0, "a"], [1, "b"]]}]])
                + op_pair(0, 1, "poll", [["poll"]], [["poll", {"x": [[1, "b"], [2, "c"]]}]]))
    (a,), _r = only(h, "nonmonotonic-poll")
    assert (a["key"], a["ops"], a["values"], a["offsets"], a["delta"]) == ("x", [3, 5], ["b", "b"], [1, 1], 0)
    assert "then op 5 (ok poll, process 1) polled from offset 1 (b): the same record again" in a["explanation"]


def test_int_poll_skip_within_one_op():
    h = reindex([dict(x) for x in ABC]
                + op_pair(0, 1, "poll", [["poll"], ["poll"]], [["poll", {"x": [[0, "a"]]}], ["poll", {"x": [[2, "c"]]}]])
                + op_pair(0, 2, "poll", [["poll"]], [["poll", {"x": [[1, "b"]]}]]))
    (a,), _r = only(h, "int-poll-skip")
    assert (a["key"], a["op"], a["offsets"], a["skipped"], a["delta"]) == ("x", 3, [0, 2], ["b"], 2)
    assert a["explanation"] == ("op 3 (ok poll, process 1) polled key x at offset 0 (a) then at offset 2 (c), "
                                "skipping 1 record at offsets 1 (values b)")


def test_int_nonmonotonic_poll_within_one_op():
    h = reindex([dict(x) for x in ABC]
                + op_pair(0, 1, "poll", [["poll"]], [["poll", {"x": [[0, "a"], [1, "b"], [0, "a"]]}]])
                + op_pair(0, 2, "poll", [["poll"]], [["poll", {"x": [[2, "c"]]}]]))
    (a,), _r = only(h, "int-nonmonotonic-poll")
    assert (a["key"], a["op"], a["values"], a["offsets"], a["delta"]) == ("x", 3, ["b", "a"], [1, 0], -1)
    assert "polled key x at offset 1 (b) then at offset 0 (a): backwards (delta -1)" in a["explanation"]


def test_a_rebalance_log_exempts_its_keys_from_the_internal_poll_checks():
    h = reindex([dict(x) for x in ABC]
                + op_pair(0, 1, "poll", [["poll"]], [["poll", {"x": [[0, "a"], [1, "b"], [0, "a"]]}]],
                          **{"rebalance-log": [{"keys": ["x"]}]})
                + op_pair(0, 2, "poll", [["poll"]], [["poll", {"x": [[2, "c"]]}]]))
    assert found(check_ops(h)) == {}


def test_nonmonotonic_send_a_producer_s_later_send_lands_earlier():
    h = reindex(op_pair(0, 0, "send", [["send", "x", "c"]], [["send", "x", [3, "c"]]])
                + op_pair(0, 0, "send", [["send", "x", "a"]], [["send", "x", [1, "a"]]])
                + op_pair(0, 9, "poll", [["poll"]], [["poll", {"x": [[1, "a"], [3, "c"]]}]]))
    (a,), _r = only(h, "nonmonotonic-send")
    assert (a["key"], a["ops"], a["values"], a["offsets"], a["delta"]) == ("x", [1, 3], ["c", "a"], [3, 1], -1)
    assert a["explanation"] == ("process 0 sent c to key x (offset 3) in op 1, then op 3 (ok send, process 0) "
                                "sent a, which landed before it, at offset 1")


def test_int_nonmonotonic_send_within_one_op():
    h = reindex(op_pair(0, 0, "send", [["send", "x", "c"], ["send", "x", "a"]],
                        [["send", "x", [3, "c"]], ["send", "x", [1, "a"]]])
                + op_pair(0, 9, "poll", [["poll"]], [["poll", {"x": [[1, "a"], [3, "c"]]}]]))
    (a,), _r = only(h, "int-nonmonotonic-send")
    assert (a["key"], a["op"], a["values"], a["offsets"]) == ("x", 1, ["c", "a"], [3, 1])
    assert a["explanation"] == "op 1 (ok send, process 0) sent c then a to key x, but a landed at offset 1, before c's offset 3"


def test_int_send_skip_is_reported_and_allowed_unless_forbidden():
    h = reindex(op_pair(0, 0, "send", [["send", "x", "a"], ["send", "x", "c"]],
                        [["send", "x", [0, "a"]], ["send", "x", [2, "c"]]])
                + op_pair(0, 1, "send", [["send", "x", "b"]], [["send", "x", [1, "b"]]])
                + op_pair(0, 9, "poll", [["poll"]], [["poll", {"x": [[0, "a"], [1, "b"], [2, "c"]]}]]))
    (a,), r = only(h, "int-send-skip")
    assert r["valid"] is True and r["by_kind"]["int-send-skip"]["allowed"] is True and r["error_kinds"] == []
    assert (a["op"], a["key"], a["offsets"], a["skipped"]) == (1, "x", [0, 2], ["b"])
    assert a["explanation"] == ("op 1 (ok send, process 0) sent a then c to key x, and 1 other record landed between "
                                "them (offsets 0 and 2): values b")
    strict = check_ops(h, Options(forbid=("int-send-skip",)))
    assert strict["valid"] is False and strict["error_kinds"] == ["int-send-skip"]


def test_precommitted_read_a_transaction_polls_its_own_send():
    h = reindex(op_pair(0, 0, "txn", [["send", "x", "a"], ["poll"]],
                        [["send", "x", [0, "a"]], ["poll", {"x": [[0, "a"]]}]]))
    (a,), _r = only(h, "precommitted-read")
    assert (a["op"], a["key"], a["value"], a["offset"]) == (1, "x", "a", 0)
    assert a["explanation"].startswith("op 1 (ok txn, process 0) polled a from key x at offset 0, which it sent itself")


G0_HISTORY = reindex([o(0, 0, "invoke", "send", [["send", "x", "a"], ["send", "y", "a"]]),
                      o(0, 1, "invoke", "send", [["send", "x", "b"], ["send", "y", "b"]]),
                      o(0, 0, "ok", "send", [["send", "x", [0, "a"]], ["send", "y", [1, "a"]]]),
                      o(0, 1, "ok", "send", [["send", "x", [1, "b"]], ["send", "y", [0, "b"]]]),
                      *op_pair(0, 2, "poll", [["poll"], ["poll"]],
                               [["poll", {"x": [[0, "a"], [1, "b"]]}], ["poll", {"y": [[0, "b"], [1, "a"]]}]])])


def test_g0_write_cycle_with_ww_deps_allowed_by_default():
    (a,), r = only(G0_HISTORY, "G0", ww_deps=True)
    assert r["valid"] is True and r["by_kind"]["G0"]["allowed"]
    assert sorted(a["ops"]) == [2, 3] and a["cycle"][0] == a["cycle"][-1]
    assert {s["type"] for s in a["steps"]} == {"ww"}
    assert "op 2 sent a to key x (offset 0) just before op 3 sent b (offset 1) (ww)" in a["explanation"]
    assert "op 3 sent b to key y (offset 0) just before op 2 sent a (offset 1) (ww)" in a["explanation"]
    assert check_ops(G0_HISTORY, Options(ww_deps=True, forbid=("G0",)))["valid"] is False
    assert found(check_ops(G0_HISTORY)) == {}          # without ww-deps there is no ww edge


def test_g1c_each_transaction_reads_the_other():
    h = reindex([o(0, 0, "invoke", "txn", [["send", "x", "a"], ["poll"]]),
                 o(0, 1, "invoke", "txn", [["send", "y", "b"], ["poll"]]),
                 o(0, 0, "ok", "txn", [["send", "x", [0, "a"]], ["poll", {"y": [[0, "b"]]}]]),
                 o(0, 1, "ok", "txn", [["send", "y", [0, "b"]], ["poll", {"x": [[0, "a"]]}]])])
    (a,), r = only(h, "G1c")
    assert r["valid"] is False
    assert sorted(a["ops"]) == [2, 3] and [s["type"] for s in a["steps"]] == ["wr", "wr"]
    assert "op 2 sent a to key x, which op 3 polled at offset 0 (wr)" in a["explanation"]
    assert "op 3 sent b to key y, which op 2 polled at offset 0 (wr)" in a["explanation"]
    # with ww-deps Jepsen allows G1c (no write isolation)
    assert check_ops(h, Options(ww_deps=True))["valid"] is True


def test_g0_realtime_a_later_send_lands_before_one_that_completed_earlier():
    h = reindex(op_pair(0, 0, "send", [["send", "x", "a"]], [["send", "x", [1, "a"]]])
                + op_pair(0, 1, "send", [["send", "x", "b"]], [["send", "x", [0, "b"]]])
                + op_pair(0, 3, "poll", [["poll"]], [["poll", {"x": [[0, "b"], [1, "a"]]}]]))
    (a,), r = only(h, "G0-realtime", ww_deps=True)
    assert r["valid"] is True                              # allowed, as G0
    assert sorted(a["ops"]) == [1, 3] and sorted(s["type"] for s in a["steps"]) == ["realtime", "ww"]
    assert "op 1 completed before op 3 was invoked (at index 2) (realtime)" in a["explanation"]
    assert "op 3 sent b to key x (offset 0) just before op 1 sent a (offset 1) (ww)" in a["explanation"]


def test_g1c_realtime_a_poll_reads_a_send_invoked_after_it_completed():
    h = reindex(op_pair(0, 1, "poll", [["poll"]], [["poll", {"x": [[0, "a"]]}]])
                + op_pair(0, 0, "send", [["send", "x", "a"]], [["send", "x", [0, "a"]]]))
    (a,), r = only(h, "G1c-realtime")
    assert r["valid"] is False
    assert sorted(s["type"] for s in a["steps"]) == ["realtime", "wr"]
    assert "op 3 sent a to key x, which op 1 polled at offset 0 (wr)" in a["explanation"]
    assert "op 1 completed before op 3 was invoked (at index 2) (realtime)" in a["explanation"]


def test_every_kind_has_a_frozen_history_here():
    names = {k for k in KINDS}
    tested = {"G1a", "lost-write", "unseen", "duplicate", "inconsistent-offsets", "poll-skip", "nonmonotonic-poll",
              "int-poll-skip", "int-nonmonotonic-poll", "nonmonotonic-send", "int-nonmonotonic-send",
              "int-send-skip", "precommitted-read", "G0", "G1c", "G0-realtime", "G1c-realtime",
              "server-error"}
    assert names == tested


# --- what is allowed, and the flags -------------------------------------------------------------

def poll_skip_history(sub_f: str | None) -> list[dict]:
    h = [dict(x) for x in ABC] + op_pair(0, 1, "poll", [["poll"]], [["poll", {"x": [[0, "a"]]}]])
    if sub_f:
        h += op_pair(0, 1, sub_f, ["x"], ["x"])
    h += op_pair(0, 1, "poll", [["poll"]], [["poll", {"x": [[2, "c"]]}]])
    h += op_pair(0, 2, "poll", [["poll"]], [["poll", {"x": [[1, "b"]]}]])
    return reindex(h)


def test_with_a_subscribe_in_the_history_poll_skip_is_allowed_and_forbid_makes_it_an_error():
    r = check_ops(poll_skip_history("subscribe"))
    assert set(found(r)) == {"poll-skip"} and r["valid"] is True and "poll-skip" in r["allowed"]
    r = check_ops(poll_skip_history("subscribe"), Options(forbid=parse_forbid(["poll-skip,nonmonotonic-poll"])))
    assert r["valid"] is False and r["error_kinds"] == ["poll-skip"]
    assert check_ops(poll_skip_history("assign"))["valid"] is False      # an assign keeps x: still judged


def test_an_assign_that_seeks_to_the_beginning_starts_the_consumer_afresh():
    h = [dict(x) for x in ABC] + op_pair(0, 1, "poll", [["poll"]], [["poll", {"x": [[0, "a"], [1, "b"]]}]])
    h += op_pair(0, 1, "assign", ["x"], ["x"], seek_to_beginning=True)
    h += op_pair(0, 1, "poll", [["poll"]], [["poll", {"x": [[0, "a"], [1, "b"], [2, "c"]]}]])
    assert found(check_ops(reindex(h))) == {}
    h[-3]["seek_to_beginning"] = False
    assert set(found(check_ops(reindex(h)))) == {"nonmonotonic-poll"}


def test_parse_forbid_names_the_choices():
    assert parse_forbid(["all"]) == ("int-send-skip", "G0", "G0-realtime", "poll-skip", "nonmonotonic-poll",
                                     "G1c", "G1c-realtime", "server-error")
    with pytest.raises(ValueError, match="G1a: never allowed"):
        parse_forbid(["G1a"])
    with pytest.raises(ValueError, match="nope: not an anomaly kind"):
        parse_forbid(["nope"])


def test_options_come_from_the_check_over_the_run_config():
    ctx = CheckContext(config={"ww_deps": True, "forbid": ["G0"]}, options={"ww_deps": False})
    assert options_of(ctx) == Options(ww_deps=False, forbid=("G0",))


# --- unknown, never valid -------------------------------------------------------------------------

def test_an_op_that_cannot_be_read_makes_the_verdict_unknown_naming_it():
    h = reindex(op_pair(0, 0, "send", [["send", "x", 1]], [["send", "x", [0, 1]]])
                + op_pair(0, 1, "poll", [["poll"]], [["poll", {"x": [[0, 1]]}]])
                + op_pair(0, 2, "txn", [["write", "x", 2]], [["write", "x", 2]]))
    r = check_ops(h)
    assert r["valid"] == "unknown"
    assert r["problems"] == [{"op": 5, "why": "ok txn by process 2: unknown micro-op 'write': expected send or poll"}]
    assert "1 op(s) could not be read: op 5" in r["reason"]


def test_a_history_without_data_ops_is_unknown_naming_what_it_holds():
    h = reindex(op_pair(0, 0, "assign", ["x"], ["x"]) + op_pair(0, 0, "read", None, 3))
    r = check_ops(h)
    assert r["valid"] == "unknown" and r["ignored"] == {"read": 1}
    assert r["reason"] == "no send, poll or txn op completed: nothing to check (it holds ops of read (1))"


def test_a_polled_value_that_no_op_sent_is_unknown_naming_it():
    h = reindex(op_pair(0, 1, "poll", [["poll"]], [["poll", {"x": [[7, 99]]}]]))
    r = check_ops(h)
    assert r["valid"] == "unknown" and r["unattributed"] == [{"key": "x", "value": 99, "offset": 7}]
    assert "1 polled value(s) that no op sent: 99 of key x at offset 7" in r["reason"]


def test_an_op_never_completed_counts_as_info():
    h = reindex([o(0, 0, "invoke", "send", [["send", "x", 1]])]
                + op_pair(0, 1, "poll", [["poll"]], [["poll", {"x": [[0, 1]]}]]))
    r = check_ops(h)
    assert r["valid"] is True and r["counts"]["ops"] == 2
    # had the poll completed before the send was invoked, it would have read the future
    h = reindex(op_pair(0, 1, "poll", [["poll"]], [["poll", {"x": [[0, 1]]}]])
                + [o(0, 0, "invoke", "send", [["send", "x", 1]])])
    assert set(found(check_ops(h))) == {"G1c-realtime"}


# --- as ``check`` runs it ---------------------------------------------------------------------------

def test_check_all_folds_lists_each_kind_by_jepsen_s_name():
    h = reindex(op_pair(0, 0, "send", [["send", "x", 2]], [["send", "x", 2]], type="fail")
                + op_pair(0, 1, "poll", [["poll"]], [["poll", {"x": [[0, 2]]}]]))
    raw = check_all_folds(ops_of(h), ["kafka-txn"])
    assert raw["valid"] is False
    assert raw["anomaly_counts"]["G1a"] == 1 and raw["anomaly_counts"]["kafka-txn"] == 0
    assert set(KINDS) <= set(raw["checkers"]) and raw["checkers"]["G1a"]["anomalies"][0]["op"] == 3
    assert check_list(TxnChecker(), h)["error_kinds"] == ["G1a"]


def test_jepsen_s_txn_abort_cases_fail_and_info_polls_are_judged_but_do_not_move_the_consumer():
    # jepsen.tests.kafka-test, poll-skip-test "txn abort": sends 0..5 at offsets 0..5, then one
    # consumer's transactions
    sends = op_pair(0, 0, "send", [["send", "x", i] for i in range(6)], [["send", "x", [i, i]] for i in range(6)])
    good = reindex([*map(dict, sends),
                    *op_pair(0, 1, "txn", [["poll"]], [["poll", {"x": [[0, 0]]}]]),
                    *op_pair(0, 1, "txn", [["poll"]], [["poll", {"x": [[1, 1], [2, 2]]}]], type="fail"),
                    *op_pair(0, 1, "txn", [["poll"]], [["poll", {"x": [[1, 1], [2, 2]]}]], type="info"),
                    *op_pair(0, 1, "txn", [["poll"]], [["poll", {"x": [[1, 1], [2, 2]]}]]),
                    *op_pair(0, 2, "poll", [["poll"]], [["poll", {"x": [[i, i] for i in range(6)]}]])])
    assert found(check_ops(good)) == {}
    bad = reindex([*map(dict, sends),
                   *op_pair(0, 1, "txn", [["poll"]], [["poll", {"x": [[0, 0]]}]]),
                   *op_pair(0, 1, "txn", [["poll"]], [["poll", {"x": [[1, 1], [2, 2]]}]], type="fail"),
                   *op_pair(0, 1, "txn", [["poll"]], [["poll", {"x": [[3, 3], [4, 4]]}]], type="fail"),
                   *op_pair(0, 1, "txn", [["poll"]], [["poll", {"x": [[5, 5]]}]]),
                   *op_pair(0, 2, "poll", [["poll"]], [["poll", {"x": [[i, i] for i in range(6)]}]])])
    skips, _r = only(bad, "poll-skip")
    # as Jepsen: both later polls should have begun at 1, after the ok poll of 0
    assert [(a["ops"], a["delta"], a["skipped"]) for a in skips] == [([3, 7], 3, [1, 2]), ([3, 9], 5, [1, 2, 3, 4])]
