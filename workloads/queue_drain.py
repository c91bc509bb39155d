"""The queue workload's final phase: after healing, read every partition from offset 0 to its end.

Source: Jepsen's Kafka test, whose final phase has every process poll until
it has read everything. Here one drainer per partition, all at once, each
with its own client and process:

1. wait for the partition to have a leader: ``end_offset`` (its high watermark,
   HW), retried until it answers (not recorded: only reads are);
2. ``poll`` pages from the drain position, each recorded with ``"final": true``
   and ``"end": HW`` (the high watermark being drained to), up to
   ``drain_max_records`` records a page; an ok page moves the position past its
   last record; an empty page below HW asks for the HW again (a new leader's HW
   may be lower);
3. once the position reaches HW, ask for the HW again: done when it has not
   grown (a new leader's HW may still be catching up) and the last page
   recorded reached its own ``end``.

At least one page is recorded per drained partition, also an empty one, so
the checkers know the drain happened (checkers/queue_lost.py). A ``fail``/``info``
page is retried after a pause, from the same position with the HW asked again
(an ``info`` takes a new process and client).
Each partition gives up after ``timeout_s``; the lost-writes checker then
finds its drain incomplete and says "unknown" for it.
"""
from __future__ import annotations

import asyncio
import logging

from .queue import QueueWorkload, checked_records
from .recorder import record

log = logging.getLogger(__name__)

#: seconds each partition's drain may take, leader wait included
DRAIN_TIMEOUT_S = 60.0
#: seconds between retries of a drain request that did not succeed
DRAIN_RETRY_S = 0.5


async def _end_offset(wl: QueueWorkload, client, p: int, deadline: float, retry_s: float) -> int | None:
    """The high watermark of partition ``p`` once its leader answers, or None at ``deadline``."""
    loop = asyncio.get_running_loop()
    while True:
        try:
            hw = await client.end_offset(wl.options.topic, p)
            if type(hw) is int and hw >= 0:
                return hw
            log.warning("partition %d: end_offset answered %r", p, hw)
        except Exception as e:      # ClientError (no leader yet) or a client bug: retry
            log.debug("partition %d: end_offset: %r", p, e)
        if loop.time() + retry_s >= deadline:
            return None
        await asyncio.sleep(retry_s)


async def drain_partition(wl: QueueWorkload, p: int, timeout_s: float = DRAIN_TIMEOUT_S,
                          retry_s: float = DRAIN_RETRY_S) -> int | None:
    """Drain partition ``p`` (module docstring); returns the offset reached, or None when
    it gave up after ``timeout_s`` (s)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    topic, page = wl.options.topic, wl.options.drain_max_records
    bootstrap, node = wl.bootstrap_for(p)
    client = wl.make_client(bootstrap)
    process = wl.pids.next()
    pos, end, recorded_end = 0, None, None      # recorded_end: "end" of the last ok page
    try:
        while True:
            if end is None or pos >= end:
                hw = await _end_offset(wl, client, p, deadline, retry_s)
                if hw is None:
                    log.warning("drain of partition %d: no leader answered within %.0f s (at offset %d)",
                                p, timeout_s, pos)
                    return None
                if recorded_end is not None and hw <= pos and recorded_end <= pos:
                    return pos
                end = hw
            value = {"partition": p, "from": pos, "final": True, "end": end}

            async def request(start=pos):
                return checked_records(await client.poll(topic, p, start, page))

            out = await record(wl.history, wl.tally, process, "poll", value, node, request,
                               lambda recs, v=value: {**v, "records": recs})
            if out.type == "ok":
                recorded_end = end
                if out.result:
                    pos = max(pos, out.result[-1][0] + 1)
                    continue
                if pos >= end:
                    continue
                end = None                  # nothing below the HW asked for: ask it again
            else:                           # the leader may have changed: ask the HW again
                end = None
                if out.type == "info":
                    await wl.close_client(client)
                    client, process = wl.make_client(bootstrap), wl.pids.next()
            if loop.time() + retry_s >= deadline:
                log.warning("drain of partition %d did not finish within %.0f s (at offset %d of %s)",
                            p, timeout_s, pos, end)
                return None
            await asyncio.sleep(retry_s)
    finally:
        await wl.close_client(client)


async def drain(wl: QueueWorkload, timeout_s: float = DRAIN_TIMEOUT_S,
                retry_s: float = DRAIN_RETRY_S) -> dict[int, int | None]:
    """Drain every partition at once; ``{partition: offset reached or None}``."""
    parts = range(wl.options.partitions)
    reached = await asyncio.gather(*(drain_partition(wl, p, timeout_s, retry_s) for p in parts))
    result = dict(zip(parts, reached))
    log.info("final drain of %s: %s", wl.options.topic, result)
    return result
