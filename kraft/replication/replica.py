"""One partition replica on a broker, without I/O: its role, its high watermark, and the
leader's bookkeeping while it leads (Kafka 0.8 replication design: ``becomeLeader``'s
state, ``on_ReplicaFetchRequest``'s high watermark, the commit thread answering
produces; KIP-966's min.insync.replicas rule).

The records are a :class:`kraft.core.record_log.RecordLog`; what must reach the disk goes
out as effects on ``out`` (WriteLog, SyncLog, TruncateLog, CheckpointHighWatermark,
all for log ``key``), and produce answers as Reply effects. Records count toward the
high watermark once fsynced (:attr:`durable_end`, from SyncDone); with
``page_cache_ack`` (the unsafe switch) once written (the log end offset). The pure
rules are kraft/rules/isr.py and kraft/rules/produce.py.
"""
from __future__ import annotations

import logging

from ..core import errors
from ..core.events import CheckpointHighWatermark, Reply, SyncLog, TruncateLog, WriteLog
from ..core.record_log import DurableEnd, RecordLog
from ..core.records import DATA, Record
from ..rules import isr as isr_rules, produce
from .messages import ProduceResponse

log = logging.getLogger("kraft.partition")

NONE, LEADER, FOLLOWER = "none", "leader", "follower"


