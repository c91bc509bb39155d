"""The ``append`` workload: concurrent clients append unique ints and read the committed log.

C workers (``concurrency``) share a target total rate (ops/s); each paces
itself at rate/C with seeded jitter. About one op in ten is a linearizable
read of the last ~200 committed offsets. Each worker keeps its own belief of
who leads: it follows the ``leader_id`` hint of a DefiniteError and picks a
random other node after an indefinite error or a hint-less failure. History
shapes are those of DEVELOPERS.md, "Client ops". A worker whose op ends in
``info`` takes a fresh process id (Jepsen: the process may be stuck forever).

A :class:`workloads.monitor.QuorumMonitor` runs alongside and samples
DescribeQuorum on every node (for election safety and availability).
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from typing import Any

from .base import ClientOptions, ClientWorkload
from .counters import Sequence
from .recorder import Outcome, record
from .worker import PacedWorker, pick_other

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class AppendOptions(ClientOptions):
    """Knobs of the append workload: those of :class:`workloads.base.ClientOptions`, and

    ``read_fraction``: probability an op is a read (0..1). ``read_window``:
    reads start at max(0, last seen high watermark - window) (records).
    Raises ``ValueError`` naming the bad field.
    """

    read_fraction: float = 0.1
    read_window: int = 200

    def __post_init__(self) -> None:
        super().__post_init__()
        self.check_fractions("read_fraction")
        if self.read_window < 0:
            raise ValueError(f"read_window must be >= 0, got {self.read_window!r}")


class _Worker(PacedWorker):
    """One client thread of the append workload (see :class:`AppendWorkload`)."""

    def __init__(self, wl: AppendWorkload, index: int):
        super().__init__(wl, index)
        self.last_hw = 0

    async def step(self) -> None:
        """One op: a read with probability ``read_fraction``, else an append."""
        if self.rng.random() < self.wl.options.read_fraction:
            await self.read()
        else:
            await self.append()

    async def append(self) -> Outcome:
        """Append the next unique value to the believed leader; record it."""
        node, v = self.target, self.wl.values.next()
        out = await record(self.wl.history, self.wl.tally, self.process, "append", v, node,
                           lambda: self.clients.get(node).append(v),
                           lambda r: {"value": v, "offset": r[0], "epoch": r[1]})
        if out.type == "ok":
            self.last_hw = max(self.last_hw, out.result[0] + 1)
        self.after(out)
        return out

    async def read(self) -> Outcome:
        """A linearizable read of the recent committed log, from the believed
        leader or (with probability ``read_any_node``) from a random node, in
        which case the outcome does not change the worker's leader belief."""
        anywhere = self.rng.random() < self.wl.options.read_any_node
        node = self.rng.choice(self.nodes) if anywhere else self.target
        value = {"from": max(0, self.last_hw - self.wl.options.read_window),
                 "linearizable": True, "final": False}
        out = await record(self.wl.history, self.wl.tally, self.process, "read", value, node,
                           lambda: self.clients.get(node).read(value["from"], linearizable=True),
                           lambda r: read_ok_value(value, r))
        if out.type == "ok":
            self.last_hw = max(self.last_hw, out.result["high_watermark"])
        self.after(out, follow=not anywhere)
        return out


class AppendWorkload(ClientWorkload):
    """Drives the cluster with appends and reads until a stop event is set.

    Arguments as :class:`workloads.base.ClientWorkload`; worker i uses
    ``Random(f"{seed}:append:worker:{i}")``. ``tally`` counts outcomes for
    progress; ``values`` hands out the unique appended ints.
    """

    name = "append"
    options_class = AppendOptions
    client_fs = ("append", "read")
    worker_class = _Worker

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.values = Sequence(0)


def read_ok_value(invoke_value: dict, result: dict) -> dict:
    """The ok value of a read: the invoke value plus ``high_watermark`` and ``records``."""
    return {**invoke_value, "high_watermark": result["high_watermark"],
            "records": result["records"]}


async def final_reads(wl: AppendWorkload, leader: str | None, timeout_s: float = 30.0,
                      node_timeout_s: float = 10.0, retry_delay_s: float = 0.5) -> dict[str, Any]:
    """The end-of-test reads, recorded with ``"final": true``.

    First one linearizable read of the whole log (``from`` 0) via ``leader``
    (or any node), retried — following leader hints — until ok or
    ``timeout_s`` (s). Then one non-linearizable read from offset 0 on every
    node, concurrently, each retried until ok or ``node_timeout_s``. Returns
    ``{"linearizable": ok value | None, "nodes": {node: ok value | None}}``.
    """
    loop = asyncio.get_running_loop()
    rng = random.Random(f"{wl.seed}:append:final")
    nodes = list(wl.topology.nodes)
    pool = wl.pool()
    result: dict[str, Any] = {"linearizable": None, "nodes": {}}
    try:
        process, target = wl.pids.next(), leader or nodes[0]
        deadline = loop.time() + timeout_s
        value = {"from": 0, "linearizable": True, "final": True}
        while True:
            node = target
            out = await record(wl.history, wl.tally, process, "read", value, node,
                               lambda: pool.get(node).read(0, linearizable=True),
                               lambda r: read_ok_value(value, r))
            if out.type == "ok":
                result["linearizable"] = read_ok_value(value, out.result)
                break
            if out.type == "info":
                process = wl.pids.next()
            hinted = wl.topology.node_for_id(out.leader_hint)
            target = hinted if hinted is not None else pick_other(rng, nodes, node)
            if loop.time() + retry_delay_s >= deadline:
                log.warning("final linearizable read did not succeed within %.0f s", timeout_s)
                break
            await asyncio.sleep(retry_delay_s)
    finally:
        await pool.close()

    async def node_read(node: str) -> None:
        npool = wl.pool()
        process = wl.pids.next()
        value = {"from": 0, "linearizable": False, "final": True}
        end = loop.time() + node_timeout_s
        try:
            while True:
                out = await record(wl.history, wl.tally, process, "read", value, node,
                                   lambda: npool.get(node).read(0, linearizable=False),
                                   lambda r: read_ok_value(value, r))
                if out.type == "ok":
                    result["nodes"][node] = read_ok_value(value, out.result)
                    return
                if out.type == "info":
                    process = wl.pids.next()
                if loop.time() + retry_delay_s >= end:
                    log.warning("final read on %s did not succeed within %.0f s", node, node_timeout_s)
                    result["nodes"][node] = None
                    return
                await asyncio.sleep(retry_delay_s)
        finally:
            await npool.close()

    await asyncio.gather(*(node_read(n) for n in nodes))
    return result
