"""The broker's partition replication without I/O (Kafka 0.8's ISR design; KIP-101; KIP-966):
every partition replica of one broker (kraft/replication/replica.py), the leader's RPCs
(Produce, ReplicaFetch, ConsumerFetch, ListOffsets, OffsetForLeaderEpoch), the
follower side (kraft/replication/follower.py), ISR changes and the disk's timers.

Driven like the quorum core (kraft/core/events.py): ``step(event) -> effects``. Besides the
shared events it takes :class:`LeaderAndIsr` (from the committed metadata),
:class:`ClusterView` and :class:`IsrAnswer` (kraft/replication/messages.py), and it asks
for ISR changes with :class:`kraft.core.events.ProposeIsr`. The controller side (broker
registration, heartbeats, partition elections) stays with the adapter (kraft/broker/service.py)
and the pure kraft/controller/partition_election.py.
"""
from __future__ import annotations

import dataclasses
import heapq
import logging
from typing import Callable

from ..core import errors
from ..core.events import ProposeIsr, Received, Replied, Reply, SyncDone, TimerFired
from ..core.record_log import RecordLog
from ..core.timers import DeadlineTimers
from ..core.unsafe import SAFE, Unsafe
from ..rules import produce
from ..rules.truncation import leader_epoch_answer
from .follower import FollowerSide
from .messages import (ClusterView, ConsumerFetchRequest, IsrAnswer, LeaderAndIsr, ListOffsetsRequest,
                       OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, OffsetsResponse, ProduceRequest,
                       ProduceResponse, ReplicaFetchRequest, ReplicaFetchResponse)
from .replica import FOLLOWER, LEADER, NONE, ReplicaState

log = logging.getLogger("kraft.broker")

INF = float("inf")
#: How soon the ISR check looks again at a change that is due but could not be proposed (ms).
ISR_RECHECK_MS = 50


@dataclasses.dataclass(frozen=True)
class BrokerConfig:
    """A broker core's settings (ms): ``replica_lag_time_max_ms`` (a follower not caught up
    this long leaves the ISR), ``hw_checkpoint_interval_ms``, ``log_flush_interval_ms`` (the
    page-cache-ack flush period), ``replica_fetch_wait_max_ms`` (the ReplicaFetch long poll
    it asks for), ``request_timeout_ms`` (Produce's default deadline; an AlterPartition
    unanswered for 4x this is proposed afresh), ``fetch_backoff_ms``, ``flush_linger_ms``
    (a leader's appends share one fsync), ``alter_backoff_ms`` (after a refused
    AlterPartition); ``fetch_max_records`` per ReplicaFetch; ``unsafe``."""

    broker_id: int
    replica_lag_time_max_ms: int = 3000
    hw_checkpoint_interval_ms: int = 500
    log_flush_interval_ms: int = 1000
    replica_fetch_wait_max_ms: int = 500
    request_timeout_ms: int = 2000
    fetch_backoff_ms: int = 50
    flush_linger_ms: float = 2.0
    alter_backoff_ms: int = 500
    fetch_max_records: int = 2000
    unsafe: Unsafe = SAFE


