"""Broker nodes in the simulator: the two cores kraft/broker/service.py runs, rebuilt at every
(re)start, and what that adapter does between them and the controllers.

- a :class:`kraft.replication.BrokerCore` from the node's :class:`sim.disk.SimDisk` (each
  partition's log and its high-watermark checkpoint), as the adapter opens its log dirs;
- a :class:`kraft.broker.lifecycle.BrokerLifecycle` (registration and heartbeats, a new
  incarnation per life): its LeaderAndIsr and ClusterView go to the BrokerCore (a replica
  added, empty, before its first LeaderAndIsr), and it takes the node's metadata image as
  :class:`kraft.broker.lifecycle.ImageUpdated` events (sim/data_plane.py delivers them);
- requests to the active controller (the lifecycle's, and AlterPartition for the
  BrokerCore's ProposeIsr) sent over the simulated network as kraft/broker/controller_channel.py
  sends them: to the hinted controller, else the controllers in turn, following a
  NOT_CONTROLLER hint at once; a request that gets no answer (a timeout, a cut, a node
  down) goes to the next one while ``request_timeout_ms`` lasts, one try per controller
  at most; a NOT_CONTROLLER without a new hint is the answer.

Broker ids follow the quorum's (voters + 1, ...), named ``n<id>`` like every node.
"""
from __future__ import annotations

from kraft.broker.lifecycle import CONTROLLER, BrokerLifecycle, ImageUpdated
from kraft.controller.messages import REQUESTS, AlterPartitionRequest, IsrChange
from kraft.core import errors
from kraft.core.events import ProposeIsr, Replied, Send, TimerFired
from kraft.core.record_log import RecordLog
from kraft.core.unsafe import Unsafe
from kraft.replication import BrokerConfig, BrokerCore
from kraft.replication.messages import ClusterView, IsrAnswer, LeaderAndIsr

from .disk import SimDisk
from .runtime import Runtime, SimNode

#: the broker's listener port (the node's host is its name)
PORT = 9092


class BrokerNode(SimNode):
    """A broker: ``policy`` (kraft.core.unsafe), ``controllers`` (the controller node ids, in
    the order the broker tries them)."""

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
        self.clock = lambda: rt.now
        self.requests: dict[int, list] = {}    # request id -> [msg, for what, controllers tried, deadline]
        self._ids = 0
        self.hint, self.turn = -1, 0
        return core, self._from_lifecycle(self.lifecycle.start())

    def step(self, event) -> list:
        t = type(event)
        if t is ImageUpdated or (t is TimerFired and type(event.key) is tuple and event.key[0] == "lifecycle"):
            return self._from_lifecycle(self.lifecycle.step(event))
        if t is Replied and type(event.request) in REQUESTS:
            return self._controller_reply(event)
        return self._from_broker(self.core.step(event))

    # -- between the two cores ---------------------------------------------------------------------
    def _from_broker(self, effects: list) -> list:
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
    def _target(self, tried: list) -> int:
        if self.hint >= 0 and self.hint not in tried:
            return self.hint
        n = len(self.controllers)
        for k in range(n):
            c = self.controllers[(self.turn + k) % n]
            if c not in tried:
                return c
        return -1

    def _to_controller(self, msg, purpose, tried: list | None = None, deadline: float | None = None) -> list:
        """Send ``msg`` to the next controller to try (``purpose``: the lifecycle's gen, or the
        ProposeIsr it answers), until ``deadline`` (ms; default: request.timeout.ms from now)."""
        tried = [] if tried is None else tried
        if deadline is None:
            deadline = self.clock() + self.core.cfg.request_timeout_ms
        to = self._target(tried)
        if to < 0 or self.clock() >= deadline:
            return self._answer(msg, purpose, None)
        tried.append(to)
        self._ids += 1
        self.requests[self._ids] = [msg, purpose, tried, deadline]
        return [Send(to, msg, self._ids)]

    def _controller_reply(self, ev: Replied) -> list:
        req = self.requests.pop(ev.gen, None)
        if req is None:
            return []
        msg, purpose, tried, deadline = req
        resp = ev.response
        if resp is None:                      # no answer: that controller is not the one to ask next time
            if self.hint == ev.to:
                self.hint = -1
            self.turn += 1
            return self._to_controller(msg, purpose, tried, deadline)
        if resp.error_code == errors.NOT_CONTROLLER:
            hint = resp.leader_id
            if hint in self.controllers and hint not in tried:
                self.hint = hint
                return self._to_controller(msg, purpose, tried, deadline)
            return self._answer(msg, purpose, resp)
        self.hint = ev.to
        return self._answer(msg, purpose, resp)

    def _answer(self, msg, purpose, resp) -> list:
        """The channel's final answer ``resp`` (None: no controller answered) to whom asked."""
        if type(purpose) is ProposeIsr:
            code = errors.REQUEST_TIMED_OUT if resp is None else resp.error_code
            if code == errors.NONE and resp.partitions:
                code = resp.partitions[0].error_code
            return self._from_broker(self.core.step(IsrAnswer(purpose.log, purpose.isr, purpose.partition_epoch,
                                                              code)))
        return self._from_lifecycle(self.lifecycle.step(Replied(CONTROLLER, msg, resp, purpose)))


def broker_nodes(rt: Runtime, first_id: int, n: int, policy: Unsafe, controllers: tuple[int, ...]) -> list[BrokerNode]:
    """Add and start ``n`` brokers with ids ``first_id``.. that reach ``controllers``; returns them."""
    out = [BrokerNode(first_id + i, policy, controllers) for i in range(n)]
    for b in out:
        rt.add(b)
        rt.start(b.id)
    return out
