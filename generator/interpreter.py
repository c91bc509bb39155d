"""Runs a generator: each thread asks it for ops and hands them to its worker to send.

Jepsen's interpreter, on one asyncio loop: a thread per client worker
(``0..C-1``) and one ``"nemesis"`` thread. Each thread loops: ask the
generator (:mod:`generator.core`) with a fresh :class:`~generator.core.Context`;
on an op, ``await worker.invoke(op, process)`` (the worker sends it and
records invoke and completion in the history), then tell the generator;
on a :class:`~generator.core.Wait`, sleep until then, until another op
completes, or until stop; on None, the thread is done. A client thread whose
op ended ``info`` takes a fresh process id (the old process may be stuck
forever); the nemesis's process is always ``"nemesis"``.
"""
from __future__ import annotations

import asyncio
import random
from typing import Any, Callable, Mapping, Protocol

from .core import Context, Generator, Wait

NEMESIS = "nemesis"


class Worker(Protocol):
    """How one thread's ops are sent (a workload client, or the nemesis)."""

    async def invoke(self, op: dict, process: int | str) -> Any:
        """Send ``op`` as ``process``, record its invoke and completion in the history, and
        return an outcome with ``type`` ("ok" | "fail" | "info") and ``op`` (the completion
        op as written)."""

    async def close(self) -> None:
        """Release the worker's connections (the nemesis heals what it holds)."""


class Interpreter:
    """Runs ``gen`` over ``workers`` (``{thread: Worker}``) until it is done or ``stop`` is set.

    ``pids()`` hands out fresh client process ids. ``seed`` seeds each
    thread's ``random.Random(f"{seed}:thread:{thread}")``. ``view()`` gives
    the observations generators may aim with (e.g. the quorum monitor's),
    read at each ask. ``on_op(thread, op)`` is told of every op before it is
    sent (progress display).
    """

    def __init__(self, gen: Generator, workers: Mapping[int | str, Worker], pids: Callable[[], int],
                 seed: int, view: Callable[[], Any] = lambda: None,
                 on_op: Callable[[int | str, dict], None] | None = None):
        self.gen, self.workers, self.pids, self.seed = gen, dict(workers), pids, seed
        self.view, self.on_op = view, on_op
        self._wake = asyncio.Event()
        self._t0 = 0.0

    def now(self) -> float:
        """Seconds since :meth:`run` started."""
        return asyncio.get_running_loop().time() - self._t0

    def _notify(self) -> None:
        self._wake.set()
        self._wake = asyncio.Event()

    async def run(self, stop: asyncio.Event) -> None:
        """Run every thread until the generator is done for it or ``stop`` is set.

        Ops in flight when ``stop`` is set finish first. Workers are closed at
        the end, also on cancellation (in-flight ops are then recorded as info
        by the workers). An exception from a worker or the generator ends the
        run and propagates.
        """
        self._t0 = asyncio.get_running_loop().time()
        tasks = [asyncio.create_task(self._thread(t, w, stop), name=f"thread-{t}")
                 for t, w in self.workers.items()]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for t in done:
                if t.exception() is not None:
                    raise t.exception()
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for w in self.workers.values():
                await w.close()

    async def _thread(self, thread: int | str, worker: Worker, stop: asyncio.Event) -> None:
        rng = random.Random(f"{self.seed}:thread:{thread}")
        process: int | str = NEMESIS if thread == NEMESIS else self.pids()
        while not stop.is_set():
            ctx = Context(self.now(), thread, process, rng, self.view())
            out = self.gen.op(ctx)
            if out is None:
                return
            if isinstance(out, Wait):
                await self._sleep(out.until - ctx.time, stop)
                continue
            if self.on_op is not None:
                self.on_op(thread, out)
            outcome = await worker.invoke(out, process)
            self.gen.update(Context(self.now(), thread, process, rng, self.view()), out, outcome.op)
            self._notify()
            if outcome.type == "info" and thread != NEMESIS:
                process = self.pids()

    async def _sleep(self, seconds: float, stop: asyncio.Event) -> None:
        """Sleep ``seconds`` at most; wake early when an op completes or ``stop`` is set."""
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        wake = asyncio.ensure_future(self._wake.wait())
        halt = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait([wake, halt], timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            wake.cancel()
            halt.cancel()
