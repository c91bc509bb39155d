"""The ``java`` transactional client: Kafka's own Java client (kafka-clients of the release
under test) in a JVM running ``java_client/TxnClient.java``, driven over its line protocol
(:mod:`targets.kafka.java_protocol`).

One JVM per factory (per run) holds every session side by side: each session is one
``KafkaProducer`` and one ``KafkaConsumer`` on a thread of its own in the JVM. A ``close``
(the workload's ``crash``) closes both without waiting (the producer with a zero timeout, so
its transaction is not committed; the consumer woken from a blocking call) and the next
session opens fresh ones. Why one JVM, measured on this 2-core machine against 3 brokers of
4.4.0 (``python -m harness.bench.txn_clients``, docs/txn-clients.md): a JVM answers its
first request after about 0.35 s, but its first session opens after about 1.9 s (class
loading and JIT of the client on top of ``initTransactions``; p99 3.6 s), while a session in
a warm JVM opens in about 0.2 s. With a crash every few seconds across the workers, a JVM
per session would spend a core on start-ups beside the brokers' JVMs.

A JVM that dies (killed, crashed) fails every call in flight and every later call of its
sessions with an indefinite, fatal ``client-crashed`` error (the workload then replaces the
session); the next session opened starts a new JVM. A call the JVM does not answer within
the op's time plus :data:`ANSWER_MARGIN_S` is indefinite too.
"""
from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import time
import uuid
from typing import Any, Callable, Mapping, Sequence

from targets.kafka.java_build import JavaClientBuild, ensure_java_client
from targets.kafka.java_protocol import (ProtocolError, keys_arg, library_error, offsets_arg, parse_answer,
                                         records_of, request_line)
from targets.kafka.txn_errors import CRASHED, LibraryError
from targets.kafka.txn_session import Session
from targets.txn_client import Key, SessionConfig
from targets.txn_values import decode_value, encode_value

log = logging.getLogger("kraft_chaos.targets.kafka.java_client")

NAME = "java"
#: seconds the JVM may take beyond an op's own bound before its call is given up as indefinite
ANSWER_MARGIN_S = 5.0
#: seconds a JVM may take to start and answer ``hello``
START_TIMEOUT_S = 60.0
#: seconds a session's close waits for the JVM
CLOSE_WAIT_S = 5.0
#: longest answer line (bytes)
LINE_LIMIT = 16 << 20


