"""The ``append`` workload: concurrent clients append unique ints and read the committed log.

Which op next is :class:`AppendGenerator` (about one op in ten is a
linearizable read of the last ~200 committed offsets); how it is sent is
:class:`AppendClient`. C workers (``concurrency``) share a target total rate
(ops/s). Each worker keeps its own belief of who leads: it follows the
``leader_id`` hint of a DefiniteError and picks a random other node after an
indefinite error or a hint-less failure; a few roam (workloads/worker.py).
History shapes are those of DEVELOPERS.md, "Client ops". A worker whose op
ends in ``info`` takes a fresh process id (Jepsen: the process may be stuck
forever). After healing, :func:`final_reads` reads the whole log.

A :class:`workloads.monitor.QuorumMonitor` runs alongside and samples
DescribeQuorum on every node (for election safety and availability).
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from typing import Any

from generator import Context, Generator

from .base import ClientOptions, ClientWorkload
from .counters import Sequence
from .recorder import Outcome, record
from .worker import ClientWorker, pick_other

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


class AppendGenerator(Generator):
    """Which op next: a read with probability ``read_fraction``, else an append of the next
    unique int. Reads start ``read_window`` records below the highest high watermark
    any completed op has shown (an ok append at offset O shows O + 1)."""

    def __init__(self, options: AppendOptions):
        self.options = options
        self.values = Sequence(0)
        self.last_hw = 0

    def op(self, ctx: Context) -> dict:
        if ctx.rng.random() < self.options.read_fraction:
            return {"f": "read", "value": {"from": max(0, self.last_hw - self.options.read_window),
                                           "linearizable": True, "final": False}}
        return {"f": "append", "value": self.values.next()}

    def update(self, ctx: Context, invoke: dict, completion: dict) -> None:
        if completion is None or completion.get("type") != "ok":
            return
        v = completion.get("value")
        if completion["f"] == "append" and isinstance(v, dict) and isinstance(v.get("offset"), int):
            self.last_hw = max(self.last_hw, v["offset"] + 1)
        elif completion["f"] == "read" and isinstance(v, dict) and isinstance(v.get("high_watermark"), int):
            self.last_hw = max(self.last_hw, v["high_watermark"])


class AppendClient(ClientWorker):
    """How the append workload's ops are sent (see :class:`AppendWorkload`)."""

    ops = {"append": "append", "read": "read"}

    async def append(self, op: dict, process: int) -> Outcome:
        """Append ``op["value"]`` (a unique int) to the believed leader; record it."""
        node, v = self.node_for(), op["value"]
        out = await record(self.wl.history, self.wl.tally, process, "append", v, node,
                           lambda: self.clients.get(node).append(v),
                           lambda r: {"value": v, "offset": r[0], "epoch": r[1]})
        self.after(out)
        return out

    async def read(self, op: dict, process: int) -> Outcome:
        """A linearizable read from ``op["value"]["from"]``, to the believed leader or (with
        probability ``read_any_node``) a random node, in which case the outcome does not
        change the leader belief."""
        anywhere = self.rng.random() < self.wl.options.read_any_node
        node = self.node_for(anywhere)
        value = op["value"]
        out = await record(self.wl.history, self.wl.tally, process, "read", value, node,
                           lambda: self.clients.get(node).read(value["from"], linearizable=True),
                           lambda r: read_ok_value(value, r))
        self.after(out, follow=not anywhere)
        return out


class AppendWorkload(ClientWorkload):
    """Appends of unique ints and linearizable reads of the log's tail.

    Arguments as :class:`workloads.base.ClientWorkload`; the ops come from
    :class:`AppendGenerator` and are sent by :class:`AppendClient`. ``tally``
    counts outcomes for progress.
    """

    name = "append"
    options_class = AppendOptions
    client_fs = ("append", "read")
    worker_class = AppendClient

    def generator(self) -> AppendGenerator:
        return AppendGenerator(self.options)


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
