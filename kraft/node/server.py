"""The TCP server: one port for the quorum RPCs and the client API.

Each connection carries frames (kraft/wire/frames.py) answered in order. A
malformed or oversized frame is logged and closes that connection; it never
stops the node. A request with the wrong ClusterId is answered
INCONSISTENT_CLUSTER_ID, one with a bad field INVALID_REQUEST. Every response
carries the node's current LeaderId and LeaderEpoch (KIP-595), and at
kraft.version 1 the leader's endpoint in NodeEndpoints (KIP-853).
"""
from __future__ import annotations

import asyncio
import logging

import functools

from ..broker.service import BrokerService
from ..controller.service import ControllerService
from ..core import errors
from ..runtime.raft import InvalidRequest, RaftNode
from ..wire import frames
from ..wire.quorum_codec import DECODERS

log = logging.getLogger("kraft.server")


class Server:
    """Serves ``node`` on (host, port). ``await start()``, then ``await close()``."""

    def __init__(self, node: RaftNode, host: str, port: int):
        self.node, self.host, self.port = node, host, port
        self._server: asyncio.base_events.Server | None = None
        self._conns: set[asyncio.Task] = set()
        self._closed = False
        # The quorum's RPCs and client API (kraft/wire/quorum_codec.py), served by the node's core.
        self._handlers = {key: functools.partial(node.request, key) for key in DECODERS}
        # Data plane, controller role (kraft/controller/service.py): the active controller's RPCs.
        self.controller = ControllerService(node) if node.cfg.process_roles == "controller" else None
        if self.controller is not None:
            self._handlers.update(self.controller.handlers())
        # Data plane, broker role (kraft/broker/service.py): replication and the broker RPCs.
        self.broker = BrokerService(node) if node.cfg.process_roles == "broker" else None
        if self.broker is not None:
            self._handlers.update(self.broker.handlers())

    async def start(self) -> None:
        """Bind and listen. Raises OSError if the address is unavailable."""
        self._server = await asyncio.start_server(self._serve, self.host, self.port)
        if self.controller is not None:
            self.controller.start()
        if self.broker is not None:
            self.broker.start()
        log.info("listening on %s:%d", self.host, self.port)

    async def close(self) -> None:
        """Stop listening and drop every connection, also one accepted but not yet served
        (its handler starts after this and closes it unanswered)."""
        self._closed = True
        if self.controller is not None:
            await self.controller.close()
        if self._server is not None:
            self._server.close()
        for t in list(self._conns):
            t.cancel()
        if self.broker is not None:      # after the connections: their handlers stop first
            await self.broker.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._conns.add(task)
        peer = writer.get_extra_info("peername")
        try:
            while not self._closed:
                try:
                    frame = await frames.read_frame(reader)
                except frames.FrameError as e:
                    log.warning("closing connection from %s: malformed frame: %s", peer, e)
                    return
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                if frame is None:
                    return
                resp = await self.dispatch(frame)
                if resp is None:
                    log.warning("closing connection from %s: frame is not a request: %.200r", peer, frame)
                    return
                writer.write(frames.encode(resp))
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._conns.discard(task)
            writer.close()

    async def dispatch(self, frame: dict) -> dict | None:
        """Answer one decoded request frame; None if it is not a request at all."""
        key, cid, body = frame.get("ApiKey"), frame.get("CorrelationId"), frame.get("Body")
        if not isinstance(key, int) or not isinstance(cid, int) or not isinstance(body, dict):
            return None
        handler = self._handlers.get(key)
        if handler is None:
            out = {"ErrorCode": errors.INVALID_REQUEST, "ErrorMessage": f"unknown ApiKey {key}"}
        elif body.get("ClusterId") != self.node.cluster_id:
            out = {"ErrorCode": errors.INCONSISTENT_CLUSTER_ID,
                   "ErrorMessage": f"ClusterId {body.get('ClusterId')!r} does not match this "
                                   f"node's cluster {self.node.cluster_id!r}"}
        else:
            try:
                out = await handler(body)
            except InvalidRequest as e:
                out = {"ErrorCode": errors.INVALID_REQUEST, "ErrorMessage": str(e)}
        out.setdefault("LeaderId", self.node.leader_id)
        out.setdefault("LeaderEpoch", self.node.epoch)
        if self.node.voter_history.kraft_version > 0 or self.node.cfg.bootstrap_servers:
            out.setdefault("NodeEndpoints", self.node.leader_endpoints())    # KIP-853: the leader's address
        return {"CorrelationId": cid, "Body": out}