class BrokerCore(DeadlineTimers, FollowerSide):
    """The partition replicas of broker ``config.broker_id``. ``clock() -> float`` ms.
    Add each replica with :meth:`add_partition` (from what its disk holds) before the
    LeaderAndIsr that names this broker."""

    def __init__(self, config: BrokerConfig, *, clock: Callable[[], float]):
        self.cfg, self.id, self.clock = config, config.broker_id, clock
        self.policy = config.unsafe
        self.now = clock()
        self.states: dict[tuple, ReplicaState] = {}
        self.view = ClusterView()
        self.out: list = []
        self._init_timers()
        self._expiry: list = []                # produce deadlines: (at, seq, key, token)
        self._seq = 0
        self._last_checkpoint = -INF
        if self.policy.page_cache_ack:
            self._set_deadline("flush-all", self.now + config.log_flush_interval_ms)

    def add_partition(self, key: tuple, log_: RecordLog, hw: int) -> ReplicaState:
        """Add the replica of ``key`` holding ``log_`` with checkpointed high watermark ``hw``."""
        st = ReplicaState(key, self.id, log_, hw, self.out, page_cache_ack=self.policy.page_cache_ack,
                          hw_below_min_isr=self.policy.hw_below_min_isr)
        self.states[key] = st
        return st

    # -- driving ----------------------------------------------------------------------
    def step(self, event) -> list:
        """Handle one event; returns the effects to carry out, in order."""
        self.now = self.clock()
        self._handlers[type(event)](self, event)
        return self._drain()

    def call(self, fn: Callable, *args) -> tuple[object, list]:
        """Run ``fn(*args)`` as one step; returns its result and the effects."""
        self.now = self.clock()
        result = fn(*args)
        return result, self._drain()

    def _drain(self) -> list:
        for st in self.states.values():
            if st.changed:
                st.changed = False
                if st.parked:
                    self._wake_parked(st)
                if st.hw != st.checkpointed and "checkpoint" not in self._want:
                    self._set_deadline("checkpoint", max(self.now, self._last_checkpoint
                                                         + self.cfg.hw_checkpoint_interval_ms))
        out = self.out[:]
        self.out.clear()            # in place: every ReplicaState appends to this list
        return out

    def _timer_due(self, key) -> None:
        if key == "checkpoint":
            self._last_checkpoint = self.now
            for st in self.states.values():
                st.checkpoint()
        elif key == "flush-all":                  # page-cache-ack: log.flush.interval.ms
            for st in self.states.values():
                if st.log.end_offset > st.durable_end:
                    st.sync()
            self._set_deadline("flush-all", self.now + self.cfg.log_flush_interval_ms)
        elif key == "isr":
            self._check_isr()
        elif key == "parked":
            self._expire_parked()
        elif key == "produce":
            self._expire_produces()
        elif key[0] == "flush":
            st = self.states.get(key[1])
            if st is not None and st.log.end_offset > st.durable_end and not st.durable.pending(st.log.end_offset):
                st.sync()
        elif key[0] == "fetch":
            self._on_fetch_backoff(key[1])

    # -- commands -----------------------------------------------------------------------
    def _on_leader_and_isr(self, ev: LeaderAndIsr) -> None:
        """Kafka 0.8's ``on_LeaderAndISRCommand`` for one partition."""
        st = self.states.get(ev.key)
        if st is None:
            return
        if self.id not in ev.replicas:
            if st.role != NONE:
                st.become_offline(ev.leader_epoch)
            return
        if ev.leader == self.id:
            if st.role != LEADER or st.leader_epoch != ev.leader_epoch:
                st.become_leader(ev.leader_epoch, ev.partition_epoch, ev.isr, ev.replicas, ev.min_insync, self.now)
                self._arm_isr_check(st)
            elif st.partition_epoch != ev.partition_epoch:
                st.update_leader_state(ev.partition_epoch, ev.isr, ev.replicas, ev.min_insync)
                self._maybe_alter_isr(st)
                self._arm_isr_check(st)
        elif ev.leader >= 0:
            if st.role != FOLLOWER or st.leader_epoch != ev.leader_epoch or st.leader_id != ev.leader:
                st.become_follower(ev.leader, ev.leader_epoch)
                self._start_following(st)
        elif st.role != NONE:
            st.become_offline(ev.leader_epoch)

    def _on_cluster_view(self, ev: ClusterView) -> None:
        self.view = ev
        if ev.registered:
            self._set_deadline("isr", self.now)

    def _on_isr_answer(self, ev: IsrAnswer) -> None:
        st = self.states.get(ev.key)
        if (st is None or st.role != LEADER or st.pending_isr != tuple(ev.isr)
                or st.partition_epoch != ev.partition_epoch):
            return
        if ev.error_code != errors.NONE:
            log.info("%s: AlterPartition %s refused: %s", st.name, list(ev.isr), errors.name(ev.error_code))
            st.pending_isr = None
            st.alter_not_before_ms = self.now + self.cfg.alter_backoff_ms
            self._arm_isr_check(st)
        # on success the ISR changes when the LeaderAndIsr with the new partition epoch comes

    def _on_sync_done(self, ev: SyncDone) -> None:
        st = self.states.get(ev.log)
        if st is not None:
            st.synced(ev.end)
            self._follower_synced(st)

    # -- ISR changes (KIP-497 AlterPartition) ----------------------------------------------------
    def _maybe_alter_isr(self, st: ReplicaState) -> None:
        """Propose the ISR change ``st`` wants, if any."""
        now = self.now
        if st.pending_isr is not None and now - st.pending_since_ms > 4 * self.cfg.request_timeout_ms:
            st.pending_isr = None            # never answered, or never showed up: propose afresh
        new = st.isr_proposal(now, self.cfg.replica_lag_time_max_ms)
        if new is None or not self.view.registered:
            return
        unfenced = self.view.unfenced       # only unfenced brokers may join (else INELIGIBLE_REPLICA)
        if unfenced is not None:
            new = tuple(b for b in new if b in st.isr or b in unfenced)
        if new == st.isr:
            return
        st.pending_isr, st.pending_since_ms = new, now
        log.info("%s: proposing ISR %s (was %s)", st.name, list(new), list(st.isr))
        self.out.append(ProposeIsr(st.key, st.leader_epoch, st.partition_epoch, new))
        self._arm_isr_check(st)

    def _arm_isr_check(self, st: ReplicaState) -> None:
        """Arm the ISR check for when ``st`` may next want a change: a shrink falling due, a
        proposal to give up on, the end of a back-off (at least ISR_RECHECK_MS from now
        when something keeps a due change from being proposed)."""
        if st.role != LEADER or not self.view.registered:
            return
        if st.pending_isr is not None:
            due = st.pending_since_ms + 4 * self.cfg.request_timeout_ms + 1
        elif st.alter_not_before_ms > self.now:
            due = st.alter_not_before_ms
        else:
            due = st.isr_check_due(self.cfg.replica_lag_time_max_ms)
        if due <= self.now:
            due = self.now + ISR_RECHECK_MS
        if due < self._want.get("isr", INF):
            self._set_deadline("isr", due)

    def _check_isr(self) -> None:
        for st in self.states.values():
            if st.role == LEADER:
                self._maybe_alter_isr(st)
                self._arm_isr_check(st)

    # -- requests ---------------------------------------------------------------------------------
    def _on_received(self, ev: Received) -> None:
        msg = ev.msg
        st = self.states.get(msg.key)
        if st is None or st.role != LEADER:
            self._refuse(ev.token, msg, errors.NOT_LEADER_OR_FOLLOWER, st)
            return
        self._request_handlers[type(msg)](self, ev.token, msg, st)

    def _refuse(self, token, msg, code: int, st: ReplicaState | None, message: str | None = None) -> None:
        le, lid = (st.leader_epoch, st.leader_id) if st is not None else (-1, -1)
        self.out.append(Reply(token, _REFUSALS[type(msg)](code, message=message, leader_id=lid, leader_epoch=le)))

    def _epoch_ok(self, token, msg, epoch: int, st: ReplicaState) -> bool:
        if epoch == st.leader_epoch:
            return True
        self._refuse(token, msg, errors.FENCED_LEADER_EPOCH if epoch < st.leader_epoch
                     else errors.UNKNOWN_LEADER_EPOCH, st)
        return False

    def _on_produce(self, token, req: ProduceRequest, st: ReplicaState) -> None:
        """Produce with acks and min.insync.replicas (kraft/rules/produce.py)."""
        code = produce.check_append(req.acks, len(st.isr), st.min_insync)
        if code != errors.NONE:
            self.out.append(Reply(token, ProduceResponse(code, -1, st.leader_epoch)))
            return
        epoch = st.leader_epoch
        offset = st.append(req.value)
        if not self.policy.page_cache_ack:
            key = ("flush", st.key)
            if key not in self._want:
                self._set_deadline(key, self.now + self.cfg.flush_linger_ms)
        if req.acks == 0:
            self.out.append(Reply(token, ProduceResponse(errors.NONE, -1, epoch)))
            return
        st.wait_produce(token, offset, req.acks)
        self._seq += 1
        at = self.now + (req.timeout_ms or self.cfg.request_timeout_ms)
        heapq.heappush(self._expiry, (at, self._seq, st.key, token))
        if at < self._want.get("produce", INF):
            self._set_deadline("produce", at)

    def _expire_produces(self) -> None:
        heap = self._expiry
        while heap and heap[0][0] <= self.now:
            _, _, key, token = heapq.heappop(heap)
            st = self.states.get(key)
            if st is not None:
                st.expire_produce(token)
        if heap:
            self._set_deadline("produce", heap[0][0])

    def _on_replica_fetch(self, token, req: ReplicaFetchRequest, st: ReplicaState) -> None:
        """0.8's ``on_ReplicaFetchRequest``: the fetch offset is the follower's log end offset;
        parked up to MaxWaitMs while there is nothing new."""
        if not self._epoch_ok(token, req, req.leader_epoch, st):
            return
        if req.replica_id not in st.replicas or req.replica_id == self.id:
            self._refuse(token, req, errors.INVALID_REQUEST, st, f"ReplicaId {req.replica_id} is not a follower "
                                                               f"of {st.name}")
            return
        end = st.log.end_offset
        if req.fetch_offset < 0 or req.fetch_offset > end:
            self.out.append(Reply(token, ReplicaFetchResponse(errors.OFFSET_OUT_OF_RANGE, st.hw, log_end_offset=end)))
            return
        st.on_replica_fetch(req.replica_id, req.fetch_offset, self.now)
        self._maybe_alter_isr(st)
        if req.fetch_offset >= end and req.max_wait_ms > 0:
            deadline = self.now + req.max_wait_ms
            st.parked.append((token, req, st.hw, st.generation, deadline))
            if deadline < self._want.get("parked", INF):
                self._set_deadline("parked", deadline)
            return
        self._answer_replica_fetch(token, req, st)

    def _answer_replica_fetch(self, token, req: ReplicaFetchRequest, st: ReplicaState) -> None:
        recs = st.log.read(req.fetch_offset, st.log.end_offset, max(1, req.max_records))
        self.out.append(Reply(token, ReplicaFetchResponse(errors.NONE, st.hw, recs)))

    def _wake_parked(self, st: ReplicaState) -> None:
        keep = []
        for p in st.parked:
            token, req, hw_seen, gen, _ = p
            if gen != st.generation or st.role != LEADER:
                self._refuse(token, req, errors.NOT_LEADER_OR_FOLLOWER, st)
            elif req.fetch_offset < st.log.end_offset or st.hw != hw_seen:
                self._answer_replica_fetch(token, req, st)
            else:
                keep.append(p)
        st.parked = keep

    def _expire_parked(self) -> None:
        nxt = INF
        for st in self.states.values():
            keep = []
            for p in st.parked:
                if p[4] <= self.now:
                    if p[3] != st.generation or st.role != LEADER:
                        self._refuse(p[0], p[1], errors.NOT_LEADER_OR_FOLLOWER, st)
                    else:
                        self._answer_replica_fetch(p[0], p[1], st)
                else:
                    keep.append(p)
                    nxt = min(nxt, p[4])
            st.parked = keep
        if nxt < INF:
            self._set_deadline("parked", nxt)

    def _on_consumer_fetch(self, token, req: ConsumerFetchRequest, st: ReplicaState) -> None:
        """Records below the high watermark only (0.8); OFFSET_OUT_OF_RANGE outside the log."""
        end = st.log.end_offset
        if req.offset < 0 or req.offset > end:
            self.out.append(Reply(token, OffsetsResponse(errors.OFFSET_OUT_OF_RANGE, st.hw, end)))
            return
        recs = st.log.read(req.offset, st.hw, max(1, req.max_records))
        self.out.append(Reply(token, OffsetsResponse(errors.NONE, st.hw, end, recs)))

    def _on_list_offsets(self, token, req: ListOffsetsRequest, st: ReplicaState) -> None:
        self.out.append(Reply(token, OffsetsResponse(errors.NONE, st.hw, st.log.end_offset)))

    def _on_offset_for_leader_epoch(self, token, req: OffsetForLeaderEpochRequest, st: ReplicaState) -> None:
        """KIP-101: the largest epoch <= the one asked for in the leader's log, and its end."""
        if self._epoch_ok(token, req, req.current_leader_epoch, st):
            epoch, end = leader_epoch_answer(st.log, req.leader_epoch)
            self.out.append(Reply(token, OffsetForLeaderEpochResponse(errors.NONE, epoch, end)))

    def _on_replied(self, ev: Replied) -> None:
        self._on_follower_reply(ev)


_REFUSALS = {ProduceRequest: ProduceResponse, ReplicaFetchRequest: ReplicaFetchResponse,
             ConsumerFetchRequest: OffsetsResponse, ListOffsetsRequest: OffsetsResponse,
             OffsetForLeaderEpochRequest: OffsetForLeaderEpochResponse}
BrokerCore._handlers = {TimerFired: BrokerCore._on_timer, Received: BrokerCore._on_received,
                        Replied: BrokerCore._on_replied, SyncDone: BrokerCore._on_sync_done,
                        LeaderAndIsr: BrokerCore._on_leader_and_isr, ClusterView: BrokerCore._on_cluster_view,
                        IsrAnswer: BrokerCore._on_isr_answer}
BrokerCore._request_handlers = {ProduceRequest: BrokerCore._on_produce,
                                ReplicaFetchRequest: BrokerCore._on_replica_fetch,
                                ConsumerFetchRequest: BrokerCore._on_consumer_fetch,
                                ListOffsetsRequest: BrokerCore._on_list_offsets,
                                OffsetForLeaderEpochRequest: BrokerCore._on_offset_for_leader_epoch}
