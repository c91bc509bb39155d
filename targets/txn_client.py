"""The contract between the transactional queue workload (``txn``, Jepsen's Kafka workload)
and the Kafka clients that carry it out: :class:`TxnSession` (one producer and one consumer
per worker process), :class:`TxnClientFactory` (one per run, per ``--client``), the
session's settings (:class:`SessionConfig`) and its errors.

Implementations: ``targets/kafka/txn_librdkafka.py`` (confluent-kafka) and
``targets/kafka/txn_java.py`` (Kafka's Java client in a JVM, over a line protocol); the
registry of clients is ``targets/kafka/txn_clients.py``. The queue workload's own,
non-transactional client contract is ``workloads/queue.py``'s ``QueueClient``.

**Keys** are topic-partitions, ``(topic, partition)``. **Values** are ints, sent as their
decimal digits, padded to ``SessionConfig.value_bytes`` with text that is a function of the
value (``targets/txn_values.py``); a record that is not such text reads back as its text.

**A session's settings** (both clients): a producer with ``acks=all``,
``enable.idempotence=true``, ``compression.type`` (``SessionConfig.compression``) and, when
transactional, a ``transactional.id`` and ``transaction.timeout.ms``; a consumer with
``isolation.level=read_committed``, ``enable.auto.commit=false``,
``auto.offset.reset=earliest`` and a ``group.id``. Building a session does no I/O;
:meth:`TxnSession.open` connects (and runs ``initTransactions``).

**Outcomes.** Every call raises :class:`TxnDefiniteError` (a
``history.outcomes.DefiniteError``: certainly no effect, Jepsen's ``fail``) or
:class:`TxnIndefiniteError` (an ``IndefiniteError``: the effect is unknown, ``info``). Both
carry ``fatal`` (the session cannot go on: close it and open a fresh one), ``abortable``
(the open transaction must be aborted) and ``retriable`` (the library's own word), the
library's error name (``code``: librdkafka's error name in Kafka's spelling, or the Java
exception's simple class name), ``exception`` (the Java exception's full class name) and
``kafka_error``: the broker's error code by Kafka's protocol name (``INVALID_RECORD``,
``CORRUPT_MESSAGE``, ``UNKNOWN_SERVER_ERROR``...) when the error is one a broker answered
(librdkafka: a non-local ``KafkaError``; Java: an exception class of Kafka's ``Errors``
table, the exception or one of its causes), else None.

Per call, for both clients unless said (the sources: confluent-kafka's ``Producer`` and
``KafkaError`` documentation, ``retriable()``, ``txn_requires_abort()``, ``fatal()``;
librdkafka's ``rdkafka.h`` on ``rd_kafka_commit_transaction``; the javadoc of Kafka's
``KafkaProducer.commitTransaction``/``abortTransaction``/``send`` and its exception
classes):

- ``open``: any error is indefinite and fatal (``initTransactions`` may have fenced an
  older producer of the same transactional.id and aborted its transaction).
- ``assign``, ``subscribe``, ``seek_back``, ``begin``: local state only; errors are definite
  (``begin`` after a fatal error is also fatal).
- ``send``: the offset once the record is acknowledged. Definite only when the record was
  never handed to the network: librdkafka's ``produce()`` raised (``BufferError``, a local
  ``KafkaException``), or its delivery report is one of
  :data:`targets.kafka.txn_errors.RDKAFKA_LOCAL_PRODUCE`; the Java ``send()`` threw before
  returning its future. Everything else is indefinite: a timeout, NOT_LEADER_OR_FOLLOWER and
  every other broker error (with idempotence both libraries retry inside, so the last error
  does not say whether an earlier attempt was written), ``_MSG_TIMED_OUT`` (librdkafka does
  not tell Python whether a timed-out message was persisted), a dead JVM. Inside a
  transaction every send error is also ``abortable``.
- ``poll``: ``{key: [(offset, value), ...]}``, possibly empty. Reads change nothing: errors
  are definite, but timeouts and lost connections (indefinite).
- ``send_offsets`` (``send_offsets_to_transaction``): the highest offset polled since
  ``begin`` plus one, per key, with the consumer's group metadata; returns what it sent
  (``{}`` sends nothing). A retriable error is retried within the op's time; any error left
  is ``abortable``.
- ``commit``: returns once the transaction is committed. A retriable error (librdkafka:
  ``KafkaError.retriable()``, e.g. ``_TIMED_OUT``: "the commit continues in the background";
  Java: ``TimeoutException``/``InterruptException``: "it is safe to retry ... but it is not
  possible to attempt a different operation (such as abortTransaction)") is retried until the
  op's time is up, then indefinite and fatal (the commit is in doubt, and neither library
  lets the producer start another transaction meanwhile). An abortable error
  (``txn_requires_abort()``; Java: the transaction manager is in its abortable-error state,
  e.g. a ``KafkaException`` caused by a failed send, ``TransactionAbortableException``,
  ``InvalidProducerEpochException`` since KIP-588) aborts the transaction: definite when the
  abort returned, indefinite when it did not. A fatal error (``fatal()``; Java:
  ``ProducerFencedException``, ``OutOfOrderSequenceException``, ``AuthorizationException``,
  ``UnsupportedVersionException``, the manager's fatal state) and anything else are
  indefinite and fatal: an earlier attempt of this commit may have reached the coordinator.
- ``abort``: returns only when the abort certainly completed (the coordinator answered
  EndTxn(abort)); a retriable error is retried within the op's time; else indefinite and
  fatal. So the workload records a transaction it aborted (on purpose, or after a failed
  micro-op) as ``fail`` exactly when ``abort`` returned, and ``info`` when it raised.
- ``commit_offsets`` (without transactions): commits the highest offset polled since the
  last commit plus one, per key. Retriable errors are retried within the op's time;
  timeouts and lost connections are indefinite, a broker's refusal definite.
- ``close`` (the workload's ``crash``): never raises; nothing unsent is flushed and the open
  transaction is not committed or waited for (librdkafka: purged and destroyed; Java: closed
  with a zero timeout, a forced close), so the coordinator aborts it after
  ``transaction.timeout.ms``, or at once when a new session opens with the same
  transactional.id. A session whose JVM died raises indefinite, fatal errors from then on
  (the op in flight when it died included).

**Seeking back.** :meth:`TxnSession.mark` notes where an op begins (the consumer's
position on each key it has read); after a failed or indefinite op,
:meth:`TxnSession.seek_back` puts the consumer back there, and a key first read during the
op back at the first offset it read.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Mapping, Protocol, Sequence

from history.outcomes import DefiniteError, IndefiniteError
from targets.txn_values import MAX_VALUE_BYTES

#: a topic-partition
Key = tuple[str, int]
#: what a poll read: ``{key: [(offset, value), ...]}`` in offset order per key
Polled = dict[Key, list[tuple[int, object]]]


class TxnErrorInfo:
    """What a transactional client's error says besides definite/indefinite: ``fatal``,
    ``abortable``, ``retriable`` (bools), ``exception`` (the library's class name, or None)
    and ``kafka_error`` (the broker's error by Kafka's protocol name, e.g. ``INVALID_RECORD``,
    ``UNKNOWN_SERVER_ERROR``, when the error is one the broker answered; else None)."""

    fatal: bool = False
    abortable: bool = False
    retriable: bool = False
    exception: str | None = None
    kafka_error: str | None = None

    def _flags(self, fatal: bool, abortable: bool, retriable: bool, exception: str | None,
               kafka_error: str | None) -> None:
        self.fatal, self.abortable, self.retriable, self.exception = fatal, abortable, retriable, exception
        self.kafka_error = kafka_error


class TxnDefiniteError(DefiniteError, TxnErrorInfo):
    """Certainly no effect (``fail``); see the module docstring for the flags."""

    def __init__(self, code: str, message: str = "", *, fatal: bool = False, abortable: bool = False,
                 retriable: bool = False, exception: str | None = None, kafka_error: str | None = None):
        super().__init__(code, message)
        self._flags(fatal, abortable, retriable, exception, kafka_error)


class TxnIndefiniteError(IndefiniteError, TxnErrorInfo):
    """The effect is unknown (``info``); see the module docstring for the flags."""

    def __init__(self, code: str, message: str = "", *, fatal: bool = False, abortable: bool = False,
                 retriable: bool = False, exception: str | None = None, kafka_error: str | None = None):
        super().__init__(code, message)
        self._flags(fatal, abortable, retriable, exception, kafka_error)


def txn_error(definite: bool, code: str, message: str = "", **flags) -> TxnDefiniteError | TxnIndefiniteError:
    """A :class:`TxnDefiniteError` (``definite``) or :class:`TxnIndefiniteError` with the
    keyword flags ``fatal``, ``abortable``, ``retriable``, ``exception``, ``kafka_error``."""
    return (TxnDefiniteError if definite else TxnIndefiniteError)(code, message, **flags)


@dataclasses.dataclass(frozen=True)
class SessionConfig:
    """One session's settings.

    ``bootstrap``: the brokers' ``"host:port"`` (the preferred one first). ``transactional_id``:
    the producer's ``transactional.id``; None for an idempotent producer without transactions.
    ``group_id``: the consumer's group. ``timeout_ms``: the bound of each call (ms; the
    librdkafka/Java request and delivery timeouts, and the time retriable errors are retried
    in). ``transaction_timeout_ms``: ``transaction.timeout.ms`` (the coordinator aborts an
    abandoned transaction after it; short, so a crashed session does not hold the last stable
    offset back for long). ``poll_ms``: how long a poll waits for records. ``max_poll_records``:
    at most this many records per poll. ``session_timeout_ms``: the consumer group's
    ``session.timeout.ms`` (the broker's minimum is 6000 by default). ``compression``: the
    producer's ``compression.type``, one of :data:`COMPRESSION_TYPES`. ``value_bytes``: the
    size each value is padded to (bytes, 0..``targets.txn_values.MAX_VALUE_BYTES``; 0: its
    digits alone). Raises ``ValueError`` naming a bad field.
    """

    bootstrap: tuple[str, ...]
    group_id: str
    transactional_id: str | None = None
    timeout_ms: int = 10_000
    transaction_timeout_ms: int = 10_000
    poll_ms: int = 100
    max_poll_records: int = 100
    session_timeout_ms: int = 10_000
    compression: str = "none"
    value_bytes: int = 0

    def __post_init__(self) -> None:
        if not self.bootstrap or not all(isinstance(b, str) and ":" in b for b in self.bootstrap):
            raise ValueError(f"bootstrap must be non-empty 'host:port' strings, got {self.bootstrap!r}")
        if not isinstance(self.group_id, str) or not self.group_id:
            raise ValueError(f"group_id must be a non-empty string, got {self.group_id!r}")
        if self.transactional_id is not None and (not isinstance(self.transactional_id, str)
                                                  or not self.transactional_id):
            raise ValueError(f"transactional_id must be None or a non-empty string, got {self.transactional_id!r}")
        for name in ("timeout_ms", "transaction_timeout_ms", "poll_ms", "max_poll_records", "session_timeout_ms"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        check_compression(self.compression)
        check_value_bytes(self.value_bytes)

    @property
    def transactional(self) -> bool:
        """True when the producer runs transactions."""
        return self.transactional_id is not None


#: the producers' ``compression.type`` choices (both clients: librdkafka's and Kafka's names)
COMPRESSION_TYPES = ("none", "gzip", "snappy", "lz4", "zstd")


def check_compression(name: object) -> str:
    """``name`` when it is one of :data:`COMPRESSION_TYPES`; else ``ValueError`` naming them."""
    if name not in COMPRESSION_TYPES:
        raise ValueError(f"compression must be one of {', '.join(COMPRESSION_TYPES)}, got {name!r}")
    return name


def check_value_bytes(n: object) -> int:
    """``n`` when it is an int in 0..``targets.txn_values.MAX_VALUE_BYTES`` (bytes); else
    ``ValueError`` naming the range."""
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_VALUE_BYTES:
        raise ValueError(f"value_bytes must be an int from 0 to {MAX_VALUE_BYTES} (bytes), got {n!r}")
    return n


class TxnSession(Protocol):
    """One worker process's producer and consumer (see the module docstring for each call's
    errors). Calls are awaited one at a time."""

    config: SessionConfig

    async def open(self) -> dict:
        """Connect; with a transactional.id run ``initTransactions``. Returns what the session
        can tell of itself (:meth:`info`)."""

    def info(self) -> dict:
        """``{"transaction_version": 2 | 0 | None, ...}``: 2 when the session speaks KIP-890
        part 2 (transaction version 2), 0 when it speaks the original protocol, None when not
        known (not transactional, not open); a client may add more."""

    async def assign(self, keys: Sequence[Key], from_beginning: bool = False) -> None:
        """Replace the consumer's keys by ``keys`` (no group rebalance); from the start of each
        log with ``from_beginning``, else from the group's committed offsets (else the
        earliest)."""

    async def subscribe(self, keys: Sequence[Key]) -> None:
        """Replace the consumer's keys by the topics of ``keys`` (the group assigns their
        partitions)."""

    def rebalanced(self) -> list[Key]:
        """The keys the consumer's group assigned or revoked since the last call (their
        positions may have moved to the group's committed offsets: Jepsen's rebalance log);
        [] when the client cannot tell."""

    def mark(self) -> None:
        """Note where an op begins (for :meth:`seek_back`)."""

    async def seek_back(self) -> None:
        """Seek the consumer back to where the op last marked began."""

    async def send(self, key: Key, value: int) -> int:
        """Produce ``value`` to ``key``; its offset once acknowledged."""

    async def poll(self) -> Polled:
        """One poll of the consumer."""

    async def begin(self) -> None:
        """Begin a transaction."""

    async def send_offsets(self) -> dict[Key, int]:
        """``send_offsets_to_transaction`` of what this transaction polled."""

    async def commit(self) -> None:
        """Commit the transaction."""

    async def abort(self) -> None:
        """Abort the transaction; returns only when it certainly aborted."""

    async def commit_offsets(self) -> dict[Key, int]:
        """Without transactions: commit what was polled to the group."""

    async def close(self) -> None:
        """Close the producer and the consumer (a crash: nothing is flushed). Never raises."""


class TxnClientFactory(Protocol):
    """One ``--client`` for a run: :meth:`session` builds sessions, :meth:`describe` says
    what the client is (for ``test.json``), :meth:`aclose` releases what sessions share."""

    name: str

    def describe(self) -> dict:
        """E.g. ``{"client": "java", "kafka_clients": "4.4.0", ...}`` or ``{"client":
        "librdkafka", "confluent_kafka": "2.16.1", "librdkafka": "2.16.0"}``."""

    def session(self, config: SessionConfig) -> TxnSession:
        """A new session (no I/O)."""

    async def aclose(self) -> None:
        """Close what the sessions share (the JVM). Never raises."""


#: ``(kafka_version, log) -> factory``: how a registry entry builds a client's factory
FactoryMaker = Callable[[str, Callable[[str], None]], TxnClientFactory]


def offsets_after(polled: Mapping[Key, int]) -> dict[Key, int]:
    """``{key: highest offset polled + 1}``: the offsets a consumer commits for what it read."""
    return {k: o + 1 for k, o in polled.items()}
