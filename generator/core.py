"""Jepsen-style generators: which op comes next, kept apart from how it is sent.

A generator is asked by a thread (a client worker, or the nemesis) for its
next op with a :class:`Context`, and answers with

- an op: a dict with ``f`` and ``value`` (the client decides how to send it);
- :class:`Wait` ``(until)``: nothing yet; ask again at ``until`` (s, on the
  context's clock) or after any op completes, whichever comes first;
- ``None``: nothing more for this thread.

After an op completes, :meth:`Generator.update` sees the invoke and the
completion, so a generator can react to results (e.g. read from the last
high watermark seen). Generators do no I/O; every random choice comes from
``ctx.rng``, the asking thread's seeded ``random.Random``. They are objects
with state, asked from one asyncio loop, so no locking is needed.
"""
from __future__ import annotations

import dataclasses
import random
import typing
from typing import Callable, Iterable, NamedTuple, Sequence


@dataclasses.dataclass
class Context:
    """What a generator may look at when asked.

    ``time``: seconds since the interpreter started (monotonic). ``thread``:
    the asking thread, an int (client worker index) or ``"nemesis"``.
    ``process``: that thread's current process id. ``rng``: the thread's own
    seeded ``random.Random``. ``view``: the latest observations the
    interpreter was given (e.g. the quorum monitor's samples), or None.
    """

    time: float
    thread: int | str
    process: int | str
    rng: random.Random
    view: typing.Any = None


class Wait(NamedTuple):
    """Nothing to do yet: ask again at ``until`` (s on the context's clock) or after a completion."""

    until: float


class Generator:
    """Base class. Subclasses implement :meth:`op`; :meth:`update` is optional."""

    def op(self, ctx: Context) -> dict | Wait | None:
        """The next op for ``ctx.thread``, a :class:`Wait`, or None when done."""
        raise NotImplementedError

    def update(self, ctx: Context, invoke: dict, completion: dict) -> None:
        """An op this generator's interpreter ran has completed (Jepsen's ``update``)."""


def soonest(waits: Iterable[Wait]) -> Wait | None:
    """The earliest of ``waits`` (None when there are none)."""
    waits = list(waits)
    return min(waits, key=lambda w: w.until) if waits else None


class Fn(Generator):
    """An endless generator: ``fn(ctx)`` gives each op (or a Wait / None)."""

    def __init__(self, fn: Callable[[Context], dict | Wait | None]):
        self.fn = fn

    def op(self, ctx: Context) -> dict | Wait | None:
        return self.fn(ctx)


class Once(Generator):
    """One op, given to the first thread that asks."""

    def __init__(self, op: dict):
        self._op: dict | None = dict(op)

    def op(self, ctx: Context) -> dict | Wait | None:
        op, self._op = self._op, None
        return op


class Sleep(Generator):
    """Nothing for ``seconds`` from the first time it is asked, then done."""

    def __init__(self, seconds: float):
        if seconds < 0:
            raise ValueError(f"Sleep: seconds must be >= 0, got {seconds}")
        self.seconds = seconds
        self._end: float | None = None

    def op(self, ctx: Context) -> dict | Wait | None:
        if self._end is None:
            self._end = ctx.time + self.seconds
        return Wait(self._end) if ctx.time < self._end else None


class Seq(Generator):
    """The generators one after another (Jepsen's vector of generators).

    Items may be generators or op dicts (each a :class:`Once`). An item is
    over once it answers None, whichever thread asked: put thread-specific
    sequences inside :class:`OnThreads`, not the other way round.
    """

    def __init__(self, items: Sequence[Generator | dict]):
        self.items = [Once(i) if isinstance(i, dict) else i for i in items]
        self._i = 0

    def op(self, ctx: Context) -> dict | Wait | None:
        while self._i < len(self.items):
            out = self.items[self._i].op(ctx)
            if out is not None:
                return out
            self._i += 1
        return None

    def update(self, ctx: Context, invoke: dict, completion: dict) -> None:
        if self._i < len(self.items):
            self.items[self._i].update(ctx, invoke, completion)


class Cycle(Generator):
    """``make()`` again each time the current generator is done, forever (or ``times`` times)."""

    def __init__(self, make: Callable[[], Generator], times: int | None = None):
        self.make, self.left = make, times
        self._cur: Generator | None = None

    def op(self, ctx: Context) -> dict | Wait | None:
        for _ in range(1000):          # a generator done at once must not spin forever
            if self._cur is None:
                if self.left == 0:
                    return None
                self._cur = self.make()
                if self.left is not None:
                    self.left -= 1
            out = self._cur.op(ctx)
            if out is not None:
                return out
            self._cur = None
        raise RuntimeError("Cycle: the generator made 1000 times in a row gave nothing")

    def update(self, ctx: Context, invoke: dict, completion: dict) -> None:
        if self._cur is not None:
            self._cur.update(ctx, invoke, completion)


class Mix(Generator):
    """A random one of ``gens`` for each op (weights optional); done when all are done."""

    def __init__(self, gens: Sequence[Generator], weights: Sequence[float] | None = None):
        self.gens = list(gens)
        self.weights = list(weights) if weights is not None else [1.0] * len(self.gens)
        if len(self.weights) != len(self.gens):
            raise ValueError("Mix: one weight per generator")

    def op(self, ctx: Context) -> dict | Wait | None:
        while self.gens:
            i = ctx.rng.choices(range(len(self.gens)), self.weights)[0]
            out = self.gens[i].op(ctx)
            if out is not None:
                return out
            del self.gens[i], self.weights[i]
        return None

    def update(self, ctx: Context, invoke: dict, completion: dict) -> None:
        for g in self.gens:
            g.update(ctx, invoke, completion)


