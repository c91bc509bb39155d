"""Controller nodes in the simulator (``--brokers``): a quorum node that also runs the
controller role (``process.roles=controller``), as kraft/node/server.py starts
kraft/controller/service.py beside the node's RaftNode.

Each (re)start builds a fresh :class:`kraft.controller.core.ControllerCore` beside the quorum core
(its broker sessions live in memory only). The node hands the controller's requests and
timers to it, feeds it a QuorumView after every quorum step that changed what it depends
on, and carries out its ProposeMetadata as one step of the quorum core
(kraft/controller/quorum_link.py), exactly as the asyncio adapter does. Every controller node
runs one; only the quorum leader's, once its epoch's first record is committed, is active.
"""
from __future__ import annotations

from kraft.controller.core import CONTROLLER, ControllerConfig, ControllerCore
from kraft.controller.messages import REQUESTS, ProposeMetadata, QuorumView
from kraft.controller.quorum_link import append, view_key
from kraft.core.events import Received, TimerFired

from .quorum_nodes import TIMEOUTS, QuorumNode
from .runtime import Runtime

#: ``broker.session.timeout.ms`` of a real run (kraft/runtime/config.py's default)
SESSION_MS = 3000
#: the cluster id in the controller's topic ids
CLUSTER_ID = "sim"


class ControllerNode(QuorumNode):
    """A quorum node with a controller core (``controller``)."""

    def build(self, rt: Runtime):
        core, effects = super().build(rt)
        self.controller = ControllerCore(ControllerConfig(self.id, CLUSTER_ID, SESSION_MS,
                                                          TIMEOUTS["request_timeout_ms"]), clock=lambda: rt.now)
        self._view: tuple | None = None          # the view key the controller last heard
        return core, effects

    def step(self, event) -> list:
        t = type(event)
        if ((t is Received and type(event.msg) in REQUESTS)
                or (t is TimerFired and type(event.key) is tuple and event.key[0] == CONTROLLER)):
            return self._controller_step(event)
        effects = self.core.step(event)
        if view_key(self.core) != self._view:
            effects += self._controller_step(None)
        return effects

    def _controller_step(self, event) -> list:
        """Step the controller with ``event`` (None: only the view), then with what it causes:
        the Appended of each ProposeMetadata and a view after any quorum change. Returns every
        effect for the runtime (the quorum core's of the appends included), in order."""
        out, events = [], [] if event is None else [event]
        while True:
            if not events:
                key = view_key(self.core)
                if key == self._view:
                    return out
                self._view = key
                events.append(QuorumView.of(self.core))
            for e in self.controller.step(events.pop(0)):
                if type(e) is ProposeMetadata:
                    appended, quorum_effects = append(self.core, e)
                    out += quorum_effects
                    events.append(appended)
                else:
                    out.append(e)