class ReplicaState:
    """A partition's replica on broker ``broker_id``: ``key`` (topic, partition), ``log``
    (its records), ``hw`` (the high watermark, e.g. from the checkpoint at a restart).

    ``role`` is NONE, LEADER or FOLLOWER; ``leader_id`` and ``leader_epoch`` the
    leadership it follows. As leader: ``isr``, ``replicas``, ``partition_epoch``,
    ``min_insync``, ``progress`` (follower id -> :class:`kraft.rules.isr.FollowerProgress`),
    ``epoch_start_offset`` and ``pending_isr`` (an AlterPartition in flight, since
    ``pending_since_ms``). ``generation`` goes up on every role change.
    """

    def __init__(self, key: tuple, broker_id: int, log_: RecordLog, hw: int, out: list,
                 page_cache_ack: bool = False, hw_below_min_isr: bool = False):
        self.key, self.broker_id, self.log, self.out = key, broker_id, log_, out
        self.page_cache_ack, self.hw_below_min_isr = page_cache_ack, hw_below_min_isr
        self.hw = min(hw, log_.end_offset)
        self.durable = DurableEnd(log_.end_offset)      # what of the log is fsynced
        self.checkpointed = self.hw
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
        self.changed = False                 # the log end, high watermark or role moved (parked fetches)
        self.parked: list = []               # Leader: ReplicaFetches waiting for news
        self.phase = "fetch"                 # Follower: "truncate" (KIP-101) or "fetch"
        self.fetching = False                # Follower: a request to the leader is in flight
        self.sync_wait = False               # Follower: fetch again once the fsync is done
        self._waiters: list[tuple] = []      # (offset, acks, token, leader epoch)

    @property
    def name(self) -> str:
        """``topic-partition``."""
        return f"{self.key[0]}-{self.key[1]}"

    @property
    def durable_end(self) -> int:
        """Records below this offset are fsynced (as SyncDone said)."""
        return self.durable.end

    @property
    def counted_end(self) -> int:
        """The end of the local log as it counts toward the high watermark: the fsynced
        end, or under page-cache-ack the log end offset."""
        return self.log.end_offset if self.page_cache_ack else self.durable.end

    # -- the disk ----------------------------------------------------------------------
    def synced(self, end: int) -> None:
        """The log is fsynced up to ``end``: the leader's counted end moved; advance what
        follows."""
        self.durable.done(end, self.log.end_offset)
        if self.role == LEADER:
            self.update_hw()
            self.complete_waiters()

    def sync(self) -> None:
        """Ask for an fsync of everything written (SyncLog)."""
        end = self.log.end_offset
        self.durable.asked(end)
        self.out.append(SyncLog(end, self.key))

    def truncate_to(self, offset: int) -> int:
        """Truncate the log to ``offset`` (a follower's); the high watermark is capped at
        the new end. Returns the number of records removed."""
        removed = self.log.truncate_to(offset)
        if removed:
            self.out.append(TruncateLog(offset, self.key))
            self.durable.truncated(offset)
            log.info("%s: truncated %d records to offset %d", self.name, removed, offset)
        self.hw = min(self.hw, self.log.end_offset)
        return removed

    def checkpoint(self) -> None:
        """Checkpoint the high watermark if it changed (CheckpointHighWatermark)."""
        if self.hw != self.checkpointed:
            self.out.append(CheckpointHighWatermark(self.key, self.hw))
            self.checkpointed = self.hw

    def notify(self) -> None:
        """Mark a change of the log end, the high watermark or the role."""
        self.changed = True

    # -- role changes (Kafka 0.8: becomeLeader / becomeFollower) ---------------------------
    def become_leader(self, leader_epoch: int, partition_epoch: int, isr, replicas, min_insync: int,
                      now_ms: float) -> None:
        """Lead ``leader_epoch``: keep the log, track every follower from scratch (ISR
        members count as caught up now), and take writes."""
        self.fail_waiters("leadership changed")
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
        take the ISR; the high watermark may now advance."""
        self.partition_epoch, self.isr, self.replicas = partition_epoch, tuple(isr), tuple(replicas)
        self.min_insync = min_insync
        self.pending_isr = None
        self.update_hw()
        self.complete_waiters()

    def become_follower(self, leader_id: int, leader_epoch: int) -> None:
        """Follow ``leader_id`` in ``leader_epoch`` (truncation and fetching are the
        follower side's, kraft/replication/follower.py). Produces still waiting get
        REQUEST_TIMED_OUT (indefinite: the record is in the log, and may be committed or
        truncated)."""
        self.fail_waiters("leadership changed")
        self.generation += 1
        self.role, self.leader_id, self.leader_epoch = FOLLOWER, leader_id, leader_epoch
        self.progress, self.pending_isr = {}, None
        self.notify()
        log.info("%s: follower of %d in epoch %d, log end offset %d, hw %d", self.name, leader_id,
                 leader_epoch, self.log.end_offset, self.hw)

    def become_offline(self, leader_epoch: int) -> None:
        """No leader (or not a replica any more): neither lead nor fetch."""
        self.fail_waiters("partition offline")
        self.generation += 1
        self.role, self.leader_id, self.leader_epoch = NONE, -1, leader_epoch
        self.progress, self.pending_isr = {}, None
        self.notify()

    # -- the leader ------------------------------------------------------------------------
    def append(self, value) -> int:
        """Append ``value`` as a data record of the leader epoch (WriteLog); returns its
        offset. The caller fsyncs (soon, batched) unless page-cache-ack."""
        r = Record(self.log.end_offset, self.leader_epoch, DATA, value)
        self.log.append(r)
        self.out.append(WriteLog([r], self.key))
        self.notify()
        if self.page_cache_ack:
            self.update_hw()
            self.complete_waiters()
        return r.offset

    def hw_isr(self) -> tuple[int, ...]:
        """The ISR the high watermark is computed over: the committed ISR plus any member an
        expansion in flight would add (Kafka's maximal ISR, KIP-497)."""
        if self.pending_isr is None:
            return self.isr
        return self.isr + tuple(r for r in self.pending_isr if r not in self.isr)

    def update_hw(self) -> bool:
        """Recompute the leader's high watermark (never backwards); True if it advanced."""
        new = isr_rules.high_watermark(self.hw, self.broker_id, self.counted_end, self.hw_isr(),
                                       self.progress, 1 if self.hw_below_min_isr else self.min_insync)
        if new > self.hw:
            self.hw = new
            self.notify()
            return True
        return False

    def on_replica_fetch(self, replica_id: int, fetch_offset: int, now_ms: float) -> None:
        """A follower fetched from ``fetch_offset``: that is its log end offset (0.8's
        ``on_ReplicaFetchRequest``). Advances the high watermark and answers produces."""
        p = self.progress.get(replica_id)
        if p is None:
            p = self.progress[replica_id] = isr_rules.FollowerProgress()
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

    def isr_check_due(self, lag_max_ms: int) -> float:
        """The earliest time (ms) a follower of the ISR could fall out of sync (when
        :meth:`isr_proposal` may first propose a shrink)."""
        due = float("inf")
        for r in self.isr:
            if r != self.broker_id:
                p = self.progress.get(r)
                due = min(due, (p.last_caught_up_ms if p is not None else float("-inf")) + lag_max_ms + 1)
        return due

    def wait_produce(self, token, offset: int, acks: int) -> None:
        """Answer produce ``token`` for the record at ``offset`` (a Reply with a
        ProduceResponse) once its outcome is known (kraft/rules/produce.py ``outcome``)."""
        self._waiters.append((offset, acks, token, self.leader_epoch))
        self.complete_waiters()

    def complete_waiters(self) -> None:
        """Answer every waiting produce whose outcome is now known."""
        if not self._waiters:
            return
        keep = []
        end, hw, isr_size = self.counted_end, self.hw, len(self.isr)
        for w in self._waiters:
            code = produce.outcome(w[1], w[0], end, hw, isr_size, self.min_insync)
            if code is None:
                keep.append(w)
            else:
                self.out.append(Reply(w[2], ProduceResponse(code, w[0], w[3])))
        self._waiters = keep

    def expire_produce(self, token) -> None:
        """Produce ``token`` timed out: REQUEST_TIMED_OUT (if still waiting)."""
        for i, w in enumerate(self._waiters):
            if w[2] == token:
                del self._waiters[i]
                self.out.append(Reply(token, ProduceResponse(errors.REQUEST_TIMED_OUT, w[0], w[3])))
                return

    def fail_waiters(self, why: str) -> None:
        """Every waiting produce gets REQUEST_TIMED_OUT (indefinite)."""
        for w in self._waiters:
            self.out.append(Reply(w[2], ProduceResponse(errors.REQUEST_TIMED_OUT, w[0], w[3])))
        if self._waiters:
            log.info("%s: %d produces left unanswered (%s): REQUEST_TIMED_OUT", self.name,
                     len(self._waiters), why)
        self._waiters = []

    # -- the follower -----------------------------------------------------------------------
    def apply_fetched(self, records: list, leader_hw: int) -> int:
        """Append the fetched ``records`` that continue the log (WriteLog) and take the
        high watermark ``min(leader's, own log end offset)``; returns how many were
        appended."""
        lg = self.log
        appended = []
        for r in records:
            if r.offset != lg.end_offset or r.epoch < lg.last_epoch:
                break
            lg.append(r)
            appended.append(r)
        if appended:
            self.out.append(WriteLog(appended, self.key))
            self.notify()
        if isinstance(leader_hw, int):
            self.hw = max(0, min(leader_hw, lg.end_offset))
        return len(appended)