class Any(Generator):
    """Each of ``gens`` runs on its own timeline; an op from whichever is ready first.

    Asked in order; the first op wins. When none has an op, the soonest
    :class:`Wait`; None when every one has nothing for this thread (Jepsen's
    ``any``). A child that answers None for one thread may still have ops
    for another (see :class:`OnThreads`), so none is ever dropped.
    """

    def __init__(self, gens: Sequence[Generator]):
        self.gens = list(gens)

    def op(self, ctx: Context) -> dict | Wait | None:
        waits = []
        for g in self.gens:
            out = g.op(ctx)
            if isinstance(out, Wait):
                waits.append(out)
            elif out is not None:
                return out
        return soonest(waits)

    def update(self, ctx: Context, invoke: dict, completion: dict) -> None:
        for g in self.gens:
            g.update(ctx, invoke, completion)


class OnThreads(Generator):
    """``gen`` for the threads ``pred`` accepts; nothing (None) for the others."""

    def __init__(self, pred: Callable[[int | str], bool], gen: Generator):
        self.pred, self.gen = pred, gen

    def op(self, ctx: Context) -> dict | Wait | None:
        return self.gen.op(ctx) if self.pred(ctx.thread) else None

    def update(self, ctx: Context, invoke: dict, completion: dict) -> None:
        if self.pred(ctx.thread):
            self.gen.update(ctx, invoke, completion)


def clients(gen: Generator) -> OnThreads:
    """``gen`` for the client threads only (Jepsen's ``clients``)."""
    return OnThreads(lambda t: t != "nemesis", gen)


def nemesis(gen: Generator) -> OnThreads:
    """``gen`` for the nemesis thread only (Jepsen's ``nemesis``)."""
    return OnThreads(lambda t: t == "nemesis", gen)


class Limit(Generator):
    """At most ``n`` ops of ``gen``."""

    def __init__(self, n: int, gen: Generator):
        self.left, self.gen = n, gen

    def op(self, ctx: Context) -> dict | Wait | None:
        if self.left <= 0:
            return None
        out = self.gen.op(ctx)
        if isinstance(out, dict):
            self.left -= 1
        return out

    def update(self, ctx: Context, invoke: dict, completion: dict) -> None:
        self.gen.update(ctx, invoke, completion)


class TimeLimit(Generator):
    """``gen`` until ``seconds`` after the first time it is asked; then done."""

    def __init__(self, seconds: float, gen: Generator):
        self.seconds, self.gen = seconds, gen
        self._end: float | None = None

    def op(self, ctx: Context) -> dict | Wait | None:
        if self._end is None:
            self._end = ctx.time + self.seconds
        if ctx.time >= self._end:
            return None
        out = self.gen.op(ctx)
        if isinstance(out, Wait) and out.until > self._end:
            return Wait(self._end)
        return out

    def update(self, ctx: Context, invoke: dict, completion: dict) -> None:
        self.gen.update(ctx, invoke, completion)


class Stagger(Generator):
    """``gen``'s ops spaced out across all threads at ``rate`` ops/s on average.

    Jepsen's ``stagger``: the gap before each op is uniform in
    ``[0, 2 / rate)`` s, so the mean rate is ``rate`` whatever the number of
    threads. Raises ValueError for a rate that is not > 0.
    """

    def __init__(self, rate: float, gen: Generator):
        if not rate > 0:
            raise ValueError(f"Stagger: rate must be > 0 ops/s, got {rate!r}")
        self.period, self.gen = 1.0 / rate, gen
        self._next: float | None = None

    def op(self, ctx: Context) -> dict | Wait | None:
        if self._next is None:
            self._next = ctx.time + ctx.rng.uniform(0, 2 * self.period)
        if ctx.time < self._next:
            return Wait(self._next)
        out = self.gen.op(ctx)
        if isinstance(out, dict):
            # never bank more than one period of idle time: a burst after a stall
            # would not be the rate asked for
            self._next = max(self._next, ctx.time - self.period) + ctx.rng.uniform(0, 2 * self.period)
        return out

    def update(self, ctx: Context, invoke: dict, completion: dict) -> None:
        self.gen.update(ctx, invoke, completion)


class WaitFor(Generator):
    """Nothing until ``cond(ctx)`` holds (polled every ``poll_s``), then done.

    Past ``timeout_s`` it calls ``on_timeout(ctx)`` (which may raise, e.g.
    to fail a scenario) and is done. Raises ValueError for a timeout that
    is not > 0.
    """

    def __init__(self, cond: Callable[[Context], bool], timeout_s: float, poll_s: float = 0.05,
                 on_timeout: Callable[[Context], None] | None = None):
        if not timeout_s > 0:
            raise ValueError(f"WaitFor: timeout_s must be > 0, got {timeout_s!r}")
        self.cond, self.timeout_s, self.poll_s, self.on_timeout = cond, timeout_s, poll_s, on_timeout
        self._end: float | None = None

    def op(self, ctx: Context) -> dict | Wait | None:
        if self._end is None:
            self._end = ctx.time + self.timeout_s
        if self.cond(ctx):
            return None
        if ctx.time >= self._end:
            if self.on_timeout is not None:
                self.on_timeout(ctx)
            return None
        return Wait(min(self._end, ctx.time + self.poll_s))
