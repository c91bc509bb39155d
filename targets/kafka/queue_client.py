"""The queue workload's client for Apache Kafka's brokers (``--db kafka``): confluent-kafka
(librdkafka) with the options the workload asks for, each call one op of the history.

:class:`KafkaQueueClient` is a ``QueueClient`` (workloads/queue.py):

- ``send``: a ``Producer`` with ``acks`` from the options, idempotence off unless asked
  (``enable.idempotence``), and no retries of its own (``retries=0``), so that every
  attempt is visible in the history. ``message.timeout.ms`` = ``request.timeout.ms`` =
  the op timeout. The delivery report decides the outcome.
- ``poll``: a ``Consumer`` with ``assign()`` at the given offset (no group, no commits;
  ``auto.offset.reset=error``, so an offset out of range is an error, never a silent
  jump), ``isolation.level`` ``read_committed`` unless the client is built with another.
- ``end_offset``: ``get_watermark_offsets`` (ListOffsets, not cached): the high
  watermark (the last stable offset under read_committed; the same without transactions).
- ``create_topic``: ``AdminClient.create_topics`` with the topic configs
  (``min.insync.replicas``, ``unclean.leader.election.enable``, ...).

Errors: :class:`history.outcomes.DefiniteError` when the request certainly had no effect:
a message never sent (purged from the queue, or refused locally), a refusal every attempt
would get alike (size, acks, authorization), and every error of a read;
:class:`history.outcomes.IndefiniteError` otherwise (see :data:`PRODUCE_DEFINITE` for why a
broker's NOT_LEADER_OR_FOLLOWER or NOT_ENOUGH_REPLICAS is among these): NOT_ENOUGH_REPLICAS_AFTER_APPEND,
REQUEST_TIMED_OUT, a message timed out (``_MSG_TIMED_OUT``: librdkafka's Python binding
does not say whether it was sent), a lost connection, any other code. Codes are Kafka's
names; librdkafka's ``NOT_LEADER_FOR_PARTITION`` and ``UNKNOWN_TOPIC_OR_PART`` are
reported as NOT_LEADER_OR_FOLLOWER and UNKNOWN_TOPIC_OR_PARTITION.
"""
from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from typing import Any, Sequence

from history import outcomes
from targets.base import QueueClientOptions

log = logging.getLogger("kraft_chaos.targets.kafka.queue")

#: librdkafka's names -> Kafka's
RENAMED = {"NOT_LEADER_FOR_PARTITION": "NOT_LEADER_OR_FOLLOWER", "UNKNOWN_TOPIC_OR_PART": "UNKNOWN_TOPIC_OR_PARTITION"}
#: delivery errors (Kafka's names) after which the record certainly is in no log: the ones
#: librdkafka raises before sending, and the broker's answers that every attempt of the same
#: request would get alike (its size, acks or authorization). A broker's refusal that depends
#: on the moment (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, LEADER_NOT_AVAILABLE, an unknown
#: topic or partition, a fenced or unknown epoch) is not: librdkafka re-sends a message after
#: a leader change even with ``retries=0``, so the error it reports may answer a second
#: attempt while the first was appended by the old leader. Seen on 4.1.0 (a send refused with
#: NOT_ENOUGH_REPLICAS by the new leader, after 155 ms, was in the old leader's log, which ELR
#: elected again later): such an error is indefinite.
PRODUCE_DEFINITE = frozenset({
    "_UNKNOWN_PARTITION", "_UNKNOWN_TOPIC", "INVALID_REQUIRED_ACKS", "MSG_SIZE_TOO_LARGE", "_MSG_SIZE_TOO_LARGE",
    "_QUEUE_FULL", "_INVALID_ARG", "TOPIC_AUTHORIZATION_FAILED", "_PURGE_QUEUE",
})
#: CreateTopics errors after which the topic certainly was not created
CREATE_DEFINITE = frozenset({
    "TOPIC_ALREADY_EXISTS", "INVALID_REPLICATION_FACTOR", "INVALID_PARTITIONS", "INVALID_CONFIG", "INVALID_TOPIC_EXCEPTION",
    "POLICY_VIOLATION", "INVALID_REQUEST", "UNSUPPORTED_VERSION", "TOPIC_AUTHORIZATION_FAILED",
    "CLUSTER_AUTHORIZATION_FAILED", "NOT_CONTROLLER", "_INVALID_ARG",
})
#: read errors that are timeouts: the read's outcome is unknown like any timeout
READ_TIMEOUTS = frozenset({"_TIMED_OUT", "REQUEST_TIMED_OUT", "_TRANSPORT"})
#: how long one poll waits for its first record (s); later records come without waiting
POLL_WAIT_S = 0.2


