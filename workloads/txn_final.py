"""The ``txn`` workload's final phase: after healing, read every key from its beginning.

Source: Jepsen's Kafka workload, whose final phase has its processes assign every key, seek
to the beginning and poll until they have read everything. Here one final process (a
session without transactions, a group of its own) records an ``assign`` of every key with
``"seek_to_beginning": true``, then ``poll`` ops (``"final": true``) until, for every key,
the highest offset read reaches the highest acknowledged one
(:attr:`workloads.txn.TxnWorkload.acked`), or until ``final_timeout_s`` has passed. A poll
that ends ``info`` closes the session; a fresh process assigns again from the beginning.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging

from .recorder import record
from .txn_worker import TxnWorker, polled_value

log = logging.getLogger(__name__)

#: seconds between two attempts after a final op that did not succeed
RETRY_S = 0.5


def missing(acked: dict[str, int], read: dict[str, int]) -> dict[str, tuple[int, int]]:
    """``{key: (highest read, highest acknowledged)}`` of the keys not yet read up to their
    highest acknowledged offset (-1: nothing read)."""
    return {k: (read.get(k, -1), o) for k, o in acked.items() if read.get(k, -1) < o}


class FinalReader(TxnWorker):
    """The final phase's client: a :class:`TxnWorker` of its own thread, without
    transactions, reading every key from its beginning."""

    def session_config(self):
        return dataclasses.replace(super().session_config(), transactional_id=None,
                                   group_id=f"{self.wl.group_id()}-final")


async def final_polls(wl, timeout_s: float | None = None) -> dict[str, tuple[int, int]]:
    """Poll every key from the beginning until every acknowledged offset was read (module
    docstring); returns what is still missing (``{}`` when all was read)."""
    timeout_s = wl.options.final_timeout_s if timeout_s is None else timeout_s
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    reader = FinalReader(wl, wl.options.concurrency)
    keys = wl.options.keys()
    read: dict[str, int] = {}
    process, assigned = wl.pids.next(), False
    try:
        while missing(wl.acked, read) and loop.time() < deadline:
            if not assigned:
                out = await _assign_all(reader, process, keys)
            else:
                out = await record(wl.history, wl.tally, process, "poll", [["poll"]], reader.node,
                                   lambda: _poll(reader, process), lambda r: r, ok_extra=lambda _r: {"final": True})
                if out.type == "ok":
                    for k, recs in out.result[0][1].items():
                        if recs:
                            read[k] = max(read.get(k, -1), max(o for o, _v in recs if o is not None))
            if out.type == "info":
                await reader.close()
                process, assigned = wl.pids.next(), False
            elif out.type == "fail":
                assigned = assigned and out.op.get("f") == "poll"
            else:
                assigned = True
                continue
            await asyncio.sleep(RETRY_S)
        left = missing(wl.acked, read)
        if left:
            log.warning("final polls: %d key(s) not read up to their highest acknowledged offset within "
                        "%.0f s: %s", len(left), timeout_s, left)
        else:
            log.info("final polls: every acknowledged offset read (%d keys)", len(wl.acked))
        return left
    finally:
        await reader.close()


async def _assign_all(reader: FinalReader, process: int, keys: list[str]):
    from .txn_worker import key_of

    async def request():
        session = await reader._session(process)
        await session.assign([key_of(k) for k in keys], from_beginning=True)
        return keys
    wl = reader.wl
    return await record(wl.history, None, process, "assign", keys, reader.node, request, lambda r: r,
                        ok_extra=lambda _r: {"seek_to_beginning": True})


async def _poll(reader: FinalReader, process: int) -> list:
    session = await reader._session(process)
    return [["poll", polled_value(await session.poll())]]
