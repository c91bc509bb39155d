"""The broker role (``process.roles=broker``): ISR replication of partitions, driven by
the metadata the controllers commit (docs/data-plane.md; Kafka 0.8's replication
design; KIP-631 broker lifecycle; KIP-101 truncation).

The broker's RaftNode is an observer of the metadata quorum: it replicates the
metadata log and replays committed Metadata records into ``node.metadata.image``
(kraft/metadata_replay.py). The :class:`BrokerService`:

- registers with the active controller (BrokerRegistration 62) and heartbeats
  (BrokerHeartbeat 63, every :data:`HEARTBEAT_INTERVAL_S`, with its image offset),
  re-registering after STALE_BROKER_EPOCH (kraft/controller_channel.py finds the
  active controller);
- on every new image, once the image holds its own current registration (so that a
  restarted broker never acts on the stale leaderships of a half-replayed log),
  applies LeaderAndISR to each partition it is a replica of (0.8's
  ``on_LeaderAndISRCommand``): ``becomeLeader`` (kraft/partition.py),
  ``becomeFollower`` with a fetcher (kraft/replica_fetcher.py), or offline;
- as a leader, proposes ISR changes with AlterPartition (56) (kraft/isr.py) and
  applies them when the PartitionChangeRecord reaches its image;
- flushes appended records (batched, :data:`FLUSH_LINGER_S`; under ``page-cache-ack``
  every ``log.flush.interval.ms``) and checkpoints high watermarks every
  ``replica.high.watermark.checkpoint.interval.ms``;
- serves the broker RPCs (kraft/broker_api.py).
"""
from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import TYPE_CHECKING

from . import api, errors
from .broker_api import BrokerApi
from .client import ClientError
from .controller_channel import ControllerChannel
from .metadata_image import MIN_ISR, MetadataImage
from .partition import FOLLOWER, LEADER, NONE, PartitionReplica
from .replica_fetcher import ReplicaFetcher

if TYPE_CHECKING:
    from .raft import RaftNode

log = logging.getLogger("kraft.broker")

#: BrokerHeartbeat period (s); registration retries at the same pace.
HEARTBEAT_INTERVAL_S = 0.5
#: How long a leader batches appends before one fsync (s).
FLUSH_LINGER_S = 0.002
#: Timer period: ISR checks, checkpoints, page-cache-ack flushes (s).
TIMER_S = 0.05
#: How long close() waits for the broker's tasks to end (s).
CLOSE_WAIT_S = 2.0
#: Back-off after a refused or failed AlterPartition (ms).
ALTER_BACKOFF_MS = 500


def _now_ms() -> float:
    return time.monotonic() * 1000.0


