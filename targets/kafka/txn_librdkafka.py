"""The ``librdkafka`` transactional client: confluent-kafka's ``Producer`` and ``Consumer``
as a :class:`targets.kafka.txn_session.Driver`, and its factory.

Settings (``targets/txn_client.py``): the producer has ``acks=all``,
``enable.idempotence=true``, ``linger.ms=0``, the session's ``compression.type``,
``message.timeout.ms`` = ``request.timeout.ms`` = the op timeout and, when transactional,
``transactional.id`` and ``transaction.timeout.ms``; the consumer ``isolation.level=read_committed``,
``enable.auto.commit=false``, ``enable.auto.offset.store=false``,
``auto.offset.reset=earliest`` and the session's ``group.id``. librdkafka's blocking calls
run in a thread each, one at a time per session; the producer's delivery reports are
served by a thread of the session's own.

Errors become :class:`targets.kafka.txn_errors.LibraryError` with librdkafka's own flags
(``KafkaError.retriable()``, ``txn_requires_abort()``, ``fatal()``); a ``produce()`` that
raised (``BufferError``, ``KafkaException``) is ``local``. librdkafka speaks the original
transaction protocol only (EndTxn v0-1, AddPartitionsToTxn v0-3: no KIP-890 part 2), so a
session's ``transaction_version`` is 0.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from typing import Any, Callable, Mapping, Sequence

from targets.kafka.queue_client import RDKAFKA_LOG
from targets.kafka.txn_errors import LibraryError
from targets.kafka.txn_session import Session
from targets.txn_client import Key, SessionConfig
from targets.txn_values import decode_value, encode_value

NAME = "librdkafka"
#: seconds a session's close waits for the consumer to leave its group
CLOSE_WAIT_S = 10.0
#: how long past its session's longest timeout a blocking librdkafka call may take before the
#: session gives up on it (s)
HANG_GRACE_S = 10.0
log = logging.getLogger("kraft_chaos.targets.kafka.txn")


def library_error(err: Any, *, local: bool = False) -> LibraryError:
    """A ``KafkaError`` (or a ``KafkaException`` carrying one, or a ``BufferError``) as a
    :class:`LibraryError` with librdkafka's flags; a broker's code (>= -1, librdkafka's own
    are below) also as ``kafka_error``, by Kafka's name."""
    if isinstance(err, BufferError):
        return LibraryError("_QUEUE_FULL", str(err), local=True)
    if isinstance(err, BaseException):
        inner = err.args[0] if err.args else None
        if not hasattr(inner, "name"):
            return LibraryError(type(err).__name__, str(err), local=local)
        err = inner
    code = err.code()
    broker = isinstance(code, int) and code >= -1 and code != 0     # librdkafka's own errors are < -1
    return LibraryError(err.name(), err.str(), retriable=bool(err.retriable()),
                        abortable=bool(err.txn_requires_abort()), fatal=bool(err.fatal()), local=local,
                        kafka_error=err.name() if broker else None)