class Jvm:
    """One running ``TxnClient`` program: requests out, answers matched back by id.

    ``argv``: its command line. :meth:`start` launches it and waits for ``hello``;
    :meth:`request` sends one request and awaits its answer. When the JVM's stdout ends (it
    died), every pending and later request raises a ``LibraryError`` with ``crashed``.
    """

    def __init__(self, argv: Sequence[str]):
        self.argv = list(argv)
        self.proc: asyncio.subprocess.Process | None = None
        self.hello: dict = {}
        self.start_ms: float | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future] = {}
        self._dead: str | None = None
        self._tasks: list[asyncio.Task] = []
        self._stderr: collections.deque[str] = collections.deque(maxlen=20)
        self._stopping = False

    @property
    def alive(self) -> bool:
        """True while the JVM runs and answers."""
        return self.proc is not None and self._dead is None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    async def start(self) -> dict:
        """Launch the JVM and wait for its ``hello`` (``kafka_clients``, ``commit``, ``java``,
        ``pid``); ``start_ms`` is the time that took. Raises ``LibraryError`` (crashed) when
        it does not answer within :data:`START_TIMEOUT_S`."""
        t0 = time.monotonic()
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, limit=LINE_LIMIT, start_new_session=True)
        self._tasks = [asyncio.create_task(self._read_answers()), asyncio.create_task(self._read_stderr())]
        self.hello = await self.request("hello", wait_s=START_TIMEOUT_S)
        self.start_ms = (time.monotonic() - t0) * 1000
        log.info("Java client JVM %s started in %.0f ms (kafka-clients %s)", self.pid, self.start_ms,
                 self.hello.get("kafka_clients"))
        return self.hello

    async def _read_answers(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        why = "its stdout closed"
        try:
            while True:
                line = await self.proc.stdout.readline()
                if not line:
                    break
                try:
                    answer = parse_answer(line)
                except ProtocolError as e:
                    log.warning("Java client: %s", e)
                    continue
                fut = self._pending.pop(answer.id, None)
                if fut is not None and not fut.done():
                    fut.set_result(answer)
        except (asyncio.CancelledError, Exception) as e:   # noqa: BLE001 - any end of the stream is a death
            why = f"reading its answers failed: {e!r}"
        rc = await self._returncode()
        self._died(f"the Java client JVM (pid {self.pid}) died ({why}; exit {rc})"
                   + (f": {self._stderr[-1]}" if self._stderr else ""))

    async def _returncode(self) -> int | None:
        try:
            return await asyncio.wait_for(self.proc.wait(), 2.0)
        except (TimeoutError, asyncio.CancelledError):
            return None

    async def _read_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        try:
            async for raw in self.proc.stderr:
                line = raw.decode("utf-8", "replace").rstrip()
                self._stderr.append(line)
                log.debug("jvm %s: %s", self.pid, line)
        except (asyncio.CancelledError, Exception):     # noqa: BLE001
            return

    def _died(self, why: str) -> None:
        if self._dead is None:
            self._dead = why
            log.log(logging.DEBUG if self._stopping else logging.WARNING, "%s", why)
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(LibraryError(CRASHED, why, crashed=True))
        self._pending.clear()

    async def request(self, op: str, session: str | None = None, *, wait_s: float, **args: Any) -> dict:
        """Send one request and return its result. Raises ``LibraryError``: the program's
        error (:func:`library_error`), ``crashed`` when the JVM is dead or dies meanwhile, a
        ``TimeoutException`` (not retriable) when no answer came within ``wait_s``."""
        if self._dead is not None or self.proc is None:
            raise LibraryError(CRASHED, self._dead or "the Java client JVM is not running", crashed=True)
        request_id = next(self._ids)
        fut = asyncio.get_running_loop().create_future()
        self._pending[request_id] = fut
        try:
            self.proc.stdin.write(request_line(request_id, op, session, **args))
            await self.proc.stdin.drain()
        except (ConnectionError, RuntimeError) as e:
            self._pending.pop(request_id, None)
            self._died(f"the Java client JVM (pid {self.pid}) took no request: {e}")
            raise LibraryError(CRASHED, str(e), crashed=True) from None
        try:
            answer = await asyncio.wait_for(fut, wait_s)
        except TimeoutError:
            self._pending.pop(request_id, None)
            raise LibraryError("TimeoutException", f"{op}: no answer from the Java client within {wait_s:g} s",
                               exception="java.util.concurrent.TimeoutException") from None
        if not answer.ok:
            raise library_error(answer.error)
        return answer.result

    async def stop(self) -> None:
        """Ask the JVM to exit, and kill it when it has not within 5 s. Never raises."""
        if self.proc is None:
            return
        self._stopping = True
        if self.alive:
            try:
                await self.request("exit", wait_s=5.0)
            except LibraryError:
                pass
        try:
            await asyncio.wait_for(self.proc.wait(), 5.0)
        except TimeoutError:
            self.kill()
            await self.proc.wait()
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._died("the Java client JVM was stopped")

    def kill(self) -> None:
        """SIGKILL the JVM (its sessions then fail as crashed)."""
        if self.proc is not None and self.proc.returncode is None:
            try:
                self.proc.kill()
            except ProcessLookupError:
                pass


class JavaDriver:
    """One session in the factory's JVM (a ``targets.kafka.txn_session.Driver``)."""

    def __init__(self, config: SessionConfig, factory: "JavaFactory"):
        self.config, self.factory = config, factory
        self.name = uuid.uuid4().hex[:12]
        self.jvm: Jvm | None = None
        self._info: dict = {}

    def _wait(self, ms: int) -> float:
        return ms / 1000.0 + ANSWER_MARGIN_S

    async def _req(self, op: str, ms: int | None = None, **args: Any) -> dict:
        if self.jvm is None:
            raise LibraryError("IllegalStateException", f"{op}: the session is not open", local=True)
        return await self.jvm.request(op, self.name, wait_s=self._wait(ms or self.config.timeout_ms), **args)

    async def open(self) -> dict:
        c = self.config
        if self.jvm is None:
            self.jvm = await self.factory.jvm()
        result = await self._req("open", bootstrap=",".join(c.bootstrap), transactional_id=c.transactional_id,
                                 group_id=c.group_id, timeout_ms=c.timeout_ms,
                                 transaction_timeout_ms=c.transaction_timeout_ms,
                                 max_poll_records=c.max_poll_records, session_timeout_ms=c.session_timeout_ms,
                                 compression=c.compression, client_id=f"kraft-chaos-{self.name}")
        self._learn(result)
        return self.info()

    def _learn(self, result: Mapping[str, Any]) -> None:
        if "transaction_v2" in result:
            self._info["transaction_v2"] = result["transaction_v2"]
            self.factory.saw(self.info().get("transaction_version"))

    def info(self) -> dict:
        """``transaction_version``: 2 when the producer enabled transaction version 2 (4.0+
        clients, on a cluster whose ``transaction.version`` is 2), 0 otherwise; None without
        transactions. ``transaction_v2``: the producer's own flag (None: a client before 4.0,
        which has none)."""
        v2 = self._info.get("transaction_v2")
        tv = None if not self.config.transactional else (2 if v2 is True else 0)
        return {"transaction_version": tv, "transaction_v2": v2,
                "jvm_pid": self.jvm.pid if self.jvm is not None else None}

    async def assign(self, keys: Sequence[Key], from_beginning: bool) -> None:
        await self._req("assign", partitions=keys_arg(keys), from_beginning=from_beginning)

    async def subscribe(self, topics: Sequence[str]) -> None:
        await self._req("subscribe", topics=list(topics))

    async def seek(self, offsets: Mapping[Key, int]) -> None:
        await self._req("seek", offsets=offsets_arg(offsets))

    async def send(self, key: Key, value: int, timeout_ms: int) -> int:
        result = await self._req("send", timeout_ms, topic=key[0], partition=key[1],
                                 value=encode_value(value, self.config.value_bytes),
                                 timeout_ms=timeout_ms)
        return int(result.get("offset", -1))

    async def poll(self, wait_ms: int, max_records: int) -> list[tuple[Key, int, object]]:
        # max_records is the consumer's max.poll.records, set at open
        return records_of(await self._req("poll", wait_ms, wait_ms=wait_ms), decode_value)

    async def begin(self) -> None:
        await self._req("begin")

    async def send_offsets(self, offsets: Mapping[Key, int], timeout_ms: int) -> None:
        await self._req("send_offsets", timeout_ms, offsets=offsets_arg(offsets))

    async def commit(self, timeout_ms: int) -> None:
        self._learn(await self._req("commit", timeout_ms))

    async def abort(self, timeout_ms: int) -> None:
        await self._req("abort", timeout_ms)

    async def commit_offsets(self, offsets: Mapping[Key, int], timeout_ms: int) -> None:
        await self._req("commit_offsets", timeout_ms, offsets=offsets_arg(offsets), timeout_ms=timeout_ms)

    async def close(self) -> None:
        jvm, self.jvm = self.jvm, None
        if jvm is not None and jvm.alive:
            try:
                await jvm.request("close", self.name, wait_s=CLOSE_WAIT_S + 1.0, timeout_ms=int(CLOSE_WAIT_S * 1000))
            except LibraryError as e:
                log.debug("close of session %s: %s", self.name, e)


class JavaFactory:
    """The ``java`` client of a run (``targets.txn_client.TxnClientFactory``): one JVM,
    started when the first session opens and again after it died."""

    name = NAME

    def __init__(self, build: JavaClientBuild):
        self.build = build
        self._jvm: Jvm | None = None
        self._lock: asyncio.Lock | None = None
        self._hello: dict = {}
        self._start_ms: list[float] = []
        self._versions: set = set()
        self.jvms_started = 0

    async def jvm(self) -> Jvm:
        """The running JVM, started if there is none or it died. Raises ``LibraryError``
        (crashed) when it cannot start."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._jvm is None or not self._jvm.alive:
                jvm = Jvm(self.build.argv())
                try:
                    self._hello = await jvm.start()
                except LibraryError:
                    await jvm.stop()
                    raise
                except OSError as e:
                    raise LibraryError(CRASHED, f"cannot start the Java client JVM: {e}", crashed=True) from None
                self._jvm, self.jvms_started = jvm, self.jvms_started + 1
                self._start_ms.append(jvm.start_ms)
            return self._jvm

    def saw(self, transaction_version: int | None) -> None:
        """A session reported its transaction version."""
        if transaction_version is not None:
            self._versions.add(transaction_version)

    def describe(self) -> dict:
        """``{"client": "java", "kafka_clients": V, "java": V, "transaction_version": 2 | 0 |
        [..] | None, "jvm_start_ms": [...]}``: the transaction version the sessions reported
        (a list when they differed; None before any transactional session opened)."""
        versions = sorted(self._versions)
        return {"client": NAME, "kafka_clients": self._hello.get("kafka_clients", self.build.version),
                "kafka_clients_commit": self._hello.get("commit"), "java": self._hello.get("java"),
                "transaction_version": versions[0] if len(versions) == 1 else (versions or None),
                "jvm_start_ms": [round(x) for x in self._start_ms]}

    def session(self, config: SessionConfig) -> Session:
        return Session(config, JavaDriver(config, self), NAME)

    def kill_jvm(self) -> None:
        """SIGKILL the JVM (tests: a client that crashes mid-op)."""
        if self._jvm is not None:
            self._jvm.kill()

    async def aclose(self) -> None:
        if self._jvm is not None:
            await self._jvm.stop()
            self._jvm = None


def java_factory(kafka_version: str, log_fn: Callable[[str], None] = lambda _m: None) -> JavaFactory:
    """The factory for Kafka ``kafka_version``'s Java client, built if not cached
    (:func:`targets.kafka.java_build.ensure_java_client`; raises ``TargetError``)."""
    return JavaFactory(ensure_java_client(kafka_version, log=log_fn))
