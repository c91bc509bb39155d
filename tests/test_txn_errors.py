"""targets/kafka/txn_errors.py: which library errors are ``fail`` and which ``info``, call by
call, for both clients, and when a call is retried or its transaction aborted."""
from __future__ import annotations

import pytest

from history.outcomes import DefiniteError, IndefiniteError
from targets.kafka.txn_errors import CRASHED, LibraryError, must_abort, outcome, should_retry
from targets.txn_client import TxnDefiniteError, TxnIndefiniteError


def kinds(call, err, **kw):
    e = outcome(call, err, **kw)
    return ("fail" if isinstance(e, DefiniteError) else "info"), e


def test_the_errors_are_the_historys():
    e = outcome("poll", LibraryError("UNKNOWN_TOPIC_OR_PART", "x"))
    assert isinstance(e, TxnDefiniteError) and isinstance(e, DefiniteError)
    assert e.code == "UNKNOWN_TOPIC_OR_PARTITION"            # Kafka's spelling
    e = outcome("poll", LibraryError("_TIMED_OUT"))
    assert isinstance(e, TxnIndefiniteError) and isinstance(e, IndefiniteError)


@pytest.mark.parametrize("code,local,client,want", [
    # librdkafka: refused or purged before it was sent
    ("_QUEUE_FULL", True, "librdkafka", "fail"),
    ("_UNKNOWN_PARTITION", False, "librdkafka", "fail"),
    ("_PURGE_QUEUE", False, "librdkafka", "fail"),
    # sent (maybe several times: idempotence retries inside): unknown
    ("_MSG_TIMED_OUT", False, "librdkafka", "info"),
    ("NOT_LEADER_FOR_PARTITION", False, "librdkafka", "info"),
    ("NOT_ENOUGH_REPLICAS", False, "librdkafka", "info"),
    ("_PURGE_INFLIGHT", False, "librdkafka", "info"),
    # Java: send() threw before returning its future / the future failed
    ("KafkaException", True, "java", "fail"),
    ("TimeoutException", False, "java", "info"),
    ("NotLeaderOrFollowerException", False, "java", "info"),
    ("_UNKNOWN_PARTITION", False, "java", "info"),        # librdkafka's local list is librdkafka's
])
def test_send(code, local, client, want):
    kind, e = kinds("send", LibraryError(code, local=local), client=client)
    assert kind == want
    assert not e.abortable
    assert outcome("send", LibraryError(code, local=local), client=client, in_txn=True).abortable


def test_not_leader_is_info_and_named_as_kafka_does():
    kind, e = kinds("send", LibraryError("NOT_LEADER_FOR_PARTITION"))
    assert kind == "info" and e.code == "NOT_LEADER_OR_FOLLOWER"


def test_reads_fail_unless_they_timed_out():
    assert kinds("poll", LibraryError("OFFSET_OUT_OF_RANGE"))[0] == "fail"
    assert kinds("poll", LibraryError("IllegalStateException", exception="java.lang.IllegalStateException"),
                 client="java")[0] == "fail"
    for code in ("_TIMED_OUT", "_TRANSPORT", "TimeoutException", "DisconnectException"):
        assert kinds("poll", LibraryError(code))[0] == "info", code
    assert kinds("commit_offsets", LibraryError("REBALANCE_IN_PROGRESS"))[0] == "fail"
    assert kinds("commit_offsets", LibraryError("REQUEST_TIMED_OUT"))[0] == "info"


def test_local_calls_fail_and_open_is_info_and_fatal():
    for call in ("assign", "subscribe", "seek", "begin"):
        kind, e = kinds(call, LibraryError("_STATE", fatal=True))
        assert kind == "fail" and e.fatal
    kind, e = kinds("open", LibraryError("_TIMED_OUT", retriable=True))
    assert kind == "info" and e.fatal


def test_commit_and_abort_left_over_are_in_doubt_and_fatal():
    for call in ("commit", "abort"):
        for err in (LibraryError("_TIMED_OUT", retriable=True), LibraryError("ProducerFencedException", fatal=True),
                    LibraryError("IllegalStateException")):
            kind, e = kinds(call, err)
            assert kind == "info" and e.fatal, (call, err)


def test_send_offsets_is_abortable_and_info_when_it_timed_out():
    kind, e = kinds("send_offsets", LibraryError("_TIMED_OUT", retriable=True))
    assert kind == "info" and e.abortable
    kind, e = kinds("send_offsets", LibraryError("GROUP_AUTHORIZATION_FAILED"))
    assert kind == "fail" and e.abortable


def test_a_dead_client_is_info_and_fatal_whatever_the_call():
    for call in ("assign", "send", "poll", "begin", "commit", "abort"):
        kind, e = kinds(call, LibraryError(CRASHED, "gone", crashed=True, local=True))
        assert kind == "info" and e.fatal and e.code == CRASHED


def test_flags_travel_and_retry_and_abort_rules():
    e = outcome("commit", LibraryError("KafkaException", abortable=True, exception="org.apache.kafka.common.KafkaException"))
    assert e.abortable and e.exception == "org.apache.kafka.common.KafkaException"
    assert should_retry(LibraryError("_TIMED_OUT", retriable=True))
    assert not should_retry(LibraryError("_TIMED_OUT", retriable=True, fatal=True))
    assert not should_retry(LibraryError(CRASHED, retriable=True, crashed=True))
    assert not should_retry(LibraryError("INVALID_TXN_STATE"))
    assert must_abort(LibraryError("_INCONSISTENT", abortable=True))
    assert not must_abort(LibraryError("PRODUCER_FENCED", abortable=True, fatal=True))


def test_unknown_call():
    with pytest.raises(ValueError, match="unknown session call"):
        outcome("flush", LibraryError("x"))
