"""A transactional session (``targets.txn_client.TxnSession``) over a client driver: the
bookkeeping and the rules both clients share.

A driver (:class:`Driver`: ``txn_librdkafka.RdkafkaDriver``, ``txn_java.JavaDriver``) makes
the library's calls and raises :class:`targets.kafka.txn_errors.LibraryError`.
:class:`Session` adds what does not depend on the library:

- :class:`Positions` (pure): where the consumer is on each key it read, where the op began
  (``mark``), what the open transaction polled (``send_offsets``) and what was polled since
  the last ``commit_offsets``;
- the retries of retriable errors within the op's time (``commit``, ``abort``,
  ``send_offsets``, ``commit_offsets``, ``open``), the abort after a commit error that
  requires one, and the mapping of every error onto the history
  (:func:`targets.kafka.txn_errors.outcome`).
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Awaitable, Callable, Mapping, Protocol, Sequence, TypeVar

from targets.kafka.txn_errors import LibraryError, must_abort, outcome, should_retry
from targets.txn_client import Key, Polled, SessionConfig, TxnDefiniteError, TxnIndefiniteError, offsets_after

log = logging.getLogger("kraft_chaos.targets.kafka.txn")

#: seconds between two attempts of a retriable call
RETRY_BACKOFF_S = 0.1
T = TypeVar("T")


class Driver(Protocol):
    """One library's calls for one session; each raises ``LibraryError``. ``keys`` are
    ``(topic, partition)``; times in ms."""

    async def open(self) -> dict: ...
    def info(self) -> dict: ...
    async def assign(self, keys: Sequence[Key], from_beginning: bool) -> None: ...
    async def subscribe(self, topics: Sequence[str]) -> None: ...
    async def seek(self, offsets: Mapping[Key, int]) -> None: ...
    async def send(self, key: Key, value: int, timeout_ms: int) -> int: ...
    async def poll(self, wait_ms: int, max_records: int) -> list[tuple[Key, int, object]]: ...
    async def begin(self) -> None: ...
    async def send_offsets(self, offsets: Mapping[Key, int], timeout_ms: int) -> None: ...
    async def commit(self, timeout_ms: int) -> None: ...
    async def abort(self, timeout_ms: int) -> None: ...
    async def commit_offsets(self, offsets: Mapping[Key, int], timeout_ms: int) -> None: ...
    async def close(self) -> None: ...


class Positions:
    """The consumer's bookkeeping, without I/O.

    ``next``: the next offset to read per key read so far. ``mark()`` notes where an op
    begins; ``seek_targets()`` is where to seek back to: the marked position of each key read
    before the op, and the first offset the op read of each key it read first.
    ``txn``: the highest offset polled per key since ``begin()``; ``uncommitted``: since the
    last ``committed()``.
    """

    def __init__(self) -> None:
        self.next: dict[Key, int] = {}
        self.txn: dict[Key, int] = {}
        self.uncommitted: dict[Key, int] = {}
        self._marked: dict[Key, int] = {}
        self._marked_uncommitted: dict[Key, int] = {}
        self._first: dict[Key, int] = {}

    def mark(self) -> None:
        """An op begins here."""
        self._marked = dict(self.next)
        self._marked_uncommitted = dict(self.uncommitted)
        self._first = {}

    def polled(self, records: Sequence[tuple[Key, int, object]]) -> None:
        """Note ``[(key, offset, value), ...]`` as read."""
        for key, offset, _value in records:
            if key not in self.next and key not in self._first:
                self._first[key] = offset
            self.next[key] = max(self.next.get(key, 0), offset + 1)
            self.txn[key] = max(self.txn.get(key, -1), offset)
            self.uncommitted[key] = max(self.uncommitted.get(key, -1), offset)

    def forget(self, keys: Sequence[Key] | None = None) -> None:
        """The consumer's keys were replaced: forget the positions of ``keys`` (None: all)."""
        for d in (self.next, self._marked, self._first):
            for k in list(d) if keys is None else keys:
                d.pop(k, None)

    def seek_targets(self) -> dict[Key, int]:
        """``{key: offset}`` to seek back to where the last marked op began."""
        return {**self._first, **self._marked}

    def seeked_back(self) -> None:
        """The consumer is back where the op began."""
        targets = self.seek_targets()
        self.next, self._marked = dict(targets), dict(targets)
        self.uncommitted = dict(self._marked_uncommitted)
        self._first = {}

    def begin(self) -> None:
        """A transaction begins: nothing polled in it yet."""
        self.txn = {}

    def committed(self, offsets: Mapping[Key, int]) -> None:
        """``offsets`` (next offset per key) were committed to the group."""
        for k, o in offsets.items():
            if self.uncommitted.get(k, -1) < o:
                self.uncommitted.pop(k, None)