class _RdkafkaLog:
    """librdkafka's log lines go to ``kraft_chaos.rdkafka`` at DEBUG (a broker that is down
    makes every client log an error per reconnect; the history has the ops' errors)."""

    def __init__(self) -> None:
        self.logger = logging.getLogger("kraft_chaos.rdkafka")

    def log(self, _level: int, msg: str, *args) -> None:
        self.logger.debug(msg, *args)


RDKAFKA_LOG = _RdkafkaLog()


def error_name(err: Any) -> str:
    """Kafka's name of a ``confluent_kafka.KafkaError`` (or of an exception carrying one)."""
    if isinstance(err, BaseException):
        err = err.args[0] if err.args else None
    name = err.name() if hasattr(err, "name") else type(err).__name__
    return RENAMED.get(name, name)


def client_error(err: Any, definite: frozenset[str] | None, what: str) -> outcomes.ClientError:
    """``err`` (a KafkaError, or an exception carrying one) as a DefiniteError when its name
    is in ``definite`` (``None``: every name but :data:`READ_TIMEOUTS`), else IndefiniteError."""
    name = error_name(err)
    inner = err.args[0] if isinstance(err, BaseException) and err.args else err
    text = inner.str() if hasattr(inner, "str") else str(err)
    sure = name not in READ_TIMEOUTS if definite is None else name in definite
    return (outcomes.DefiniteError if sure else outcomes.IndefiniteError)(name, f"{what}: {text}")


def acks_config(acks: Any) -> str:
    """librdkafka's ``acks`` for 0, 1, -1 or ``"all"``; raises ``ValueError`` otherwise."""
    if acks in ("all", -1) and not isinstance(acks, bool):
        return "all"
    if acks in (0, 1) and not isinstance(acks, bool):
        return str(acks)
    raise ValueError(f"acks must be 0, 1, -1 or 'all', got {acks!r}")


def topic_config(configs: dict) -> dict[str, str]:
    """Topic configs as Kafka's strings (booleans lower case). Raises ``ValueError`` for a
    key or value that is not a scalar."""
    out = {}
    for k, v in dict(configs).items():
        if not isinstance(k, str) or not k or not isinstance(v, (str, int, float, bool)):
            raise ValueError(f"bad topic config {k!r}={v!r}")
        out[k] = str(v).lower() if isinstance(v, bool) else str(v)
    return out


def decode_value(raw: bytes | None) -> Any:
    """A record's value as the int the workload sent (ASCII digits), else the text as is."""
    text = raw.decode("utf-8", "replace") if raw is not None else None
    try:
        return int(text)
    except (TypeError, ValueError):
        return text


