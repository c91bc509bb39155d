"""One client thread of a workload: a process id, a belief of who leads, paced ops.

Shared by the workloads (``append``, ``kv``). A worker issues one op at a
time (so one client per node suffices) at ``rate / concurrency`` ops/s with
seeded jitter. After an op that did not succeed it follows the
``leader_id`` hint of a DefiniteError, or picks a random other node; after
an ``info`` it takes a fresh process id (Jepsen: the old process may be
stuck forever).
"""
from __future__ import annotations

import asyncio
import random

from .recorder import Outcome


def pick_other(rng: random.Random, nodes: list[str], current: str | None) -> str:
    """A random node, other than ``current`` when there is a choice."""
    choices = [n for n in nodes if n != current] or nodes
    return rng.choice(choices)


class PacedWorker:
    """Base class: subclasses implement :meth:`step` (issue and record one op).

    ``wl`` is the workload: it provides ``name``, ``seed``, ``topology``,
    ``pids`` (a :class:`workloads.counters.Sequence`), ``options.concurrency``,
    ``options.rate`` (total ops/s) and ``pool()`` (a fresh
    :class:`workloads.clients.ClientPool`). The workload's ``name`` and
    ``index`` seed the worker's own ``Random(f"{seed}:{name}:worker:{index}")``.
    """

    def __init__(self, wl, index: int):
        self.wl, self.index = wl, index
        self.rng = random.Random(f"{wl.seed}:{wl.name}:worker:{index}")
        self.nodes = list(wl.topology.nodes)
        self.process = wl.pids.next()
        self.target = self.rng.choice(self.nodes)
        self.clients = wl.pool()

    async def step(self) -> None:
        """Issue and record one op."""
        raise NotImplementedError

    async def run(self, stop: asyncio.Event) -> None:
        """Issue paced ops until ``stop`` is set; closes the clients at the end."""
        loop = asyncio.get_running_loop()
        interval = self.wl.options.concurrency / self.wl.options.rate  # seconds per op, per worker
        next_at = loop.time() + self.rng.uniform(0, interval)
        try:
            while not stop.is_set():
                delay = next_at - loop.time()
                if delay > 0:
                    try:
                        await asyncio.wait_for(stop.wait(), delay)
                        break
                    except TimeoutError:
                        pass
                now = loop.time()
                next_at = max(next_at, now - interval) + interval * self.rng.uniform(0.5, 1.5)
                await self.step()
        finally:
            await self.clients.close()

    def after(self, out: Outcome, follow: bool = True) -> None:
        """Update the process id (a fresh one after ``info``) and, with
        ``follow``, the leader belief after an op that did not succeed."""
        if out.type == "ok":
            return
        if out.type == "info":
            self.process = self.wl.pids.next()
        if not follow:
            return
        hinted = self.wl.topology.node_for_id(out.leader_hint)
        self.target = hinted if hinted is not None else pick_other(self.rng, self.nodes, self.target)


async def run_workers(workers: list[PacedWorker], monitor, stop: asyncio.Event, name: str) -> None:
    """Run ``workers`` (and ``monitor``, a QuorumMonitor or None) until ``stop`` is set.

    Ops in flight when ``stop`` is set finish before this returns;
    cancellation records in-flight ops as ``info`` (workloads.recorder).
    """
    tasks = [asyncio.create_task(w.run(stop), name=f"{name}-worker-{w.index}") for w in workers]
    if monitor is not None:
        tasks.append(asyncio.create_task(monitor.run(stop), name="quorum-monitor"))
    try:
        await asyncio.gather(*tasks)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
