"""The active controller without I/O (KIP-631 the quorum controller, broker registration,
heartbeats and fencing; KIP-497 AlterPartition; Kafka 0.8's leader election from the
ISR): ``ControllerCore.step(event) -> effects``, in the style of the quorum and broker
cores (kraft/core/events.py).

Every controller node runs one beside its quorum core. It is *active* only while its
node leads the quorum and this epoch's first record is committed (so its image holds
everything earlier controllers committed); any other answers NOT_CONTROLLER with the
leader hint. It learns its node's quorum from :class:`QuorumView` events (the adapter
feeds one whenever the quorum core's leadership or high watermark changes) and
decides from the committed image alone: what each request writes and answers is the
pure kraft/controller/requests.py (with kraft/controller/partition_election.py's rules).

Writes are serialised: one in flight. Each is built from the committed image and the
log end, leaves as :class:`ProposeMetadata` (several records in one batch, e.g. a
FenceBrokerRecord with the partition changes that follow), comes back as
:class:`Appended`, and is answered once a view shows it committed (the image then shows
it), or REQUEST_TIMED_OUT after ``request_timeout_ms`` (appended, commit unknown). A
request that waits for the write lock that long is answered REQUEST_TIMED_OUT too.

Broker sessions (``session_timeout_ms``) live in the active controller's memory: a
heartbeat renews one; an unfenced broker silent that long is fenced. On taking over,
the controller gives every broker a fresh session and writes any partition change the
image still needs (one a previous controller appended but never committed).

Time is the injected ``clock`` (ms), read once per step, and :class:`TimerFired` of the
keys ``("controller", ...)`` it asks for.
"""
from __future__ import annotations

import collections
import dataclasses
import logging
from typing import Callable

from ..core import errors
from ..core.events import Received, Reply, TimerFired
from ..core.timers import DeadlineTimers
from ..state_machines.metadata_image import FENCE_BROKER, MetadataImage
from . import requests
from .messages import Appended, BrokerHeartbeatRequest, BrokerRegistrationRequest, ProposeMetadata, QuorumView
from .partition_election import Rejected, partition_changes

log = logging.getLogger("kraft.controller")

#: The first element of every timer key of the controller core.
CONTROLLER = "controller"
SESSIONS, DEADLINES = (CONTROLLER, "sessions"), (CONTROLLER, "deadlines")
#: How many writes in a row may be refused because the log's end moved under them before the
#: controller waits for the next view.
MAX_REBUILDS = 3


@dataclasses.dataclass(frozen=True)
class ControllerConfig:
    """A controller core's settings: ``node_id``, ``cluster_id`` (in topic ids),
    ``session_timeout_ms`` (``broker.session.timeout.ms``) and ``request_timeout_ms``
    (how long a request waits for its write)."""

    node_id: int
    cluster_id: str = ""
    session_timeout_ms: int = 3000
    request_timeout_ms: int = 2000


class _Op:
    """A request that needs a write: its ``token``, ``msg``, ``deadline`` (ms), ``result``
    (what the build decided: the broker epoch, per-topic or per-partition outcomes) and
    ``answered``."""

    __slots__ = ("token", "msg", "deadline", "result", "answered")

    def __init__(self, token, msg, deadline: float):
        self.token, self.msg, self.deadline = token, msg, deadline
        self.result = None
        self.answered = False


class _Write:
    """The write in flight: ``op`` (None: the controller's own fencing and partition
    changes), ``count`` records asked at ``offset`` in ``epoch``; once appended,
    ``end`` (past its last record) and ``deadline`` (ms)."""

    __slots__ = ("op", "count", "offset", "epoch", "end", "deadline")

    def __init__(self, op: _Op | None, count: int, offset: int, epoch: int):
        self.op, self.count, self.offset, self.epoch = op, count, offset, epoch
        self.end = -1                      # -1: not appended yet
        self.deadline = float("inf")


