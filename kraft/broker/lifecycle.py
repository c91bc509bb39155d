"""The broker's side of the controller without I/O (KIP-631's broker lifecycle):
``BrokerLifecycle.step(event) -> effects``, in the style of the other cores
(kraft/core/events.py).

- It registers with the active controller (BrokerRegistration) and then heartbeats every
  ``heartbeat_interval_ms`` with its image's offset (BrokerHeartbeat), one request at a
  time, each sent :data:`HEARTBEAT_INTERVAL_MS` after the last one was answered (or
  failed); after STALE_BROKER_EPOCH or BROKER_ID_NOT_REGISTERED it registers again.
  Requests leave as ``Send(CONTROLLER, msg, gen)``: the adapter finds the active
  controller (following NOT_CONTROLLER hints) and feeds the final ``Replied``.
- On every new image (:class:`ImageUpdated`, the broker's replay of the committed
  metadata) that holds its current registration (so a restarted broker never acts on
  the stale leaderships of a half-replayed log), it emits the replication core's
  commands (kraft/replication/messages.py): a :class:`ClusterView` and a
  :class:`LeaderAndIsr` for every partition it is a replica of or has hosted. The adapter
  hands them to the broker's :class:`kraft.replication.BrokerCore`, opening a replica
  before its first LeaderAndIsr.
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Callable

from ..controller.messages import BrokerHeartbeatRequest, BrokerRegistrationRequest, BrokerRegistrationResponse
from ..core import errors
from ..core.events import Replied, Send, TimerFired
from ..core.timers import DeadlineTimers
from ..replication.messages import ClusterView, LeaderAndIsr
from ..state_machines.metadata_image import EMPTY, MIN_ISR, MetadataImage

log = logging.getLogger("kraft.broker")

#: ``Send.to`` of a request for the active controller.
CONTROLLER = "controller"
#: The timer key of the next registration or heartbeat.
HEARTBEAT = ("lifecycle", "heartbeat")
#: BrokerHeartbeat period (ms); registration retries at the same pace.
HEARTBEAT_INTERVAL_MS = 500
#: Heartbeat errors after which the broker registers again.
REREGISTER = (errors.STALE_BROKER_EPOCH, errors.BROKER_ID_NOT_REGISTERED)


@dataclasses.dataclass(slots=True)
class ImageUpdated:
    """Event: the broker's metadata image is now ``image``."""

    image: MetadataImage


class BrokerLifecycle(DeadlineTimers):
    """Broker ``broker_id`` listening on ``host``:``port``, in process run ``incarnation_id``.
    ``clock() -> float`` ms. Call :meth:`start` once, then :meth:`step`."""

    def __init__(self, broker_id: int, host: str, port: int, incarnation_id: str, *,
                 clock: Callable[[], float], heartbeat_interval_ms: float = HEARTBEAT_INTERVAL_MS):
        self.id, self.host, self.port, self.incarnation_id = broker_id, host, port, incarnation_id
        self.clock, self.interval = clock, heartbeat_interval_ms
        self.now = clock()
        self.out: list = []
        self._init_timers()
        self.broker_epoch = -1                  # -1: not registered
        self.fenced = True
        self.image: MetadataImage = EMPTY
        self.hosted: set = set()                # partitions it has had a LeaderAndIsr for
        self.gen = 0                            # of the request in flight
        self.in_flight = False

    def start(self) -> list:
        """The first effects: unregistered, and the registration due now."""
        self.now = self.clock()
        self.out.append(ClusterView(False, None))
        self._set_deadline(HEARTBEAT, self.now)
        return self._drain()

    def step(self, event) -> list:
        """Handle TimerFired, Replied (of its requests) or ImageUpdated; returns the effects."""
        self.now = self.clock()
        self._handlers[type(event)](self, event)
        return self._drain()

    def _drain(self) -> list:
        out, self.out = self.out, []
        return out

    def registered_in(self, image: MetadataImage) -> bool:
        """True iff ``image`` holds this broker's current registration."""
        b = image.brokers.get(self.id)
        return self.broker_epoch >= 0 and b is not None and b.epoch == self.broker_epoch

    # -- requests -------------------------------------------------------------------------------
    def _timer_due(self, key) -> None:
        if key != HEARTBEAT or self.in_flight:
            return
        if self.broker_epoch < 0:
            msg = BrokerRegistrationRequest(self.id, self.host, self.port, self.incarnation_id)
        else:
            msg = BrokerHeartbeatRequest(self.id, self.broker_epoch, self.image.offset)
        self.gen += 1
        self.in_flight = True
        self.out.append(Send(CONTROLLER, msg, self.gen))

    def _on_replied(self, ev: Replied) -> None:
        if ev.gen != self.gen or not self.in_flight:
            return
        self.in_flight = False
        self._set_deadline(HEARTBEAT, self.now + self.interval)
        resp = ev.response
        if resp is None:
            log.debug("%s failed: no controller answered", type(ev.request).__name__)
            return
        code = resp.error_code
        if type(resp) is BrokerRegistrationResponse:
            if code == errors.NONE and resp.broker_epoch >= 0:
                self.broker_epoch = resp.broker_epoch
                log.info("registered as broker %d, epoch %d", self.id, self.broker_epoch)
                self._apply()
            else:
                log.info("BrokerRegistration refused: %s", errors.name(code))
            return
        if code == errors.NONE:
            if resp.is_fenced != self.fenced:
                log.info("broker %d is %s", self.id, "fenced" if resp.is_fenced else "unfenced")
            self.fenced = resp.is_fenced
        elif code in REREGISTER:
            log.info("BrokerHeartbeat: %s; registering again", errors.name(code))
            self.broker_epoch = -1
            self.out.append(ClusterView(False, self._unfenced()))

    # -- the image ----------------------------------------------------------------------------------
    def _on_image(self, ev: ImageUpdated) -> None:
        self.image = ev.image
        self._apply()

    def _unfenced(self) -> frozenset:
        return frozenset(b.id for b in self.image.brokers.values() if not b.fenced)

    def _apply(self) -> None:
        """The replication core's commands for the image (nothing until it holds this
        broker's current registration)."""
        image = self.image
        if not self.registered_in(image):
            return
        self.out.append(ClusterView(True, self._unfenced()))
        for key, st in image.partitions.items():
            if key not in self.hosted:
                if self.id not in st.replicas:
                    continue
                self.hosted.add(key)
            topic = image.topics.get(st.topic)
            min_isr = topic.configs.get(MIN_ISR, 1) if topic is not None else 1
            self.out.append(LeaderAndIsr(key, st.leader, st.leader_epoch, st.partition_epoch, tuple(st.isr),
                                         tuple(st.replicas), min_isr))


BrokerLifecycle._handlers = {TimerFired: BrokerLifecycle._on_timer, Replied: BrokerLifecycle._on_replied,
                             ImageUpdated: BrokerLifecycle._on_image}
