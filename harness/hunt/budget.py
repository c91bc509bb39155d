"""The hunt's clock: its deadline, what a run is expected to take, and the wait for the cluster
lock within the deadline.

A hunt never starts a run that it does not expect to finish before its deadline. A real run
takes its time limit (a scenario: its steps' budget) plus an overhead: cluster set-up, the
final phase, collection and the checks. :class:`Overheads` starts from
:data:`INITIAL_OVERHEAD_S` and learns the largest overhead each kind of run has shown in this
hunt, so that a target whose set-up is slower (JVMs) is soon estimated as such.
"""
from __future__ import annotations

import contextlib
import fcntl
import threading
import time
from typing import Callable, Iterator

from harness.catalogue.scoring import OVERHEAD_S

#: seconds a run is first expected to need besides its time limit: quorum only, and with
#: brokers (more nodes to set up, a drain of every partition at the end)
INITIAL_OVERHEAD_S = {"quorum": OVERHEAD_S, "brokers": OVERHEAD_S + 15.0}
#: seconds between two tries of the cluster lock
LOCK_POLL_S = 0.5


class Budget:
    """A time budget of ``seconds`` (s) from its creation, on ``clock`` (a monotonic clock in
    s, injectable for tests). Raises ``ValueError`` for a budget that is not positive."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic):
        if not seconds > 0:
            raise ValueError(f"a hunt's budget must be > 0 s, got {seconds!r}")
        self.clock = clock
        self.seconds = float(seconds)
        self.start = clock()
        self.deadline = self.start + self.seconds
        #: seconds spent waiting for the cluster lock (:meth:`lock`)
        self.waited_s = 0.0

    def elapsed(self) -> float:
        """Seconds since the budget began."""
        return self.clock() - self.start

    def remaining(self, by: float | None = None) -> float:
        """Seconds left (never below 0) until the deadline, or until ``by`` (on the clock) when
        that comes first."""
        end = self.deadline if by is None else min(self.deadline, by)
        return max(0.0, end - self.clock())

    def fits(self, expected_s: float, by: float | None = None) -> bool:
        """Whether something expected to take ``expected_s`` seconds, started now, ends before
        the deadline (and before ``by``, when given)."""
        return expected_s <= self.remaining(by)

    @contextlib.contextmanager
    def lock(self, path: str | None, latest: float) -> Iterator[bool]:
        """:func:`lock_until` ``path`` on this budget's clock, waiting at most until ``latest``;
        the wait is added to :attr:`waited_s`. Yields whether the lock is held."""
        t0 = self.clock()
        with lock_until(path, latest, clock=self.clock) as held:
            self.waited_s += self.clock() - t0
            yield held


class Overheads:
    """What a real run takes besides its time limit (s), by kind (``quorum`` or ``brokers``):
    the largest seen so far in this hunt, at least :data:`INITIAL_OVERHEAD_S`."""

    def __init__(self, initial: dict[str, float] | None = None):
        self.seen: dict[str, float] = dict(initial or INITIAL_OVERHEAD_S)

    def estimate(self, kind: str) -> float:
        """The overhead (s) to expect of a run of ``kind``."""
        return self.seen.get(kind, max(self.seen.values()))

    def observe(self, kind: str, wall_s: float, limit_s: float) -> None:
        """Learn from a finished run of ``kind``: its wall time and time limit (s)."""
        self.seen[kind] = max(self.estimate(kind), wall_s - limit_s)


class _Waiter(threading.Thread):
    """A blocking ``flock`` on its own open file of ``path``, in a daemon thread, so that the
    hunt waits in the kernel's queue beside others' blocking ``flock`` (a poll with
    ``LOCK_NB`` would lose every hand-over to them) and may still give up at a deadline."""

    def __init__(self, path: str):
        super().__init__(daemon=True, name="hunt-lock-waiter")
        self.fh = open(path, "a+")
        self.got = threading.Event()
        self._mu = threading.Lock()
        self._abandoned = False

    def run(self) -> None:
        fcntl.flock(self.fh, fcntl.LOCK_EX)
        with self._mu:
            if not self._abandoned:
                self.got.set()
                return
        self.release()

    def abandon(self) -> bool:
        """Stop waiting: True when the lock was not taken (the thread drops it when it comes),
        False when it was taken meanwhile (the caller holds it and must :meth:`release` it)."""
        with self._mu:
            if self.got.is_set():
                return False
            self._abandoned = True
            return True

    def release(self) -> None:
        fcntl.flock(self.fh, fcntl.LOCK_UN)
        self.fh.close()


@contextlib.contextmanager
def lock_until(path: str | None, deadline: float, clock: Callable[[], float] = time.monotonic) -> Iterator[bool]:
    """Hold an exclusive ``flock`` on ``path`` (created if missing) for the block, waiting for
    it at most until ``deadline`` (on ``clock``, s; checked every :data:`LOCK_POLL_S` s).
    Yields True when held (or when ``path`` is None: no lock), False when the deadline came
    first (the block should then start nothing). Raises ``OSError`` when ``path`` cannot be
    opened."""
    if not path:
        yield True
        return
    waiter = _Waiter(path)
    waiter.start()
    try:
        while not waiter.got.wait(timeout=LOCK_POLL_S):
            if clock() >= deadline and waiter.abandon():
                break
    except BaseException:          # Ctrl-C while waiting
        if not waiter.abandon():
            waiter.release()
        raise
    if not waiter.got.is_set():
        yield False
        return
    try:
        yield True
    finally:
        waiter.release()
