"""One partition replica on a broker: its log, its high watermark checkpoint, and the
leader's bookkeeping while it leads (Kafka 0.8 replication design: ``startReplica``,
``becomeLeader``'s state, ``on_ReplicaFetchRequest``'s high watermark and the commit
thread answering produces).

Storage (docs/data-plane.md, "Storage"): a :class:`kraft.log.Log` in
``<log.dir>/partitions/<topic>-<partition>/`` holding data records (epoch = the leader
epoch, payload = the value), and ``replication-offset-checkpoint`` there with the high
watermark, in Kafka's checkpoint format (``0``, ``1``, ``<topic> <partition> <hw>``).

Records count toward the high watermark once flushed (:attr:`Log.flushed_end`); with
``page_cache_ack`` (the unsafe switch) once written to the page cache (the log end
offset), and the broker flushes every ``log.flush.interval.ms``.
"""
from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from . import errors, isr as isr_rules, produce
from .durable import make_dirs, write_atomic
from .log import Log
from .records import DATA, Record

log = logging.getLogger("kraft.partition")

CHECKPOINT = "replication-offset-checkpoint"
NONE, LEADER, FOLLOWER = "none", "leader", "follower"


def partition_dir(data_dir: Path, topic: str, partition: int) -> Path:
    """``<log.dir>/partitions/<topic>-<partition>``."""
    return Path(data_dir) / "partitions" / f"{topic}-{partition}"


def read_checkpoint(path: Path) -> int:
    """The high watermark in a ``replication-offset-checkpoint`` file; 0 when it is missing
    or malformed (a replica that never checkpointed knows nothing committed)."""
    try:
        lines = path.read_text().split("\n")
        return max(0, int(lines[2].split()[2]))
    except (OSError, ValueError, IndexError):
        return 0


def write_checkpoint(path: Path, topic: str, partition: int, hw: int) -> None:
    """Write the checkpoint durably (temp file, fsync, rename). Raises OSError."""
    write_atomic(path, f"0\n1\n{topic} {partition} {hw}\n".encode())


