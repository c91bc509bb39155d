"""Running a core (kraft/quorum/, kraft/replication/) on an asyncio event loop: the part of
the adapters (kraft/runtime/raft.py, kraft/broker/service.py) they share.

An :class:`AsyncDriver` feeds the core its events one at a time (events that arise
while effects are carried out wait in a queue, so a step never runs inside another),
answers the futures of requests handed to the core with :meth:`AsyncDriver.ask`, arms
the core's timers with ``loop.call_at`` (the core's clock is ``time.monotonic()`` in
ms), and runs a task per :class:`kraft.core.events.Send`. Every other effect goes to the
adapter's ``carry_out``, which returns the events it gives back (e.g. SyncDone).
"""
from __future__ import annotations

import asyncio
import collections
import itertools
import logging
from typing import Awaitable, Callable

from ..core.events import FatalError, Received, Reply, Send, SetTimer, TimerFired

log = logging.getLogger("kraft.driver")


class AsyncDriver:
    """Drives ``core``: ``send(effect)`` is a coroutine that carries out a Send (and feeds
    its Replied); ``carry_out(effect) -> list of events`` every effect but Reply, Send and
    SetTimer. ``fatal`` is set when the core raised FatalError (it is not driven again)."""

    def __init__(self, core, send: Callable[[Send], Awaitable[None]], carry_out: Callable[[object], list]):
        self.core, self._send, self._carry_out = core, send, carry_out
        self.fatal: FatalError | None = None
        self.closed = False
        self._queue: collections.deque = collections.deque()
        self._feeding = False
        self._futures: dict[int, asyncio.Future] = {}
        self._tokens = itertools.count(1)
        self._timers: dict[object, asyncio.TimerHandle] = {}
        self.tasks: set[asyncio.Task] = set()

    def feed(self, event) -> None:
        """Hand ``event`` to the core (after any event being handled) and carry out the effects."""
        if not self.closed:
            self._queue.append(event)
            self.drain()

    def call(self, fn, *args):
        """Run a core method as one step (:meth:`QuorumCore.call`) and carry out its effects;
        returns its result."""
        result, effects = self.core.call(fn, *args)
        self.run(effects)
        self.drain()
        return result

    async def ask(self, msg):
        """Hand request ``msg`` to the core; returns the response it answers with. Raises
        RuntimeError once the driver is closed (nothing would answer)."""
        if self.closed:
            raise RuntimeError("the core's driver is closed")
        token = next(self._tokens)
        fut = self._futures[token] = asyncio.get_running_loop().create_future()
        self.feed(Received(token, msg))
        return await fut

    def drain(self) -> None:
        """Hand the core every queued event (unless a step is under way: it does that)."""
        if self._feeding:
            return
        self._feeding = True
        try:
            while self._queue and self.fatal is None:
                try:
                    effects = self.core.step(self._queue.popleft())
                except FatalError as e:
                    log.critical("fatal: %s", e)
                    self.fatal = e
                    return
                self.run(effects)
        finally:
            self._feeding = False

    def run(self, effects: list) -> None:
        """Carry out ``effects`` in order."""
        for e in effects:
            t = type(e)
            if t is Reply:
                fut = self._futures.pop(e.token, None)
                if fut is not None and not fut.done():
                    fut.set_result(e.msg)
            elif t is Send:
                self.spawn(self._send(e))
            elif t is SetTimer:
                old = self._timers.pop(e.key, None)
                if old is not None:
                    old.cancel()
                if not self.closed:
                    self._timers[e.key] = asyncio.get_running_loop().call_at(e.at / 1000.0, self._fire, e.key, e.at)
            else:
                self._queue.extend(self._carry_out(e))

    def _fire(self, key, at: float) -> None:
        self._timers.pop(key, None)
        self.feed(TimerFired(key, at))

    def spawn(self, coro) -> asyncio.Task:
        """Run ``coro`` as a task of this driver (cancelled by :meth:`close`)."""
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("task failed: %r", task.exception(), exc_info=task.exception())

    def close(self) -> list[asyncio.Task]:
        """Stop: no more events, timers cancelled, tasks and waiting futures cancelled;
        returns the tasks (to wait for)."""
        self.closed = True
        for h in self._timers.values():
            h.cancel()
        self._timers.clear()
        tasks = list(self.tasks)
        for t in tasks:
            t.cancel()
        for fut in self._futures.values():
            fut.cancel()
        return tasks
