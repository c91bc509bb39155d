"""What a transactional Kafka client's error means for the history: the I/O-free rules
behind ``targets/txn_client.py``'s table of outcomes, for both clients.

A client driver (``txn_librdkafka.py``, ``txn_java.py``) raises :class:`LibraryError`, the
library's own account of an error: its name, whether the library calls it retriable,
abortable (the transaction must be aborted) or fatal (the producer cannot go on), and for a
send whether the record was never handed to the network. :func:`outcome` turns it into
``targets.txn_client``'s :class:`TxnDefiniteError` or :class:`TxnIndefiniteError` for one
call.

Sources: confluent-kafka's ``KafkaError`` (``retriable()``, ``txn_requires_abort()``,
``fatal()``) and librdkafka's ``rdkafka.h`` (error codes, ``rd_kafka_commit_transaction``);
the javadoc of Kafka's ``KafkaProducer`` (``send``, ``commitTransaction``,
``abortTransaction``) and of ``org.apache.kafka.common.errors``.
"""
from __future__ import annotations

import dataclasses

from targets.txn_client import TxnDefiniteError, TxnIndefiniteError, txn_error

#: the calls of a session, as :func:`outcome` knows them
CALLS = frozenset({"open", "assign", "subscribe", "seek", "begin", "send", "poll", "send_offsets",
                   "commit", "abort", "commit_offsets"})
#: calls that only change the client's own state: an error is definite
LOCAL_CALLS = frozenset({"assign", "subscribe", "seek", "begin"})

#: librdkafka delivery-report errors after which the message was certainly never sent:
#: purged from the queue before sending, or refused by the client itself (rdkafka.h:
#: ``_PURGE_QUEUE`` "purged from queue", the ``_MSG_SIZE_TOO_LARGE``/``_UNKNOWN_*`` local
#: checks). ``_PURGE_INFLIGHT`` (purged while in flight) and ``_MSG_TIMED_OUT`` are not here.
RDKAFKA_LOCAL_PRODUCE = frozenset({"_PURGE_QUEUE", "_MSG_SIZE_TOO_LARGE", "_INVALID_ARG", "_UNKNOWN_PARTITION",
                                   "_UNKNOWN_TOPIC", "_QUEUE_FULL", "_STATE", "_NOT_IMPLEMENTED"})
#: errors that say the request's answer never came: its effect is unknown
TIMEOUT_CODES = frozenset({
    # librdkafka (Kafka's spelling)
    "_TIMED_OUT", "_MSG_TIMED_OUT", "REQUEST_TIMED_OUT", "_TRANSPORT", "_ALL_BROKERS_DOWN", "_TIMED_OUT_QUEUE",
    "NETWORK_EXCEPTION", "_PURGE_INFLIGHT",
    # the Java client (simple class names)
    "TimeoutException", "InterruptException", "DisconnectException", "NetworkException",
})
#: librdkafka's names -> Kafka's (its ``Errors`` enum), where they differ: rdkafka.h keeps
#: older names for codes -1, 2, 3, 4, 6, 10, 11 and 17
RENAMED = {"UNKNOWN": "UNKNOWN_SERVER_ERROR", "INVALID_MSG": "CORRUPT_MESSAGE",
           "UNKNOWN_TOPIC_OR_PART": "UNKNOWN_TOPIC_OR_PARTITION", "INVALID_MSG_SIZE": "INVALID_FETCH_SIZE",
           "NOT_LEADER_FOR_PARTITION": "NOT_LEADER_OR_FOLLOWER", "MSG_SIZE_TOO_LARGE": "MESSAGE_TOO_LARGE",
           "STALE_CTRL_EPOCH": "STALE_CONTROLLER_EPOCH", "TOPIC_EXCEPTION": "INVALID_TOPIC_EXCEPTION"}
#: the code of an error raised because the client (the JVM) died
CRASHED = "client-crashed"


