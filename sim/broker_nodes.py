"""Broker nodes in the simulator: the two cores kraft/broker/service.py runs, rebuilt at every
(re)start, and what that adapter does between them and the controllers.

- a :class:`kraft.replication.BrokerCore` from the node's :class:`sim.disk.SimDisk` (each
  partition's log and its high-watermark checkpoint), as the adapter opens its log dirs;
- a :class:`kraft.broker.lifecycle.BrokerLifecycle` (registration and heartbeats, a new
  incarnation per life): its LeaderAndIsr and ClusterView go to the BrokerCore (a replica
  added, empty, before its first LeaderAndIsr);
- what the broker's observer of the metadata quorum knows, modelled (sim/data_plane.py
  delivers it as :class:`ObserverUpdate`): the quorum's leader and committed image (the
  image goes to the lifecycle core);
- requests to the active controller (the lifecycle's, and AlterPartition for the
  BrokerCore's ProposeIsr) sent over the simulated network as
  kraft/broker/controller_channel.py sends them: in rounds over the hinted controller, the
  quorum's leader, then the controllers in turn (a different first one each round),
  following a NOT_CONTROLLER hint at once and waiting :data:`BACKOFF_MS` between rounds,
  until ``request_timeout_ms`` has passed (then the request failed: no answer). A controller
  that is down refuses the connection at once; one cut off or paused times out.

Broker ids follow the quorum's (voters + 1, ...), named ``n<id>`` like every node.
"""
from __future__ import annotations

import dataclasses

from kraft.broker.lifecycle import CONTROLLER, BrokerLifecycle, ImageUpdated
from kraft.controller.messages import REQUESTS, AlterPartitionRequest, IsrChange
from kraft.core import errors
from kraft.core.events import ProposeIsr, Replied, Send, SetTimer, TimerFired
from kraft.core.record_log import RecordLog
from kraft.core.unsafe import Unsafe
from kraft.replication import BrokerConfig, BrokerCore
from kraft.replication.messages import ClusterView, IsrAnswer, LeaderAndIsr
from kraft.state_machines.metadata_image import MetadataImage

from .disk import SimDisk
from .runtime import Runtime, SimNode

#: the broker's listener port (the node's host is its name)
PORT = 9092
#: the channel's pause between two rounds over the controllers (ms: the real one's
#: max(retry_backoff_ms, 50))
BACKOFF_MS = 50.0
#: the first element of the channel's timer keys
CHANNEL = "channel"


@dataclasses.dataclass(slots=True)
class ObserverUpdate:
    """What the broker's observer of the metadata quorum learnt (modelled): the quorum's
    ``leader`` and its committed ``image``."""

    leader: int
    image: MetadataImage


class _Request:
    """A request to the active controller: ``msg``, for whom (``purpose``: the lifecycle's
    gen, or the ProposeIsr it answers), ``deadline`` (ms), this round's ``targets`` and the
    ``next`` one to try."""

    __slots__ = ("msg", "purpose", "deadline", "targets", "next")

    def __init__(self, msg, purpose, deadline: float, targets: list[int]):
        self.msg, self.purpose, self.deadline, self.targets, self.next = msg, purpose, deadline, targets, 0