class BrokerService:
    """The data plane of the broker ``node``. ``handlers()`` for the server; ``start()``
    inside the event loop, ``await close()`` on shutdown (flushes and checkpoints)."""

    def __init__(self, node: "RaftNode"):
        self.node, self.cfg = node, node.cfg
        self.broker_id = node.id
        self.truncate_to_hw = "truncate-to-hw" in self.cfg.unsafe
        self.page_cache_ack = "page-cache-ack" in self.cfg.unsafe
        self.hw_below_min_isr = "hw-below-min-isr" in self.cfg.unsafe
        self.partitions: dict[tuple[str, int], PartitionReplica] = {}
        self.broker_epoch = -1
        self.incarnation_id = str(uuid.uuid4())
        self.fenced = True
        self.channel = ControllerChannel(node, self.cfg.request_timeout_ms)
        self.api = BrokerApi(self)
        self._image_changed = asyncio.Event()
        self._flushes: dict[tuple[str, int], asyncio.Handle] = {}
        self._tasks: set[asyncio.Task] = set()
        self._closed = False
        self._last_checkpoint = self._last_flush = 0.0

    @property
    def image(self) -> MetadataImage:
        """The committed metadata as this broker has replayed it."""
        return self.node.metadata.image

    def handlers(self) -> dict:
        """The broker RPCs (kraft/broker_api.py) by api key."""
        return self.api.handlers()

    # -- lifecycle ----------------------------------------------------------------------
    def start(self) -> None:
        """Hook the metadata replay and start the registration, image and timer tasks."""
        self.node.metadata.listeners.append(self._on_image)
        for coro in (self._lifecycle(), self._apply_loop(), self._timers()):
            self._spawn(coro)

    def _spawn(self, coro) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("broker task failed: %r", task.exception(), exc_info=task.exception())

    async def close(self) -> None:
        """Stop every task, then flush, checkpoint and close every partition log."""
        self._closed = True
        if self._on_image in self.node.metadata.listeners:
            self.node.metadata.listeners.remove(self._on_image)
        for h in self._flushes.values():
            h.cancel()
        self._flushes.clear()
        for r in self.partitions.values():      # ends every fetcher's generation: even one whose
            r.become_offline(r.leader_epoch)    # cancellation a request timeout swallowed stops
        for t in list(self._tasks):
            t.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=CLOSE_WAIT_S)
        for r in self.partitions.values():
            try:
                r.close()
            except OSError as e:
                log.warning("%s: close failed: %s", r.name, e)
        await self.channel.close()

    # -- registration and heartbeats (KIP-631) -----------------------------------------------
    async def _lifecycle(self) -> None:
        timeout_s = self.cfg.request_timeout_ms / 1000.0
        while not self._closed:
            try:
                if self.broker_epoch < 0:
                    await self._register(timeout_s)
                else:
                    await self._heartbeat(timeout_s)
            except ClientError as e:
                log.debug("controller request failed: %s", e)
            await asyncio.sleep(HEARTBEAT_INTERVAL_S)

    async def _register(self, timeout_s: float) -> None:
        resp = await self.channel.request(api.BROKER_REGISTRATION, {
            "BrokerId": self.broker_id, "Host": self.cfg.listen_host, "Port": self.cfg.listen_port,
            "IncarnationId": self.incarnation_id}, timeout_s)
        if resp.get("ErrorCode") == errors.NONE and isinstance(resp.get("BrokerEpoch"), int):
            self.broker_epoch = resp["BrokerEpoch"]
            log.info("registered as broker %d, epoch %d", self.broker_id, self.broker_epoch)
            self._image_changed.set()
        else:
            log.info("BrokerRegistration refused: %s", errors.name(resp.get("ErrorCode", -1)))

    async def _heartbeat(self, timeout_s: float) -> None:
        resp = await self.channel.request(api.BROKER_HEARTBEAT, {
            "BrokerId": self.broker_id, "BrokerEpoch": self.broker_epoch,
            "CurrentMetadataOffset": self.image.offset}, timeout_s)
        code = resp.get("ErrorCode")
        if code == errors.NONE:
            fenced = bool(resp.get("IsFenced", True))
            if fenced != self.fenced:
                log.info("broker %d is %s", self.broker_id, "fenced" if fenced else "unfenced")
            self.fenced = fenced
        elif code in (errors.STALE_BROKER_EPOCH, errors.BROKER_ID_NOT_REGISTERED):
            log.info("BrokerHeartbeat: %s; registering again", errors.name(code))
            self.broker_epoch = -1

    # -- LeaderAndISR from the image (0.8's on_LeaderAndISRCommand) ---------------------------------
    def _on_image(self, image: MetadataImage) -> None:
        self._image_changed.set()

    async def _apply_loop(self) -> None:
        while not self._closed:
            await self._image_changed.wait()
            self._image_changed.clear()
            self.apply_image(self.image)

    def registered_in(self, image: MetadataImage) -> bool:
        """True iff ``image`` holds this broker's current registration."""
        b = image.brokers.get(self.broker_id)
        return self.broker_epoch >= 0 and b is not None and b.epoch == self.broker_epoch

    def apply_image(self, image: MetadataImage) -> None:
        """Make every local replica's role match ``image`` (nothing until the image holds
        this broker's current registration)."""
        if self._closed or not self.registered_in(image):
            return
        now = _now_ms()
        for key, st in image.partitions.items():
            r = self.partitions.get(key)
            if self.broker_id not in st.replicas:
                if r is not None and r.role != NONE:
                    r.become_offline(st.leader_epoch)
                continue
            if r is None:
                r = self._open(key)
                if r is None:
                    continue
            topic = image.topics.get(st.topic)
            min_isr = topic.configs.get(MIN_ISR, 1) if topic is not None else 1
            if st.leader == self.broker_id:
                if r.role != LEADER or r.leader_epoch != st.leader_epoch:
                    r.become_leader(st.leader_epoch, st.partition_epoch, st.isr, st.replicas, min_isr, now)
                elif r.partition_epoch != st.partition_epoch:
                    r.update_leader_state(st.partition_epoch, st.isr, st.replicas, min_isr)
            elif st.leader >= 0:
                if r.role != FOLLOWER or r.leader_epoch != st.leader_epoch or r.leader_id != st.leader:
                    self._become_follower(r, st.leader, st.leader_epoch, image)
            elif r.role != NONE:
                r.become_offline(st.leader_epoch)

    def _open(self, key: tuple[str, int]) -> PartitionReplica | None:
        """startReplica: open (creating) the local replica of ``key``."""
        r = PartitionReplica(self.cfg.data_dir, key[0], key[1], self.broker_id, self.cfg.segment_bytes,
                             page_cache_ack=self.page_cache_ack, hw_below_min_isr=self.hw_below_min_isr)
        try:
            r.open()
        except OSError as e:
            log.error("cannot open partition %s-%d: %s", key[0], key[1], e)
            return None
        self.partitions[key] = r
        return r

    def _become_follower(self, r: PartitionReplica, leader: int, leader_epoch: int,
                         image: MetadataImage) -> None:
        r.become_follower(leader, leader_epoch)
        b = image.brokers.get(leader)
        if b is None:
            log.warning("%s: leader %d is not a registered broker", r.name, leader)
            return
        fetcher = ReplicaFetcher(
            r, (b.host, b.port), self.broker_id, self.node.cluster_id,
            truncate_to_hw=self.truncate_to_hw, page_cache_ack=self.page_cache_ack,
            max_records=self.cfg.fetch_max_records, max_wait_ms=self.cfg.replica_fetch_wait_max_ms,
            timeout_ms=self.cfg.request_timeout_ms, backoff_s=max(self.cfg.retry_backoff_ms, 50) / 1000.0)
        self._spawn(fetcher.run())

    # -- the leader: flushes and ISR changes ---------------------------------------------------
    def schedule_flush(self, r: PartitionReplica) -> None:
        """Flush ``r``'s log soon (appends within FLUSH_LINGER_S share one fsync); nothing
        under page-cache-ack, whose records count at once and are flushed by the timer."""
        key = (r.topic, r.partition)
        if self.page_cache_ack or key in self._flushes:
            return
        self._flushes[key] = asyncio.get_running_loop().call_later(FLUSH_LINGER_S, self._flush, r)

    def _flush(self, r: PartitionReplica) -> None:
        self._flushes.pop((r.topic, r.partition), None)
        if self._closed:
            return
        r.log.flush()
        r.after_flush()

    def maybe_alter_isr(self, r: PartitionReplica) -> None:
        """Propose the ISR change ``r`` wants, if any, with AlterPartition (KIP-497)."""
        now = _now_ms()
        if r.pending_isr is not None and now - r.pending_since_ms > 4 * self.cfg.request_timeout_ms:
            r.pending_isr = None            # the image never showed it: propose afresh
        new_isr = r.isr_proposal(now, self.cfg.replica_lag_time_max_ms)
        if new_isr is None or self.broker_epoch < 0:
            return
        # only unfenced brokers may join (the controller answers INELIGIBLE_REPLICA otherwise)
        new_isr = tuple(b for b in new_isr if b in r.isr or self.image.is_unfenced(b))
        if new_isr == r.isr:
            return
        r.pending_isr, r.pending_since_ms = new_isr, now
        log.info("%s: proposing ISR %s (was %s)", r.name, list(new_isr), list(r.isr))
        self._spawn(self._alter(r, new_isr, r.generation, r.leader_epoch, r.partition_epoch))

    async def _alter(self, r: PartitionReplica, new_isr: tuple[int, ...], gen: int, leader_epoch: int,
                     partition_epoch: int) -> None:
        body = {"BrokerId": self.broker_id, "BrokerEpoch": self.broker_epoch, "Topics": [
            {"Name": r.topic, "Partitions": [{"PartitionIndex": r.partition, "LeaderEpoch": leader_epoch,
                                               "PartitionEpoch": partition_epoch, "NewIsr": list(new_isr)}]}]}
        try:
            resp = await self.channel.request(api.ALTER_PARTITION, body, self.cfg.request_timeout_ms / 1000.0)
            code = resp.get("ErrorCode", errors.UNKNOWN_SERVER_ERROR)
            if code == errors.NONE:
                parts = [p for t in resp.get("Topics") or [] for p in t.get("Partitions") or []]
                code = parts[0].get("ErrorCode", errors.NONE) if parts else errors.NONE
        except ClientError as e:
            code, resp = errors.REQUEST_TIMED_OUT, {"ErrorMessage": str(e)}
        if r.generation != gen or r.pending_isr != new_isr or r.partition_epoch != partition_epoch:
            return
        if code != errors.NONE:
            log.info("%s: AlterPartition %s refused: %s %s", r.name, list(new_isr), errors.name(code),
                     resp.get("ErrorMessage", ""))
            r.pending_isr = None
            r.alter_not_before_ms = _now_ms() + ALTER_BACKOFF_MS
        # on success the ISR changes when the PartitionChangeRecord reaches the image

    async def _timers(self) -> None:
        while not self._closed:
            await asyncio.sleep(TIMER_S)
            now = _now_ms()
            for r in list(self.partitions.values()):
                if r.role == LEADER:
                    self.maybe_alter_isr(r)
            if self.page_cache_ack and now - self._last_flush >= self.cfg.log_flush_interval_ms:
                self._last_flush = now
                for r in list(self.partitions.values()):
                    r.log.flush()
                    r.after_flush()
            if now - self._last_checkpoint >= self.cfg.replica_hw_checkpoint_interval_ms:
                self._last_checkpoint = now
                for r in list(self.partitions.values()):
                    try:
                        r.checkpoint()
                    except OSError as e:
                        log.warning("%s: high watermark checkpoint failed: %s", r.name, e)