class KafkaQueueClient:
    """A ``QueueClient`` for Kafka's brokers at ``bootstrap`` (``"host:port"`` each).

    ``timeout_ms``: bounds each op (ms). ``acks``: 0, 1, -1/"all". ``idempotence``:
    ``enable.idempotence`` (then librdkafka retries inside, as Kafka's producer must).
    ``isolation``: ``read_committed`` or ``read_uncommitted``. Raises ``ValueError`` for
    bad arguments. Each blocking librdkafka call runs in a thread, one at a time per
    client.
    """

    def __init__(self, bootstrap: Sequence[str], *, timeout_ms: int = 5000,
                 acks: Any = -1, idempotence: bool = False, isolation: str = "read_committed"):
        if not bootstrap:
            raise ValueError("the Kafka queue client needs at least one broker endpoint")
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms <= 0:
            raise ValueError(f"timeout_ms must be a positive int, got {timeout_ms!r}")
        if isolation not in ("read_committed", "read_uncommitted"):
            raise ValueError(f"isolation must be read_committed or read_uncommitted, got {isolation!r}")
        self.bootstrap, self.timeout_ms = ",".join(bootstrap), timeout_ms
        self.acks, self.idempotence, self.isolation = acks_config(acks), bool(idempotence), isolation
        if self.idempotence and self.acks != "all":
            raise ValueError(f"idempotence needs acks=all (-1), got acks={acks!r}")
        self.common = {"bootstrap.servers": self.bootstrap, "socket.timeout.ms": timeout_ms,
                       "topic.metadata.refresh.interval.ms": 1000, "reconnect.backoff.max.ms": 1000,
                       "metadata.max.age.ms": 3000}
        self._producer = self._consumer = self._admin = None
        self._poller: threading.Thread | None = None
        self._closed = threading.Event()
        self._lock = asyncio.Lock()
        self._position: tuple[str, int, int] | None = None    # (topic, partition, next offset) assigned

    # -- the librdkafka objects, made on first use -------------------------------------------
    def producer(self):
        """The Producer, and a thread serving its delivery reports."""
        if self._producer is None:
            from confluent_kafka import Producer
            conf = {**self.common, "acks": self.acks, "enable.idempotence": self.idempotence,
                    "request.timeout.ms": self.timeout_ms, "message.timeout.ms": self.timeout_ms,
                    "linger.ms": 0}
            if not self.idempotence:
                conf["retries"] = 0
            self._producer = Producer(conf, logger=RDKAFKA_LOG)
            self._poller = threading.Thread(target=self._serve_reports, name="kafka-queue-producer", daemon=True)
            self._poller.start()
        return self._producer

    def _serve_reports(self) -> None:
        while not self._closed.is_set():
            self._producer.poll(0.05)

    def consumer(self):
        """The Consumer (assign() only: no group membership, no commits)."""
        if self._consumer is None:
            from confluent_kafka import Consumer
            self._consumer = Consumer({**self.common, "group.id": f"kraft-chaos-{uuid.uuid4().hex[:12]}",
                                       "enable.auto.commit": False, "enable.auto.offset.store": False,
                                       "auto.offset.reset": "error", "isolation.level": self.isolation,
                                       "enable.partition.eof": False, "fetch.wait.max.ms": 100},
                                      logger=RDKAFKA_LOG)
        return self._consumer

    def admin(self):
        if self._admin is None:
            from confluent_kafka.admin import AdminClient
            self._admin = AdminClient({**self.common, "request.timeout.ms": self.timeout_ms, "retries": 0},
                                      logger=RDKAFKA_LOG)
        return self._admin

    # -- the QueueClient interface ------------------------------------------------------------
    async def create_topic(self, topic: str, partitions: int, replication_factor: int, configs: dict) -> None:
        """CreateTopics with ``configs`` (Kafka's names; booleans as ``true``/``false``);
        returns once the controller created it. Raises as the module says
        (TOPIC_ALREADY_EXISTS, INVALID_CONFIG for an unknown topic setting,
        INVALID_REPLICATION_FACTOR, ...: definite; a timeout: indefinite)."""
        from confluent_kafka.admin import NewTopic
        new = NewTopic(topic, partitions, replication_factor, config=topic_config(configs))
        timeout_s = self.timeout_ms / 1000.0
        (fut,) = self.admin().create_topics([new], operation_timeout=timeout_s, request_timeout=timeout_s).values()
        try:
            await asyncio.wait_for(asyncio.wrap_future(fut), timeout_s + 1.0)
        except TimeoutError:
            raise outcomes.IndefiniteError("timeout", f"CreateTopics {topic}: no answer within {timeout_s:g} s") from None
        except Exception as e:    # confluent_kafka.KafkaException
            raise client_error(e, CREATE_DEFINITE, f"CreateTopics {topic}") from None

    async def send(self, topic: str, partition: int, value: int) -> int:
        """Produce ``value`` (its decimal digits) to the partition; returns its offset once
        delivered (-1 at acks=0). Raises as the module says."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future = loop.create_future()

        def report(err, msg) -> None:     # on the producer's poll thread
            loop.call_soon_threadsafe(lambda: done.done() or done.set_result((err, msg)))

        try:
            self.producer().produce(topic, value=str(value).encode(), partition=partition, on_delivery=report)
        except BufferError:
            raise outcomes.DefiniteError("_QUEUE_FULL", "the producer's queue is full") from None
        except Exception as e:     # KafkaException: refused locally, nothing sent
            raise client_error(e, None, f"produce to {topic}-{partition}") from None
        try:
            err, msg = await asyncio.wait_for(done, self.timeout_ms / 1000.0 + 2.0)
        except TimeoutError:
            raise outcomes.IndefiniteError("timeout", f"no delivery report for {topic}-{partition} "
                                          f"within {self.timeout_ms} ms") from None
        if err is not None:
            raise client_error(err, PRODUCE_DEFINITE, f"produce to {topic}-{partition}")
        offset = msg.offset()
        return offset if offset is not None and offset >= 0 else -1

    async def poll(self, topic: str, partition: int, offset: int, max_records: int) -> list[tuple[int, Any]]:
        """Up to ``max_records`` ``(offset, value)`` from ``offset`` (waiting up to
        :data:`POLL_WAIT_S` for the first; an empty list when none came). Raises
        :class:`history.outcomes.DefiniteError` OFFSET_OUT_OF_RANGE for an offset outside the
        log, another DefiniteError for other errors, IndefiniteError on a timeout."""
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise outcomes.DefiniteError("OFFSET_OUT_OF_RANGE", f"poll {topic}-{partition}: bad offset {offset!r}")
        async with self._lock:
            return await asyncio.to_thread(self._poll, topic, partition, offset, max_records)

    def _poll(self, topic: str, partition: int, offset: int, max_records: int) -> list[tuple[int, Any]]:
        from confluent_kafka import KafkaError, TopicPartition
        c = self.consumer()
        if self._position != (topic, partition, offset):
            c.assign([TopicPartition(topic, partition, offset)])
        out: list[tuple[int, Any]] = []
        wait = POLL_WAIT_S
        while len(out) < max_records:
            m = c.poll(wait)
            if m is None:
                break
            wait = 0
            err = m.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    continue
                self._position = None
                if err.code() in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
                    raise outcomes.DefiniteError("OFFSET_OUT_OF_RANGE", f"poll {topic}-{partition} at {offset}: "
                                                f"{err.str()}")
                if out:       # what came before the error was read
                    break
                raise client_error(err, None, f"poll {topic}-{partition} at {offset}")
            if m.topic() == topic and m.partition() == partition and m.offset() >= offset:
                out.append((m.offset(), decode_value(m.value())))
        self._position = (topic, partition, out[-1][0] + 1 if out else offset)
        return out

    async def end_offset(self, topic: str, partition: int) -> int:
        """The partition's high watermark (ListOffsets via ``get_watermark_offsets``). Raises
        as :meth:`poll`."""
        from confluent_kafka import TopicPartition
        async with self._lock:
            try:
                _low, high = await asyncio.to_thread(self.consumer().get_watermark_offsets,
                                                     TopicPartition(topic, partition),
                                                     self.timeout_ms / 1000.0, False)
            except Exception as e:
                raise client_error(e, None, f"end offset of {topic}-{partition}") from None
        return int(high)

    async def close(self) -> None:
        """Stop the report thread, flush the producer briefly and close the consumer;
        idempotent."""
        self._closed.set()
        if self._poller is not None:
            await asyncio.to_thread(self._poller.join, 1.0)
            self._poller = None
        if self._producer is not None:
            await asyncio.to_thread(self._producer.flush, 1.0)
            self._producer = None
        if self._consumer is not None:
            consumer, self._consumer = self._consumer, None
            await asyncio.to_thread(consumer.close)
        self._admin = None


def kafka_queue_factory(bootstrap: Sequence[str], options: QueueClientOptions) -> KafkaQueueClient:
    """The factory ``(bootstrap, options) -> KafkaQueueClient`` the kafka target hands the
    queue workload (workloads/queue.py's contract): the options' ``timeout_ms``, ``acks`` and
    ``idempotence`` (:class:`targets.base.QueueClientOptions`); consumers read committed
    records. Building one does no I/O."""
    return KafkaQueueClient(bootstrap, timeout_ms=options.timeout_ms, acks=options.acks,
                            idempotence=options.idempotence)


def wait_for_brokers(bootstrap: Sequence[str], want: set[int], timeout_s: float) -> bool:
    """Until a Metadata answer (``AdminClient.list_topics``) lists every broker id of
    ``want`` (Kafka lists registered, unfenced brokers), or ``timeout_s`` (s) passed; True
    when it did. Blocking."""
    import time
    from confluent_kafka.admin import AdminClient
    if not want:
        return True
    admin = AdminClient({"bootstrap.servers": ",".join(bootstrap), "socket.timeout.ms": 2000}, logger=RDKAFKA_LOG)
    deadline, seen = time.monotonic() + timeout_s, set()
    while True:
        try:
            seen = set(admin.list_topics(timeout=2.0).brokers)
        except Exception:      # KafkaException: no broker answered yet
            seen = set()
        if want <= seen:
            return True
        if time.monotonic() >= deadline:
            log.warning("brokers %s not all registered within %.0f s (seen: %s)", sorted(want), timeout_s,
                        sorted(seen))
            return False
        time.sleep(0.5)