class BrokerNode(SimNode):
    """A broker: ``policy`` (kraft.core.unsafe), ``controllers`` (the controller node ids: its
    bootstrap servers)."""

    def __init__(self, node_id: int, policy: Unsafe, controllers: tuple[int, ...]):
        super().__init__(node_id, f"n{node_id}", SimDisk(None))
        self.policy, self.controllers = policy, controllers

    def wipe(self) -> None:
        self.disk.wipe(None)

    def build(self, rt: Runtime):
        core = BrokerCore(BrokerConfig(self.id, unsafe=self.policy), clock=lambda: rt.now)
        for key in sorted(k for k in self.disk.logs if k is not None):
            core.add_partition(key, RecordLog(list(self.disk.logs[key].records)), self.disk.hw.get(key, 0))
        self.core = core
        self.lifecycle = BrokerLifecycle(self.id, self.name, PORT, f"{self.name}.{self.life}", clock=lambda: rt.now)
        self.clock, self.up = (lambda: rt.now), rt.up
        self.requests: dict[int, _Request] = {}    # Send gen or timer id -> request
        self._ids = 0
        self.hint, self.quorum_leader, self.turn = -1, -1, 0
        self.image_offset = None
        return core, self._from_lifecycle(self.lifecycle.start())

    def step(self, event) -> list:
        t = type(event)
        if t is ObserverUpdate:
            self.quorum_leader = event.leader
            if event.image.offset == self.image_offset:
                return []
            self.image_offset = event.image.offset
            return self._from_lifecycle(self.lifecycle.step(ImageUpdated(event.image)))
        if t is TimerFired and type(event.key) is tuple:
            if event.key[0] == "lifecycle":
                return self._from_lifecycle(self.lifecycle.step(event))
            if event.key[0] == CHANNEL:
                return self._round(self.requests.pop(event.key[1]))
        if t is Replied and type(event.request) in REQUESTS:
            return self._controller_reply(event)
        return self._from_broker(self.core.step(event))

    # -- between the two cores ---------------------------------------------------------------------
    def _from_broker(self, effects: list) -> list:
        for e in effects:
            if type(e) is ProposeIsr:
                break
        else:
            return effects                  # the common case: nothing for the controller channel
        out = []
        for e in effects:
            if type(e) is ProposeIsr:
                msg = AlterPartitionRequest(self.id, self.lifecycle.broker_epoch, (
                    IsrChange(e.log[0], e.log[1], e.leader_epoch, e.partition_epoch, tuple(e.isr)),))
                out += self._to_controller(msg, e)
            else:
                out.append(e)
        return out

    def _from_lifecycle(self, effects: list) -> list:
        out = []
        for e in effects:
            t = type(e)
            if t is Send:
                out += self._to_controller(e.msg, e.gen)
            elif t is LeaderAndIsr or t is ClusterView:
                if t is LeaderAndIsr and e.key not in self.core.states:
                    self.core.add_partition(e.key, RecordLog(), 0)
                out += self._from_broker(self.core.step(e))
            else:
                out.append(e)
        return out

    # -- the controller channel ---------------------------------------------------------------------
    def _targets(self) -> list[int]:
        """This round's controllers, best first: the hinted one, the quorum's leader, then the
        others from a different one each round."""
        out = [c for c in dict.fromkeys((self.hint, self.quorum_leader)) if c in self.controllers]
        rest = [c for c in self.controllers if c not in out]
        if rest:
            k = self.turn % len(rest)
            self.turn += 1
            out += rest[k:] + rest[:k]
        return out

    def _to_controller(self, msg, purpose) -> list:
        return self._round(_Request(msg, purpose, self.clock() + self.core.cfg.request_timeout_ms, []))

    def _round(self, req: _Request) -> list:
        """A new round over the controllers."""
        req.targets, req.next = self._targets(), 0
        return self._try(req)

    def _try(self, req: _Request) -> list:
        """Send ``req`` to the next controller of its round; after the last: wait and start
        another, or fail once past its deadline."""
        while req.next < len(req.targets):
            to = req.targets[req.next]
            req.next += 1
            if self.up(to):                  # else the connection is refused at once
                self._ids += 1
                self.requests[self._ids] = req
                return [Send(to, req.msg, self._ids)]
        if self.clock() >= req.deadline:
            return self._answer(req, None)
        self._ids += 1
        self.requests[self._ids] = req
        return [SetTimer((CHANNEL, self._ids), self.clock() + BACKOFF_MS)]

    def _controller_reply(self, ev: Replied) -> list:
        req = self.requests.pop(ev.gen, None)
        if req is None:
            return []
        resp = ev.response
        if resp is not None and resp.error_code != errors.NOT_CONTROLLER:
            return self._answer(req, resp)
        if resp is not None and resp.leader_id in self.controllers and resp.leader_id != self.hint:
            self.hint = resp.leader_id                # redirected: a new round, the hint first
            return self._round(req)
        return self._try(req)

    def _answer(self, req: _Request, resp) -> list:
        """The channel's final answer ``resp`` (None: no controller answered in time) to whom asked."""
        purpose = req.purpose
        if type(purpose) is ProposeIsr:
            code = errors.REQUEST_TIMED_OUT if resp is None else resp.error_code
            if code == errors.NONE and resp.partitions:
                code = resp.partitions[0].error_code
            return self._from_broker(self.core.step(IsrAnswer(purpose.log, purpose.isr, purpose.partition_epoch,
                                                              code)))
        return self._from_lifecycle(self.lifecycle.step(Replied(CONTROLLER, req.msg, resp, purpose)))


def broker_nodes(rt: Runtime, first_id: int, n: int, policy: Unsafe, controllers: tuple[int, ...]) -> list[BrokerNode]:
    """Add and start ``n`` brokers with ids ``first_id``.. that reach ``controllers``; returns them."""
    out = [BrokerNode(first_id + i, policy, controllers) for i in range(n)]
    for b in out:
        rt.add(b)
        rt.start(b.id)
    return out
