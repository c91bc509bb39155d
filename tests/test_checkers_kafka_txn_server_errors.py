"""The ``server-error`` kind of the Kafka workload checker (checkers/kafka_txn/server_errors.py):
frozen histories of ops that ended with INVALID_RECORD, CORRUPT_MESSAGE or
UNKNOWN_SERVER_ERROR, each named with its op, process, keys and error; when it is an error
and when it is excused; the clean case; the other spellings of those errors."""
from __future__ import annotations

from checkers.kafka_txn import KINDS, Options, check_ops, parse_forbid
from checkers.kafka_txn.server_errors import error_name, sent_keys


def o(index, process, type, f, value, **extra) -> dict:
    return {"index": index, "time": index, "process": process, "type": type, "f": f, "value": value, **extra}


def reindex(ops: list[dict]) -> list[dict]:
    for i, op in enumerate(ops):
        op["index"] = op["time"] = i
    return ops


def base() -> list[dict]:
    """An ok send of 1 to t0-0 at offset 0 and an ok poll that reads it: valid alone."""
    return [o(0, 0, "invoke", "send", [["send", "t0-0", 1]]), o(0, 0, "ok", "send", [["send", "t0-0", [0, 1]]]),
            o(0, 9, "invoke", "poll", [["poll"]]), o(0, 9, "ok", "poll", [["poll", {"t0-0": [[0, 1]]}]])]


def failed_txn(process: int, error: str, type: str = "fail", **extra) -> list[dict]:
    """A txn by ``process`` sending 7 to t1-0 and 8 to t0-1, that ended ``type`` with ``error``
    (the first send failed, the second not reached)."""
    inv = [["send", "t1-0", 7], ["poll"], ["send", "t0-1", 8]]
    return [o(0, process, "invoke", "txn", inv), o(0, process, type, "txn", inv, error=error, **extra)]


def nemesis_start() -> list[dict]:
    return [o(0, "nemesis", "invoke", "start-kill", {"kind": "one"}),
            o(0, "nemesis", "info", "start-kill", {"kind": "one", "targets": ["n2"]})]


def server_errors(r: dict) -> list[dict]:
    return r["by_kind"]["server-error"]["anomalies"]


def test_server_error_is_a_kind_of_our_own_beside_jepsen_s():
    assert "server-error" in KINDS and list(KINDS)[-1] == "server-error"


def test_invalid_record_on_a_send_makes_the_verdict_invalid_naming_op_process_keys_and_error():
    h = reindex(base() + failed_txn(3, "INVALID_RECORD", kafka_error="INVALID_RECORD"))
    r = check_ops(h)
    (a,) = server_errors(r)
    assert r["valid"] is False and r["error_kinds"] == ["server-error"]
    assert (a["op"], a["process"], a["f"], a["type"], a["keys"], a["error"], a["excused"]) == \
        (5, 3, "txn", "fail", ["t0-1", "t1-0"], "INVALID_RECORD", False)
    assert a["explanation"].startswith("op 5 (fail txn, process 3) ended with the broker's INVALID_RECORD "
                                       "sending to t0-1, t1-0: the broker judged a valid record invalid")
    assert r["by_kind"]["server-error"]["valid"] is False


def test_the_clean_case_has_no_server_error_and_other_errors_are_not_one():
    r = check_ops(reindex(base()))
    assert r["valid"] is True and server_errors(r) == [] and "server-error" not in r["allowed"]
    h = reindex(base() + failed_txn(3, "NOT_LEADER_OR_FOLLOWER", kafka_error="NOT_LEADER_OR_FOLLOWER")
                + failed_txn(4, "aborted-on-purpose") + failed_txn(5, "_MSG_TIMED_OUT", type="info"))
    r = check_ops(h)
    assert server_errors(r) == [] and r["valid"] is True


def test_corrupt_message_is_an_error_even_after_a_fault_began():
    h = reindex(base() + nemesis_start() + failed_txn(2, "CORRUPT_MESSAGE", type="info",
                                                      kafka_error="CORRUPT_MESSAGE"))
    r = check_ops(h)
    (a,) = server_errors(r)
    assert r["valid"] is False and (a["error"], a["excused"], a["type"]) == ("CORRUPT_MESSAGE", False, "info")