class PartitionReplica:
    """A partition's replica on this broker.

    ``role`` is NONE, LEADER or FOLLOWER; ``leader_id`` and ``leader_epoch`` the
    leadership it follows (from the metadata image); ``hw`` the high watermark.
    As leader: ``isr``, ``replicas``, ``partition_epoch``, ``min_insync``,
    ``progress`` (follower id -> :class:`kraft.isr.FollowerProgress`),
    ``epoch_start_offset`` and ``pending_isr`` (an AlterPartition in flight: the
    proposed ISR, or None, since ``pending_since_ms``). ``generation`` goes up on every role change; tasks of an
    older one stop.
    """

    def __init__(self, data_dir: Path, topic: str, partition: int, broker_id: int,
                 segment_bytes: int, page_cache_ack: bool = False, hw_below_min_isr: bool = False):
        self.topic, self.partition, self.broker_id = topic, partition, broker_id
        self.dir = partition_dir(data_dir, topic, partition)
        self.log = Log(self.dir, segment_bytes=segment_bytes, fsync=True)
        self.page_cache_ack = page_cache_ack
        self.hw_below_min_isr = hw_below_min_isr
        self.hw = 0
        self.role = NONE
        self.leader_id, self.leader_epoch = -1, -1
        self.isr: tuple[int, ...] = ()
        self.replicas: tuple[int, ...] = ()
        self.partition_epoch = -1
        self.min_insync = 1
        self.progress: dict[int, isr_rules.FollowerProgress] = {}
        self.epoch_start_offset = 0
        self.pending_isr: tuple[int, ...] | None = None
        self.pending_since_ms = 0.0          # when pending_isr was proposed
        self.alter_not_before_ms = 0.0       # after a refused AlterPartition: back off until
        self.generation = 0
        self._waiters: list[tuple[int, int, asyncio.Future]] = []   # (offset, acks, answer)
        self._changed = asyncio.Event()
        self._checkpointed = -1

    @property
    def name(self) -> str:
        """``topic-partition``."""
        return f"{self.topic}-{self.partition}"

    # -- storage ------------------------------------------------------------------
    def open(self) -> None:
        """startReplica: create the directory, open the log (cutting a torn tail), read the
        high watermark checkpoint (capped at the log end offset). Raises OSError."""
        make_dirs(self.dir)
        self.log.open()
        self.hw = min(read_checkpoint(self.dir / CHECKPOINT), self.log.end_offset)
        self._checkpointed = self.hw

    def checkpoint(self) -> None:
        """Write the high watermark checkpoint if it changed. Raises OSError."""
        if self.hw != self._checkpointed:
            write_checkpoint(self.dir / CHECKPOINT, self.topic, self.partition, self.hw)
            self._checkpointed = self.hw

    def close(self) -> None:
        """Answer waiting produces, flush, checkpoint and close the log."""
        self._fail_waiters("broker shutting down")
        self.generation += 1
        try:
            self.log.flush()
            self.checkpoint()
        finally:
            self.log.close()

    @property
    def counted_end(self) -> int:
        """The end of the local log as it counts toward the high watermark: the flushed
        end, or under page-cache-ack the log end offset."""
        return self.log.end_offset if self.page_cache_ack else self.log.flushed_end

    def truncate_to(self, offset: int) -> int:
        """Truncate the log to ``offset`` (a follower's); the high watermark is capped at
        the new end. Returns the number of records removed."""
        removed = self.log.truncate_to(offset)
        self.hw = min(self.hw, self.log.end_offset)
        if removed:
            log.info("%s: truncated %d records to offset %d", self.name, removed, offset)
        return removed

    def changed(self) -> asyncio.Event:
        """An event set at the next change of the log end, the high watermark or the role."""
        return self._changed

    def notify(self) -> None:
        """Wake whoever waits on :meth:`changed`."""
        self._changed.set()
        self._changed = asyncio.Event()

    # -- role changes (Kafka 0.8: becomeLeader / becomeFollower) ---------------------
    def become_leader(self, leader_epoch: int, partition_epoch: int, isr, replicas, min_insync: int,
                      now_ms: float) -> None:
        """Lead ``leader_epoch``: keep the log, track every follower from scratch (ISR
        members count as caught up now), and take writes."""
        self._fail_waiters("leadership changed")
        self.generation += 1
        self.role, self.leader_id, self.leader_epoch = LEADER, self.broker_id, leader_epoch
        self.replicas, self.partition_epoch, self.min_insync = tuple(replicas), partition_epoch, min_insync
        self.isr = tuple(isr)
        self.progress = isr_rules.fresh_progress([r for r in self.replicas if r != self.broker_id],
                                                 self.isr, now_ms)
        self.epoch_start_offset = self.log.end_offset
        self.pending_isr = None
        self.notify()
        log.info("%s: leader in epoch %d, isr %s, log end offset %d, hw %d", self.name, leader_epoch,
                 list(self.isr), self.log.end_offset, self.hw)

    def update_leader_state(self, partition_epoch: int, isr, replicas, min_insync: int) -> None:
        """A new partition epoch in the leader's own leader epoch (an ISR change committed):
        take the ISR from the image; the high watermark may now advance."""
        self.partition_epoch, self.isr, self.replicas = partition_epoch, tuple(isr), tuple(replicas)
        self.min_insync = min_insync
        self.pending_isr = None
        self.update_hw()
        self.complete_waiters()

    def become_follower(self, leader_id: int, leader_epoch: int) -> None:
        """Follow ``leader_id`` in ``leader_epoch`` (the caller starts the fetcher, which
        truncates first). Produces still waiting get REQUEST_TIMED_OUT (indefinite: the
        record is in the log, and may be committed or truncated)."""
        self._fail_waiters("leadership changed")
        self.generation += 1
        self.role, self.leader_id, self.leader_epoch = FOLLOWER, leader_id, leader_epoch
        self.progress, self.pending_isr = {}, None
        self.notify()
        log.info("%s: follower of %d in epoch %d, log end offset %d, hw %d", self.name, leader_id,
                 leader_epoch, self.log.end_offset, self.hw)

    def become_offline(self, leader_epoch: int) -> None:
        """No leader (or not a replica any more): neither lead nor fetch."""
        self._fail_waiters("partition offline")
        self.generation += 1
        self.role, self.leader_id, self.leader_epoch = NONE, -1, leader_epoch
        self.progress, self.pending_isr = {}, None
        self.notify()

    # -- the leader ------------------------------------------------------------------
    def append(self, value) -> int:
        """Append ``value`` as a data record of the leader epoch; returns its offset. The
        caller flushes (soon, batched) unless page-cache-ack."""
        offset = self.log.end_offset
        self.log.append(Record(offset, self.leader_epoch, DATA, value))
        self.notify()
        if self.page_cache_ack:
            self.update_hw()
            self.complete_waiters()
        return offset

    def after_flush(self) -> None:
        """The log was flushed: the leader's counted end moved; advance what follows."""
        if self.role == LEADER:
            self.update_hw()
            self.complete_waiters()

    def hw_isr(self) -> tuple[int, ...]:
        """The ISR the high watermark is computed over: the committed ISR plus any member an
        expansion in flight would add (Kafka's maximal ISR, KIP-497: a replica the
        controller may already count as in sync must have everything below the high
        watermark)."""
        if self.pending_isr is None:
            return self.isr
        return self.isr + tuple(r for r in self.pending_isr if r not in self.isr)

    def update_hw(self) -> bool:
        """Recompute the leader's high watermark (never backwards); True if it advanced."""
        new = isr_rules.high_watermark(self.hw, self.broker_id, self.counted_end, self.hw_isr(),
                                       self.progress,
                                       1 if self.hw_below_min_isr else self.min_insync)
        if new > self.hw:
            self.hw = new
            self.notify()
            return True
        return False

    def on_replica_fetch(self, replica_id: int, fetch_offset: int, now_ms: float) -> None:
        """A follower fetched from ``fetch_offset``: that is its log end offset (0.8's
        ``on_ReplicaFetchRequest``). Advances the high watermark and answers produces."""
        p = self.progress.setdefault(replica_id, isr_rules.FollowerProgress())
        p.on_fetch(fetch_offset, self.log.end_offset, now_ms)
        if self.update_hw():
            self.complete_waiters()

    def isr_proposal(self, now_ms: float, lag_max_ms: int) -> tuple[int, ...] | None:
        """The ISR to propose with AlterPartition, or None: followers out of sync for
        ``lag_max_ms`` leave it, replicas caught up to the high watermark join it. None
        while a proposal is in flight or there is no change."""
        if self.role != LEADER or self.pending_isr is not None or now_ms < self.alter_not_before_ms:
            return None
        out = isr_rules.shrink_candidates(self.broker_id, self.isr, self.progress, now_ms, lag_max_ms)
        add = isr_rules.expand_candidates(self.broker_id, self.replicas, self.isr, self.progress,
                                          self.hw, self.epoch_start_offset)
        if not out and not add:
            return None
        return tuple(isr_rules.proposed_isr(self.replicas, self.isr, out, add))

    def wait_produce(self, offset: int, acks: int) -> asyncio.Future:
        """A future answered with the Produce error code for the record at ``offset``
        (kraft/produce.py ``outcome``)."""
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append((offset, acks, fut))
        self.complete_waiters()
        return fut

    def complete_waiters(self) -> None:
        """Answer every waiting produce whose outcome is now known."""
        keep = []
        for offset, acks, fut in self._waiters:
            if fut.done():
                continue
            code = produce.outcome(acks, offset, self.counted_end, self.hw, len(self.isr), self.min_insync)
            if code is None:
                keep.append((offset, acks, fut))
            else:
                fut.set_result(code)
        self._waiters = keep

    def _fail_waiters(self, why: str) -> None:
        for _, _, fut in self._waiters:
            if not fut.done():
                fut.set_result(errors.REQUEST_TIMED_OUT)
        if self._waiters:
            log.info("%s: %d produces left unanswered (%s): REQUEST_TIMED_OUT", self.name,
                     len(self._waiters), why)
        self._waiters = []