class Session:
    """A :class:`targets.txn_client.TxnSession` on ``driver`` (see the module docstring).
    ``client``: ``librdkafka`` or ``java`` (how errors are read, :func:`outcome`)."""

    def __init__(self, config: SessionConfig, driver: Driver, client: str):
        self.config, self.driver, self.client = config, driver, client
        self.positions = Positions()
        self.in_txn = False
        self.subscribed = False
        self._info: dict = {"transaction_version": None}

    def _deadline(self) -> float:
        return time.monotonic() + self.config.timeout_ms / 1000.0

    @staticmethod
    def _left_ms(deadline: float) -> int:
        return max(1, int((deadline - time.monotonic()) * 1000))

    def _error(self, call: str, err: LibraryError) -> TxnDefiniteError | TxnIndefiniteError:
        return outcome(call, err, in_txn=self.in_txn, client=self.client)

    async def _retrying(self, call: str, attempt: Callable[[int], Awaitable[T]], deadline: float) -> T:
        """``attempt(ms left)`` until it returns, retrying what :func:`should_retry` allows
        until ``deadline``; the last error raised as a ``LibraryError``."""
        while True:
            try:
                return await attempt(self._left_ms(deadline))
            except LibraryError as e:
                if should_retry(e) and time.monotonic() + RETRY_BACKOFF_S < deadline:
                    log.debug("%s: retrying after %s", call, e)
                    await asyncio.sleep(RETRY_BACKOFF_S)
                    continue
                raise

    async def _call(self, call: str, coro: Awaitable[T]) -> T:
        try:
            return await coro
        except LibraryError as e:
            raise self._error(call, e) from None

    # -- the TxnSession calls -----------------------------------------------------------------
    async def open(self) -> dict:
        """Connect (``initTransactions`` when transactional, retried within the op's time)."""
        async def attempt(_ms: int) -> dict:
            return await self.driver.open()
        self._info = dict(await self._call("open", self._retrying("open", attempt, self._deadline())))
        return self.info()

    def info(self) -> dict:
        """The driver's account of the session (``transaction_version`` at least)."""
        return {"transaction_version": None, **self._info, **self.driver.info()}

    async def assign(self, keys: Sequence[Key], from_beginning: bool = False) -> None:
        await self._call("assign", self.driver.assign(list(keys), from_beginning))
        self.positions.forget()
        self.subscribed = False

    async def subscribe(self, keys: Sequence[Key]) -> None:
        topics = sorted({t for t, _p in keys})
        await self._call("subscribe", self.driver.subscribe(topics))
        self.positions.forget()
        self.subscribed = True

    def mark(self) -> None:
        self.positions.mark()

    async def seek_back(self) -> None:
        targets = self.positions.seek_targets()
        if targets:
            await self._call("seek", self.driver.seek(targets))
        self.positions.seeked_back()

    def rebalanced(self) -> list[Key]:
        """The keys the consumer group assigned or revoked since the last call (a subscribed
        consumer's positions on them may have moved to the group's committed offsets); []
        where the driver cannot tell (``take_rebalanced``)."""
        take = getattr(self.driver, "take_rebalanced", None)
        return take() if take is not None else []

    async def send(self, key: Key, value: int) -> int:
        return await self._call("send", self.driver.send(key, value, self.config.timeout_ms))

    async def poll(self) -> Polled:
        records = await self._call("poll", self.driver.poll(self.config.poll_ms, self.config.max_poll_records))
        self.positions.polled(records)
        out: Polled = {}
        for key, offset, value in records:
            out.setdefault(key, []).append((offset, value))
        return out

    async def begin(self) -> None:
        await self._call("begin", self.driver.begin())
        self.in_txn = True
        self.positions.begin()

    async def send_offsets(self) -> dict[Key, int]:
        offsets = offsets_after(self.positions.txn)
        if offsets:
            await self._call("send_offsets", self._retrying(
                "send_offsets", lambda ms: self.driver.send_offsets(offsets, ms), self._deadline()))
        return offsets

    async def commit(self) -> None:
        deadline = self._deadline()
        try:
            await self._retrying("commit", self.driver.commit, deadline)
        except LibraryError as e:
            if must_abort(e):
                await self._abort_after(e)
            raise self._error("commit", e) from None
        self.in_txn = False

    async def _abort_after(self, cause: LibraryError) -> None:
        """Abort after ``cause`` made the commit impossible; raise the commit's outcome:
        definite when the abort returned, indefinite otherwise."""
        try:
            await self.abort()
        except TxnIndefiniteError as e:
            raise TxnIndefiniteError(cause.code, f"commit: {cause.message}; then the abort failed: {e}",
                                     fatal=True, abortable=True, exception=cause.exception,
                                     kafka_error=cause.kafka_error) from None
        raise TxnDefiniteError(cause.code, f"commit: {cause.message}; the transaction was aborted",
                               abortable=True, exception=cause.exception, kafka_error=cause.kafka_error)

    async def abort(self) -> None:
        await self._call("abort", self._retrying("abort", self.driver.abort, self._deadline()))
        self.in_txn = False

    async def commit_offsets(self) -> dict[Key, int]:
        offsets = offsets_after(self.positions.uncommitted)
        if offsets:
            await self._call("commit_offsets", self._retrying(
                "commit_offsets", lambda ms: self.driver.commit_offsets(offsets, ms), self._deadline()))
            self.positions.committed(offsets)
        return offsets

    async def close(self) -> None:
        try:
            await self.driver.close()
        except Exception as e:      # noqa: BLE001 - close never raises
            log.debug("close: %s", e)
        self.in_txn = False