def test_unknown_server_error_with_no_fault_is_an_error():
    h = reindex(base() + failed_txn(1, "UNKNOWN_SERVER_ERROR", kafka_error="UNKNOWN_SERVER_ERROR"))
    r = check_ops(h)
    (a,) = server_errors(r)
    assert r["valid"] is False and a["excused"] is False
    assert a["explanation"].endswith("; no fault had begun")


def test_unknown_server_error_after_a_fault_began_is_reported_and_excused_unless_forbidden():
    h = reindex(base() + nemesis_start() + failed_txn(1, "UNKNOWN_SERVER_ERROR",
                                                      kafka_error="UNKNOWN_SERVER_ERROR"))
    r = check_ops(h)
    (a,) = server_errors(r)
    assert a["excused"] is True and "excused: a fault began at op 4" in a["explanation"]
    assert r["valid"] is True and "server-error" in r["allowed"] and r["by_kind"]["server-error"]["valid"] is True
    r = check_ops(h, Options(forbid=parse_forbid(["server-error"])))
    assert r["valid"] is False and r["error_kinds"] == ["server-error"]
    # one that is not excused beside it makes the kind an error
    h = reindex(base() + failed_txn(6, "UNKNOWN", kafka_error="UNKNOWN_SERVER_ERROR") + nemesis_start()
                + failed_txn(1, "UNKNOWN_SERVER_ERROR", kafka_error="UNKNOWN_SERVER_ERROR"))
    r = check_ops(h)
    assert [a["excused"] for a in server_errors(r)] == [False, True] and r["valid"] is False


def test_a_failed_poll_with_a_server_error_names_no_keys():
    h = reindex(base() + [o(0, 2, "invoke", "poll", [["poll"]]),
                          o(0, 2, "fail", "poll", [["poll"]], error="UnknownServerException")])
    (a,) = server_errors(check_ops(h))
    assert (a["keys"], a["error"], a["reported"]) == ([], "UNKNOWN_SERVER_ERROR", "UnknownServerException")
    assert "sending to" not in a["explanation"]


def test_ok_ops_and_never_completed_ops_are_not_read_for_errors():
    h = base()
    h[1]["error"] = "INVALID_RECORD"           # an ok op's stray error field
    h += [o(0, 4, "invoke", "send", [["send", "t0-0", 5]])]
    assert server_errors(check_ops(reindex(h))) == []


def test_the_kafka_error_field_wins_over_the_error_field():
    h = reindex(base() + failed_txn(3, "InvalidRecordException", kafka_error="INVALID_RECORD"))
    (a,) = server_errors(check_ops(h))
    assert a["error"] == "INVALID_RECORD" and "reported" not in a
    # the broker's word is NOT_ENOUGH_REPLICAS: a client's name for it does not count
    h = reindex(base() + failed_txn(3, "UNKNOWN", kafka_error="NOT_ENOUGH_REPLICAS"))
    assert server_errors(check_ops(h)) == []


def test_error_names_in_every_spelling():
    for spelled, name in [("INVALID_RECORD", "INVALID_RECORD"), ("InvalidRecordException", "INVALID_RECORD"),
                          ("INVALID_MSG", "CORRUPT_MESSAGE"), ("CorruptRecordException", "CORRUPT_MESSAGE"),
                          ("UNKNOWN", "UNKNOWN_SERVER_ERROR"), ("unknown-server-error", "UNKNOWN_SERVER_ERROR"),
                          (":corrupt-message", "CORRUPT_MESSAGE"), (("invalid-record", "details"), "INVALID_RECORD")]:
        assert error_name(spelled) == name, spelled
    for other in (None, "", "aborted-on-purpose", "_MSG_TIMED_OUT", "NOT_LEADER_OR_FOLLOWER", 3, ["crash"]):
        assert error_name(other) is None, other


def test_sent_keys_reads_invoked_and_completed_micro_ops():
    assert sent_keys([["send", "b", 1], ["poll"], ["send", "a", [3, 2]], ["send", 4, 5]]) == ["4", "a", "b"]
    assert sent_keys(None) == [] and sent_keys([["poll", {"x": [[0, 1]]}]]) == []