class RdkafkaDriver:
    """confluent-kafka's producer and consumer for one session."""

    def __init__(self, config: SessionConfig):
        self.config = config
        self.producer = self.consumer = None
        self._reports: threading.Thread | None = None
        self._closed = threading.Event()
        self._assigned: list[Key] | None = None       # None: subscribed (or nothing yet)
        self._subscribed = False
        self._rebalanced: set[Key] = set()
        # the session's own threads for librdkafka's blocking calls: a call that hangs past
        # its own timeout (send_offsets_to_transaction has been seen to) is abandoned here and
        # holds one of these, never a thread of the event loop's shared default executor,
        # whose few threads every other blocking call of the run (nemesis, clients) waits on
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="txn-rdkafka-call")

    def _producer_conf(self) -> dict:
        c = self.config
        conf = {"bootstrap.servers": ",".join(c.bootstrap), "acks": "all", "enable.idempotence": True,
                "linger.ms": 0, "compression.type": c.compression, "request.timeout.ms": c.timeout_ms,
                "message.timeout.ms": c.timeout_ms,
                "socket.timeout.ms": c.timeout_ms, "reconnect.backoff.max.ms": 1000,
                "topic.metadata.refresh.interval.ms": 1000, "metadata.max.age.ms": 3000}
        if c.transactional_id is not None:
            conf.update({"transactional.id": c.transactional_id,
                         "transaction.timeout.ms": c.transaction_timeout_ms})
        return conf

    def _consumer_conf(self) -> dict:
        c = self.config
        return {"bootstrap.servers": ",".join(c.bootstrap), "group.id": c.group_id,
                "isolation.level": "read_committed", "enable.auto.commit": False,
                "enable.auto.offset.store": False, "auto.offset.reset": "earliest",
                "enable.partition.eof": False, "session.timeout.ms": c.session_timeout_ms,
                "heartbeat.interval.ms": max(100, c.session_timeout_ms // 5), "fetch.wait.max.ms": 100,
                "socket.timeout.ms": c.timeout_ms, "reconnect.backoff.max.ms": 1000,
                "topic.metadata.refresh.interval.ms": 1000, "metadata.max.age.ms": 3000}

    def _serve_reports(self) -> None:
        """Serve the producer's delivery reports until the session closes. ``poll`` raises a
        fatal error (e.g. INVALID_TXN_STATE after a failed EndTxn) once, and the session's
        next call raises it too: the thread notes it and serves on."""
        producer = self.producer
        while not self._closed.is_set():
            try:
                producer.poll(0.05)
            except Exception as e:      # noqa: BLE001 - confluent_kafka.KafkaException
                log.debug("producer poll: %r", e)
                self._closed.wait(0.05)

    def _hang_bound_s(self) -> float:
        """How long a blocking call may take before it is abandoned, s: the longest of the
        session's own timeouts (each call is bounded by one of them) and :data:`HANG_GRACE_S`."""
        c = self.config
        return max(c.timeout_ms, c.transaction_timeout_ms, c.session_timeout_ms) / 1000.0 + HANG_GRACE_S

    async def _blocking(self, fn: Callable, *args) -> Any:
        """``fn(*args)`` on the session's own threads. Raises :class:`LibraryError`: the
        library's error, or a fatal ``_TIMED_OUT`` when the call did not return within
        :meth:`_hang_bound_s` (it is abandoned; the session must be replaced)."""
        bound = self._hang_bound_s()
        try:
            fut = asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)
            return await asyncio.wait_for(fut, bound)
        except TimeoutError:
            raise LibraryError("_TIMED_OUT", f"the library call did not return within {bound:.0f} s; "
                                             f"abandoned", fatal=True) from None
        except LibraryError:
            raise
        except (BufferError, RuntimeError, ValueError, TypeError) as e:
            raise library_error(e, local=True) from None
        except Exception as e:       # confluent_kafka.KafkaException
            raise library_error(e) from None

    async def open(self) -> dict:
        from confluent_kafka import Consumer, Producer

        def make() -> None:
            if self.producer is None:
                self.producer = Producer(self._producer_conf(), logger=RDKAFKA_LOG)
                self.consumer = Consumer(self._consumer_conf(), logger=RDKAFKA_LOG)
            if self.config.transactional:
                self.producer.init_transactions(self.config.timeout_ms / 1000.0)
        await self._blocking(make)
        if self._reports is None:
            self._reports = threading.Thread(target=self._serve_reports, name="txn-rdkafka-reports", daemon=True)
            self._reports.start()
        return self.info()

    def info(self) -> dict:
        return {"transaction_version": 0 if self.config.transactional else None}

    async def assign(self, keys: Sequence[Key], from_beginning: bool) -> None:
        """Replace the consumer's partitions (leaving a subscription first: librdkafka keeps
        the two apart)."""
        from confluent_kafka import OFFSET_BEGINNING, OFFSET_STORED, TopicPartition
        start = OFFSET_BEGINNING if from_beginning else OFFSET_STORED

        def assign() -> None:
            if self._subscribed:
                self.consumer.unsubscribe()
                self._subscribed = False
            self.consumer.assign([TopicPartition(t, p, start) for t, p in keys])
        await self._blocking(assign)
        self._assigned = list(keys)

    async def subscribe(self, topics: Sequence[str]) -> None:
        """Subscribe to ``topics``: the manual assignment is dropped first (with the records
        already fetched for it, which would otherwise be returned after the switch), and
        every partition the group assigns or revokes from then on is noted
        (:meth:`take_rebalanced`)."""
        def subscribe() -> None:
            if self._assigned:
                self.consumer.unassign()
            self.consumer.subscribe(list(topics), on_assign=self._on_rebalance, on_revoke=self._on_rebalance)
        await self._blocking(subscribe)
        self._assigned, self._subscribed = None, True

    def _on_rebalance(self, _consumer, partitions) -> None:
        """librdkafka's rebalance callback (in ``poll``): note the partitions; confluent-kafka
        assigns or revokes them itself after it returns."""
        self._rebalanced.update((tp.topic, tp.partition) for tp in partitions)

    def take_rebalanced(self) -> list[Key]:
        """The partitions the group assigned or revoked since the last call."""
        keys, self._rebalanced = sorted(self._rebalanced), set()
        return keys

    async def seek(self, offsets: Mapping[Key, int]) -> None:
        """Assigned keys: assign again, the targets at their offsets and the rest from the
        group's committed offsets (a seek needs a partition whose fetcher started; a new
        assignment does not). Subscribed: seek the targets the group assigned us now."""
        from confluent_kafka import OFFSET_STORED, TopicPartition
        if self._assigned is not None:
            tps = [TopicPartition(t, p, offsets.get((t, p), OFFSET_STORED)) for t, p in self._assigned]
            await self._blocking(self.consumer.assign, tps)
            return

        def seek_assigned() -> None:
            for tp in self.consumer.assignment():
                if (tp.topic, tp.partition) in offsets:
                    self.consumer.seek(TopicPartition(tp.topic, tp.partition, offsets[(tp.topic, tp.partition)]))
        await self._blocking(seek_assigned)

    async def send(self, key: Key, value: int, timeout_ms: int) -> int:
        loop = asyncio.get_running_loop()
        done: asyncio.Future = loop.create_future()

        def report(err, msg) -> None:     # on the report thread
            loop.call_soon_threadsafe(lambda: done.done() or done.set_result((err, msg)))
        try:
            self.producer.produce(key[0], value=encode_value(value, self.config.value_bytes).encode(),
                                  partition=key[1], on_delivery=report)
        except Exception as e:     # BufferError, KafkaException: refused, never queued
            raise library_error(e, local=True) from None
        try:
            err, msg = await asyncio.wait_for(done, timeout_ms / 1000.0 + 2.0)
        except TimeoutError:
            raise LibraryError("_MSG_TIMED_OUT", f"no delivery report for {key[0]}-{key[1]} within "
                               f"{timeout_ms} ms") from None
        if err is not None:
            raise library_error(err)
        offset = msg.offset()
        return offset if offset is not None and offset >= 0 else -1

    async def poll(self, wait_ms: int, max_records: int) -> list[tuple[Key, int, object]]:
        return await self._blocking(self._poll, wait_ms, max_records)

    def _poll(self, wait_ms: int, max_records: int) -> list[tuple[Key, int, object]]:
        out: list[tuple[Key, int, object]] = []
        wait = wait_ms / 1000.0
        while len(out) < max_records:
            m = self.consumer.poll(wait)
            if m is None:
                break
            wait = 0
            err = m.error()
            if err is not None:
                if out:           # what came before the error was read; the error is dropped
                    break
                raise library_error(err)
            out.append(((m.topic(), m.partition()), m.offset(), decode_value(m.value())))
        return out

    async def begin(self) -> None:
        await self._blocking(self.producer.begin_transaction)

    async def send_offsets(self, offsets: Mapping[Key, int], timeout_ms: int) -> None:
        from confluent_kafka import TopicPartition
        tps = [TopicPartition(t, p, o) for (t, p), o in offsets.items()]
        await self._blocking(lambda: self.producer.send_offsets_to_transaction(
            tps, self.consumer.consumer_group_metadata(), timeout_ms / 1000.0))

    async def commit(self, timeout_ms: int) -> None:
        await self._blocking(self.producer.commit_transaction, timeout_ms / 1000.0)

    async def abort(self, timeout_ms: int) -> None:
        await self._blocking(self.producer.abort_transaction, timeout_ms / 1000.0)

    async def commit_offsets(self, offsets: Mapping[Key, int], timeout_ms: int) -> None:
        from confluent_kafka import TopicPartition
        tps = [TopicPartition(t, p, o) for (t, p), o in offsets.items()]

        def commit() -> None:
            for tp in self.consumer.commit(offsets=tps, asynchronous=False) or []:
                if tp.error is not None:
                    raise library_error(tp.error)
        await self._blocking(commit)

    async def close(self) -> None:
        """A crash: purge what the producer has not sent and destroy it without aborting its
        transaction (``Producer.close()`` would abort it first, and waits without bound for a
        coordinator that does not answer); close the consumer (it tries to leave its group:
        a few seconds when no broker answers), waiting at most :data:`CLOSE_WAIT_S`."""
        self._closed.set()
        producer, consumer, self.producer, self.consumer = self.producer, self.consumer, None, None
        if self._reports is not None:
            await asyncio.to_thread(self._reports.join, 1.0)
            self._reports = None

        def shut() -> None:
            nonlocal producer, consumer
            if producer is not None:
                producer.purge()
                producer = None          # the last reference: librdkafka's destroy, which does not block
            if consumer is not None:
                consumer.close()
        try:
            await asyncio.wait_for(asyncio.to_thread(shut), CLOSE_WAIT_S)
        except TimeoutError:
            log.warning("the librdkafka consumer did not close within %.0f s; left behind", CLOSE_WAIT_S)
        self._executor.shutdown(wait=False, cancel_futures=True)     # a hung call's thread is left behind


def _text(version) -> str:
    """confluent-kafka's ``version()``/``libversion()`` answer (a string, or a ``(string,
    int)`` pair) as its string."""
    return version[0] if isinstance(version, tuple) else str(version)


class RdkafkaFactory:
    """The ``librdkafka`` client of a run (``targets.txn_client.TxnClientFactory``)."""

    name = NAME

    def describe(self) -> dict:
        """``{"client": "librdkafka", "confluent_kafka": V, "librdkafka": V}``."""
        import confluent_kafka
        return {"client": NAME, "confluent_kafka": _text(confluent_kafka.version()),
                "librdkafka": _text(confluent_kafka.libversion()), "transaction_version": 0}

    def session(self, config: SessionConfig) -> Session:
        return Session(config, RdkafkaDriver(config), NAME)

    async def aclose(self) -> None:
        return None


def rdkafka_factory(_kafka_version: str, _log: Callable[[str], None] = lambda _m: None) -> RdkafkaFactory:
    """The factory (the release does not matter: confluent-kafka is the venv's)."""
    return RdkafkaFactory()
