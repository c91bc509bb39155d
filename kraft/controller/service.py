"""The controller role on a controller node: the asyncio adapter of the controller core
(kraft/controller/core.py), started by kraft/node/server.py.

It only moves bytes and time: it decodes the controller RPCs (kraft/controller/codec.py)
and hands them to the core, arms the core's timers on the event loop (through
kraft/runtime/driver.py), feeds it a :class:`kraft.controller.messages.QuorumView` whenever
the node's quorum core changes leadership or commits, and carries out its
:class:`kraft.controller.messages.ProposeMetadata` on the node's quorum core
(kraft/controller/quorum_link.py). Every decision (activation, sessions and fencing,
elections, AlterPartition, CreateTopics, one write at a time) is the core's.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Awaitable, Callable

from ..core import errors
from ..core.events import FatalError, Send
from ..runtime.driver import AsyncDriver
from ..runtime.raft import RaftNode
from ..state_machines.metadata_image import MetadataImage
from . import codec, quorum_link
from .core import ControllerConfig, ControllerCore
from .messages import Appended, ProposeMetadata, QuorumView

log = logging.getLogger("kraft.controller")

Handler = Callable[[dict], Awaitable[dict]]


class ControllerService:
    """The controller RPCs for ``node`` (a controller-role RaftNode).

    Call :meth:`start` inside the event loop and :meth:`close` on shutdown;
    :meth:`handlers` maps api keys to handlers.
    """

    def __init__(self, node: RaftNode):
        self.node = node
        cfg = node.cfg
        self.core = ControllerCore(ControllerConfig(node.id, node.cluster_id, cfg.broker_session_timeout_ms,
                                                    cfg.request_timeout_ms),
                                   clock=lambda: time.monotonic() * 1000.0)
        self.driver = AsyncDriver(self.core, self._send, self._carry_out)
        self._view_key: tuple | None = None
        self._view_due = False

    def handlers(self) -> dict[int, Handler]:
        """The controller RPC handlers by api key (for kraft/node/server.py)."""
        return {key: self._handler(key) for key in codec.API_KEYS.values()}

    def start(self) -> None:
        """Listen to the node's quorum and give the core its first view."""
        self.node.metadata.listeners.append(self._changed)
        self.node.state_listeners.append(self._changed)
        self._feed_view()

    async def close(self) -> None:
        """Stop listening; the core gets no more events."""
        for listeners in (self.node.metadata.listeners, self.node.state_listeners):
            if self._changed in listeners:
                listeners.remove(self._changed)
        tasks = self.driver.close()
        if tasks:
            await asyncio.wait(tasks)

    @property
    def image(self) -> MetadataImage:
        """The committed metadata image (kraft/state_machines/metadata_replay.py)."""
        return self.node.metadata.image

    def is_active(self) -> bool:
        """True iff this node is the active controller."""
        return self.core.active

    # -- the node's quorum ---------------------------------------------------------------------------
    def _changed(self, *_) -> None:
        """A listener of the quorum core (called inside its step): the view is fed after it."""
        if not self._view_due:
            self._view_due = True
            asyncio.get_running_loop().call_soon(self._feed_view)

    def _feed_view(self) -> None:
        self._view_due = False
        quorum = self.node.core
        key = quorum_link.view_key(quorum)
        if key != self._view_key:
            self._view_key = key
            self.driver.feed(QuorumView.of(quorum))

    def _carry_out(self, e) -> list:
        """A ProposeMetadata, as one step of the node's quorum core (never inside another of its
        steps: the controller is fed from callbacks and handlers, not from the quorum's listeners)."""
        if type(e) is not ProposeMetadata:
            return []
        node = self.node
        refused = Appended(-1, node.log.end_offset, errors.NOT_LEADER_OR_FOLLOWER)
        if node.stopping or node.fatal is not None:
            return [refused]
        try:
            appended, effects = quorum_link.append(node.core, e)
        except FatalError as err:          # the quorum core broke: the node stops, as its driver would
            log.critical("fatal: %s", err)
            node.driver.fatal = err
            return [refused]
        node.driver.run(effects)
        node.driver.drain()
        return [appended]

    async def _send(self, e: Send) -> None:
        raise RuntimeError(f"the controller core sends nothing, got {e!r}")

    # -- requests --------------------------------------------------------------------------------------
    def _handler(self, api_key: int) -> Handler:
        async def handle(body: dict) -> dict:
            msg = codec.decode_request(api_key, body)
            if self.driver.closed:         # shutting down: no controller here any more
                return {"ErrorCode": errors.NOT_CONTROLLER, "ErrorMessage": "controller shutting down"}
            return codec.encode_response(await self.driver.ask(msg))
        return handle