@dataclasses.dataclass
class LibraryError(Exception):
    """An error as the client library reports it.

    ``code``: librdkafka's error name in Kafka's spelling (``NOT_LEADER_OR_FOLLOWER``,
    ``_MSG_TIMED_OUT``), or the Java exception's simple class name (``TimeoutException``).
    ``retriable``/``abortable``/``fatal``: the library's flags (librdkafka ``retriable()``,
    ``txn_requires_abort()``, ``fatal()``; Java ``RetriableException``, the transaction
    manager's abortable and fatal states). ``exception``: the Java class's full name.
    ``local``: the request was refused before it was handed to the network (librdkafka's
    ``produce()`` raised; Java's ``send()`` threw before returning its future). ``crashed``:
    the client process died (every flag then says nothing). ``kafka_error``: the broker's
    error by Kafka's protocol name when a broker answered it (librdkafka's names renamed as
    :data:`RENAMED`), else None.
    """

    code: str
    message: str = ""
    retriable: bool = False
    abortable: bool = False
    fatal: bool = False
    exception: str | None = None
    local: bool = False
    crashed: bool = False
    kafka_error: str | None = None

    def __post_init__(self) -> None:
        self.code = RENAMED.get(self.code, self.code)
        if self.kafka_error is not None:
            self.kafka_error = RENAMED.get(self.kafka_error, self.kafka_error)
        super().__init__(f"{self.code}: {self.message}" if self.message else self.code)

    @property
    def timeout(self) -> bool:
        """True when the error says only that no answer came in time (or the link broke)."""
        return self.code in TIMEOUT_CODES or self.crashed


def outcome(call: str, err: LibraryError, *, in_txn: bool = False,
            client: str = "librdkafka") -> TxnDefiniteError | TxnIndefiniteError:
    """The history's reading of ``err`` raised by ``call`` (a name of :data:`CALLS`) after any
    retries the call makes, for ``client`` (``librdkafka`` or ``java``); ``in_txn``: the call
    ran inside a transaction (then a send's error is abortable). The rules are
    ``targets/txn_client.py``'s table: ``commit`` and ``abort`` come here only for what is
    left once retriable errors ran out of time and abortable ones were aborted. Raises
    ``ValueError`` for an unknown call."""
    if call not in CALLS:
        raise ValueError(f"unknown session call {call!r}; known: {sorted(CALLS)}")
    flags = {"fatal": err.fatal, "abortable": err.abortable, "retriable": err.retriable, "exception": err.exception,
             "kafka_error": err.kafka_error}
    text = f"{call}: {err.message}" if err.message else call
    if err.crashed:
        return txn_error(False, CRASHED, text, **{**flags, "fatal": True})
    if call == "open":
        return txn_error(False, err.code, text, **{**flags, "fatal": True})
    if call in LOCAL_CALLS:
        return txn_error(True, err.code, text, **flags)
    if call == "send":
        definite = err.local or (client == "librdkafka" and err.code in RDKAFKA_LOCAL_PRODUCE)
        return txn_error(definite, err.code, text, **{**flags, "abortable": err.abortable or in_txn})
    if call in ("poll", "commit_offsets"):
        return txn_error(not err.timeout, err.code, text, **flags)
    if call == "send_offsets":
        return txn_error(not err.timeout and not err.fatal, err.code, text, **{**flags, "abortable": True})
    # commit, abort: in doubt. Neither library lets a producer go on to another transaction
    # while one is in doubt (a timed-out commit may only be retried, KafkaProducer's javadoc;
    # librdkafka's commit "continues in the background"): the session is done
    return txn_error(False, err.code, text, **{**flags, "fatal": True})


def should_retry(err: LibraryError) -> bool:
    """True when a transactional call (``commit``, ``abort``, ``send_offsets``,
    ``commit_offsets``, ``open``) may be made again after ``err``: the library calls it
    retriable, and it is neither fatal nor a dead client."""
    return err.retriable and not err.fatal and not err.crashed


def must_abort(err: LibraryError) -> bool:
    """True when a failed commit must be followed by an abort: the library says the
    transaction requires one (and the producer is not fatally broken)."""
    return err.abortable and not err.fatal and not err.crashed