class ControllerCore(DeadlineTimers):
    """The controller of node ``config.node_id``. ``clock() -> float`` ms. Feed it a
    :class:`QuorumView` first, then every change of its node's quorum."""

    def __init__(self, config: ControllerConfig, *, clock: Callable[[], float]):
        self.cfg, self.clock = config, clock
        self.now = clock()
        self.out: list = []
        self._init_timers()
        self.view = QuorumView()
        self.log_end = 0
        self.active_epoch = -1                       # the epoch this controller is active in; -1: none
        self.sessions: dict[int, float] = {}         # broker id -> session deadline (ms)
        self.queue: collections.deque[_Op] = collections.deque()
        self.write: _Write | None = None
        self.stalled = False                         # a write was refused: wait for the next view
        self._refusals = 0                           # writes refused in a row

    # -- state ----------------------------------------------------------------------------
    @property
    def active(self) -> bool:
        """True iff this is the active controller."""
        return self.active_epoch >= 0

    @property
    def image(self) -> MetadataImage:
        """The committed metadata image, as the last view gave it."""
        return self.view.image

    # -- driving ----------------------------------------------------------------------------
    def step(self, event) -> list:
        """Handle one event (:class:`QuorumView`, :class:`Appended`, Received of a controller
        request, TimerFired); returns the effects (Reply, SetTimer, ProposeMetadata)."""
        self.now = self.clock()
        self._handlers[type(event)](self, event)
        self._pump()
        self._arm()
        out, self.out = self.out, []
        return out

    def _on_view(self, v: QuorumView) -> None:
        self.view, self.log_end = v, v.log_end
        self.stalled, self._refusals = False, 0
        self._check_write()
        active_now = v.leading and v.committed > v.epoch_start
        if self.active and (not active_now or v.epoch != self.active_epoch):
            log.info("no longer the active controller (epoch %d)", self.active_epoch)
            self.active_epoch, self.sessions = -1, {}
            while self.queue:
                self._answer(self.queue.popleft(), errors.NOT_CONTROLLER, "leadership lost")
        if active_now and not self.active:
            self.active_epoch = v.epoch
            self.sessions = {b: self.now + self.cfg.session_timeout_ms for b in v.image.brokers}
            log.info("active controller in epoch %d (metadata offset %d, %d brokers)",
                     v.epoch, v.image.offset, len(v.image.brokers))

    def _on_appended(self, ev: Appended) -> None:
        w = self.write
        self.log_end = ev.log_end
        if w is None or w.end >= 0:
            return
        if ev.error_code == errors.NONE:
            self._refusals = 0
            w.end = ev.offset + w.count
            w.deadline = self.now + self.cfg.request_timeout_ms
            self._check_write()
            return
        self.write = None
        self._refusals += 1
        rebuild = ev.log_end != w.offset and self._refusals <= MAX_REBUILDS
        if not rebuild:
            self.stalled = True                     # not the leader any more, as the next view will say
        if w.op is None or w.op.answered:
            return                                  # the next pump builds the controller's own again
        if rebuild:
            self.queue.appendleft(w.op)
        else:
            code = errors.NOT_CONTROLLER if ev.error_code == errors.NOT_LEADER_OR_FOLLOWER else ev.error_code
            self._answer(w.op, code, "nothing appended")

    def _on_received(self, ev: Received) -> None:
        msg = ev.msg
        op = _Op(ev.token, msg, self.now + self.cfg.request_timeout_ms)
        if not self.active:
            self._answer(op, errors.NOT_CONTROLLER, "not the active controller")
            return
        if type(msg) is BrokerHeartbeatRequest and not self._heartbeat(op):
            return
        self.queue.append(op)

    def _heartbeat(self, op: _Op) -> bool:
        """Renew the sender's session; True when an unfencing must be written first."""
        msg = op.msg
        b = self.image.brokers.get(msg.broker_id)
        if b is None or b.epoch != msg.broker_epoch:
            self._answer(op, errors.STALE_BROKER_EPOCH, f"broker {msg.broker_id} epoch {msg.broker_epoch} is not "
                                                         f"registered (current {None if b is None else b.epoch})")
            return False
        self.sessions[b.id] = self.now + self.cfg.session_timeout_ms
        if b.fenced and msg.metadata_offset >= b.epoch:
            return True
        self._answer(op, errors.NONE)
        return False

    def _timer_due(self, key) -> None:
        if key == DEADLINES:
            self._expire()
        # SESSIONS: the pump that follows fences whoever expired

    def _expire(self) -> None:
        now = self.now
        keep = collections.deque()
        for op in self.queue:
            if op.deadline <= now:
                self._answer(op, errors.REQUEST_TIMED_OUT, "earlier metadata not committed yet")
            else:
                keep.append(op)
        self.queue = keep
        w = self.write
        if w is not None and w.op is not None and not w.op.answered and w.deadline <= now:
            self._answer(w.op, errors.REQUEST_TIMED_OUT, "appended, not committed in time")

    # -- writes -------------------------------------------------------------------------------
    def _check_write(self) -> None:
        """Finish the write in flight if the view shows it committed, or lost."""
        w, v = self.write, self.view
        if w is None or w.end < 0:
            return
        if v.epoch != w.epoch or not v.leading:
            self.write = None
            if w.op is not None and not w.op.answered:
                self._answer(w.op, errors.REQUEST_TIMED_OUT, "leadership lost: appended, commit unknown")
        elif v.committed >= w.end:
            self.write = None
            if w.op is not None and type(w.op.msg) is BrokerRegistrationRequest:
                self.sessions[w.op.msg.broker_id] = self.now + self.cfg.session_timeout_ms
            if w.op is not None and not w.op.answered:
                self._answer(w.op, errors.NONE)

    def _pump(self) -> None:
        """While active and no write is in flight: start the next one (the controller's own
        fencing and partition changes first, then the requests in order)."""
        while self.write is None and self.active and not self.stalled:
            payloads = self._maintenance()
            if payloads:
                fenced = [r["id"] for r in payloads if r["type"] == FENCE_BROKER]
                if fenced:
                    log.warning("fencing brokers %s: no heartbeat for %d ms", fenced, self.cfg.session_timeout_ms)
                else:
                    log.info("writing %d pending partition changes", len(payloads))
                self._propose(None, payloads)
                return
            if not self.queue:
                return
            op = self.queue.popleft()
            try:
                payloads = self._build(op)
            except Rejected as r:
                self._answer(op, r.code, r.message)
                continue
            if payloads:
                self._propose(op, payloads)
                return
            self._answer(op, errors.NONE)       # nothing to write: the image already has it

    def _propose(self, op: _Op | None, payloads: list) -> None:
        self.write = _Write(op, len(payloads), self.log_end, self.view.epoch)
        self.out.append(ProposeMetadata(payloads, self.log_end))

    def _maintenance(self) -> list[dict]:
        """FenceBrokerRecords for the unfenced brokers whose session expired, and the partition
        changes the image (with them) needs; empty when there is nothing to do."""
        image, now = self.image, self.now
        fences = []
        for b in image.brokers.values():
            if b.fenced:
                continue
            deadline = self.sessions.get(b.id)
            if deadline is None:                 # registered without a session here: one starts now
                self.sessions[b.id] = now + self.cfg.session_timeout_ms
            elif deadline <= now:
                fences.append({"type": FENCE_BROKER, "id": b.id, "epoch": b.epoch})
        for rec in fences:
            image = image.apply(image.offset + 1, rec)      # Fence records ignore their offset
        return fences + partition_changes(image)

    def _build(self, op: _Op) -> list[dict]:
        """The records of ``op`` from the committed image, to land at the log end (what it
        decided kept in ``op.result``). Raises Rejected for a request refused as a whole."""
        records, op.result = requests.build(op.msg, self.image, self.log_end, self.cfg.cluster_id)
        return records

    def _answer(self, op: _Op, code: int, message: str | None = None) -> None:
        """Reply to ``op`` with ``code`` (NONE: from the committed image)."""
        op.answered = True
        resp = requests.answer(op.msg, op.result, self.image, code, None if code == errors.NONE else message)
        resp.leader_id, resp.leader_epoch = self.view.leader_id, self.view.epoch
        self.out.append(Reply(op.token, resp))

    # -- timers ------------------------------------------------------------------------------------
    def _arm(self) -> None:
        """Want the sessions timer at the earliest session still running of an unfenced
        broker (an expired one is fenced by the next write), and the deadlines timer at the
        earliest request deadline."""
        nxt, now = float("inf"), self.now
        if self.active:
            for b in self.image.brokers.values():
                at = self.sessions.get(b.id, nxt)
                if not b.fenced and now < at < nxt:
                    nxt = at
        self._want_at(SESSIONS, nxt)
        due = min((op.deadline for op in self.queue), default=float("inf"))
        w = self.write
        if w is not None and w.op is not None and not w.op.answered:
            due = min(due, w.deadline)
        self._want_at(DEADLINES, due)

    def _want_at(self, key, at: float) -> None:
        if at == float("inf"):
            self._clear_deadline(key)
        elif self._want.get(key) != at:
            self._set_deadline(key, at)


ControllerCore._handlers = {QuorumView: ControllerCore._on_view, Appended: ControllerCore._on_appended,
                            Received: ControllerCore._on_received, TimerFired: ControllerCore._on_timer}
