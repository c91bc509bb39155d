"""The follower side of a partition: truncate, then fetch from the leader forever
(Kafka 0.8 replication design, ``becomeFollower`` and the ReplicaFetcherThread;
KIP-101 for the truncation).

One task per partition and role generation (:attr:`PartitionReplica.generation`):

1. Truncation. ``truncate-to-hw`` (unsafe): to the local high watermark, as 0.8.
   Default (``leader-epoch``): OffsetForLeaderEpoch (23) for the log's last epoch and
   :func:`kraft.truncation.leader_epoch_step`, repeated until the epochs agree.
2. ReplicaFetch (1101) from the log end offset, long-polled by the leader. Records are
   appended and flushed (not under ``page-cache-ack``) before the next fetch reports
   the new offset; the high watermark becomes ``min(leader's, own log end offset)``.
   ``OFFSET_OUT_OF_RANGE`` (the leader's log ends below our fetch offset: it lost
   records, or we kept some it never had) truncates to the leader's log end offset.

Errors back off and retry; a ``FENCED_LEADER_EPOCH`` waits for the metadata image to
name the new leader (which starts a new task).
"""
from __future__ import annotations

import asyncio
import logging
from typing import Callable

from . import api, errors
from .client import ClientError, KraftClient
from .partition import FOLLOWER, PartitionReplica
from .records import DATA, Record
from .truncation import leader_epoch_step, truncate_to_hw_target

log = logging.getLogger("kraft.replica_fetcher")


class ReplicaFetcher:
    """Follows ``replica``'s leader at ``endpoint`` (host, port) for the current generation.

    ``broker_id``: ours. ``cluster_id``: the cluster's. ``truncate_to_hw``: the unsafe
    mode. ``page_cache_ack``: do not fsync before reporting. ``max_records`` and
    ``max_wait_ms``: per ReplicaFetch. ``timeout_ms``: per request. ``backoff_s``: after
    an error. ``on_progress``: called after every applied response (for tests/metrics).
    """

    def __init__(self, replica: PartitionReplica, endpoint: tuple[str, int], broker_id: int,
                 cluster_id: str, *, truncate_to_hw: bool, page_cache_ack: bool, max_records: int,
                 max_wait_ms: int, timeout_ms: int, backoff_s: float,
                 on_progress: Callable[[], None] | None = None):
        self.replica, self.broker_id = replica, broker_id
        self.truncate_to_hw, self.page_cache_ack = truncate_to_hw, page_cache_ack
        self.max_records, self.max_wait_ms, self.backoff_s = max_records, max_wait_ms, backoff_s
        self.gen = replica.generation
        self.client = KraftClient(endpoint[0], endpoint[1], cluster_id, timeout_ms=timeout_ms + max_wait_ms)
        self.on_progress = on_progress

    def _live(self) -> bool:
        r = self.replica
        return r.generation == self.gen and r.role == FOLLOWER

    def _key(self) -> dict:
        r = self.replica
        return {"Topic": r.topic, "Partition": r.partition}

    async def run(self) -> None:
        """Truncate, then fetch until the replica's generation changes."""
        try:
            if await self._truncate():
                await self._fetch_loop()
        finally:
            await self.client.close()

    async def _request(self, key: int, body: dict) -> dict | None:
        try:
            resp = await self.client.request(key, {**self._key(), **body})
        except ClientError as e:
            log.debug("%s: %s to leader %d failed: %s", self.replica.name, api.NAMES[key],
                      self.replica.leader_id, e)
            await asyncio.sleep(self.backoff_s)
            return None
        code = resp.get("ErrorCode", errors.UNKNOWN_SERVER_ERROR)
        if code != errors.NONE and code != errors.OFFSET_OUT_OF_RANGE:
            log.debug("%s: %s from leader %d: %s", self.replica.name, api.NAMES[key],
                      self.replica.leader_id, errors.name(code))
            await asyncio.sleep(self.backoff_s)
            return None
        return resp

    async def _truncate(self) -> bool:
        """becomeFollower's truncation; False if the generation ended first."""
        r = self.replica
        if self.truncate_to_hw:
            r.truncate_to(truncate_to_hw_target(r.hw, r.log.end_offset))
            return self._live()
        while self._live() and r.log.end_offset > 0:
            requested = r.log.last_epoch
            resp = await self._request(api.OFFSET_FOR_LEADER_EPOCH, {
                "CurrentLeaderEpoch": r.leader_epoch, "LeaderEpoch": requested})
            if resp is None or not self._live():
                continue
            if r.log.last_epoch != requested:
                continue
            if resp.get("ErrorCode") != errors.NONE:
                await asyncio.sleep(self.backoff_s)
                continue
            step = leader_epoch_step(r.log, resp.get("LeaderEpoch", -1), resp.get("EndOffset", -1), r.hw)
            r.truncate_to(step.offset)
            if step.done:
                break
        return self._live()

    async def _fetch_loop(self) -> None:
        r = self.replica
        while self._live():
            resp = await self._request(api.REPLICA_FETCH, {
                "ReplicaId": self.broker_id, "LeaderEpoch": r.leader_epoch,
                "FetchOffset": r.log.end_offset, "MaxRecords": self.max_records,
                "MaxWaitMs": self.max_wait_ms})
            if resp is None or not self._live():
                continue
            if resp.get("ErrorCode") == errors.OFFSET_OUT_OF_RANGE:
                end = resp.get("LogEndOffset")
                if isinstance(end, int) and 0 <= end < r.log.end_offset:
                    log.warning("%s: leader %d's log ends at %d, below ours (%d): truncating",
                                r.name, r.leader_id, end, r.log.end_offset)
                    r.truncate_to(end)
                else:
                    await asyncio.sleep(self.backoff_s)
                continue
            self._apply(resp)
            if self.on_progress is not None:
                self.on_progress()

    def _apply(self, resp: dict) -> None:
        r = self.replica
        appended = 0
        for item in resp.get("Records") or []:
            try:
                offset, epoch, value = item
            except (TypeError, ValueError):
                log.warning("%s: malformed record %r from leader %d", r.name, item, r.leader_id)
                break
            if offset != r.log.end_offset or epoch < r.log.last_epoch:
                break
            r.log.append(Record(offset, epoch, DATA, value))
            appended += 1
        if appended and not self.page_cache_ack:
            r.log.flush()                 # durable before the next fetch reports it
        hw = resp.get("HighWatermark")
        if isinstance(hw, int):
            r.hw = max(0, min(hw, r.log.end_offset))
        if appended:
            r.notify()
