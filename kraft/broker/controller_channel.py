"""How a broker reaches the active controller (Kafka's ``NodeToControllerChannelManager``).

The active controller is the metadata quorum's leader. The broker's own RaftNode (an
observer of the quorum) knows it as ``leader_id``, with an endpoint from the voter set
or the NodeEndpoints of a response; otherwise the request goes to the
``controller.quorum.bootstrap.servers`` (or static voters) in turn. A controller that
is not active answers ``NOT_CONTROLLER`` with the ``LeaderId`` hint every response
carries; the request is then sent again to that one, until ``deadline``.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from ..core import errors
from ..wire.client import ClientError, DefiniteError, IndefiniteError, KraftClient

if TYPE_CHECKING:
    from ..runtime.raft import RaftNode

log = logging.getLogger("kraft.controller_channel")


class ControllerChannel:
    """Requests from a broker to the active controller, over a pool of connections per
    endpoint (a connection carries one request at a time; concurrent requests, e.g. a
    heartbeat during a CreateTopics, each get one).

    ``node``: the broker's RaftNode; ``timeout_ms``: per request (ms).
    """

    def __init__(self, node: "RaftNode", timeout_ms: int):
        self.node, self.timeout_ms = node, timeout_ms
        self._idle: dict[tuple[str, int], list[KraftClient]] = {}
        self._busy: set[KraftClient] = set()
        self._hint: int = -1
        self._next = 0

    def _targets(self) -> list[tuple[str, int]]:
        """Endpoints to try, best first: the hinted controller, the quorum's leader, then the
        bootstrap servers and static voters."""
        out = []
        for nid in (self._hint, self.node.leader_id):
            ep = self.node.endpoint(nid) if nid >= 0 and nid != self.node.id else None
            if ep and ep not in out:
                out.append(ep)
        rest = list(self.node.cfg.bootstrap_servers) + [(v.host, v.port) for v in self.node.cfg.voters]
        rest = [ep for ep in dict.fromkeys(rest) if ep not in out]
        if rest:
            k = self._next % len(rest)
            self._next += 1
            out += rest[k:] + rest[:k]
        return out

    async def _send(self, ep: tuple[str, int], api_key: int, body: dict) -> dict:
        idle = self._idle.setdefault(ep, [])
        c = idle.pop() if idle else KraftClient(ep[0], ep[1], self.node.cluster_id, timeout_ms=self.timeout_ms)
        self._busy.add(c)
        try:
            return await c.request(api_key, body)
        finally:
            self._busy.discard(c)
            idle.append(c)

    async def request(self, api_key: int, body: dict, timeout_s: float) -> dict:
        """Send ``body`` to the active controller; returns its response body (ErrorCode not
        checked, except NOT_CONTROLLER, which is followed to the hinted controller).

        Gives up after ``timeout_s`` seconds: raises :class:`DefiniteError` when no
        controller was reached (or each answered NOT_CONTROLLER: nothing done), and
        :class:`IndefiniteError` when a request may have reached one.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        maybe_sent: ClientError | None = None
        last: ClientError = DefiniteError("connection", "no controller endpoint known")
        while True:
            redirected = False
            for ep in self._targets():
                try:
                    resp = await self._send(ep, api_key, body)
                except IndefiniteError as e:
                    maybe_sent = last = e
                    continue
                except DefiniteError as e:
                    last = e
                    continue
                if resp.get("ErrorCode") != errors.NOT_CONTROLLER:
                    return resp
                hint = resp.get("LeaderId", -1)
                hint = hint if isinstance(hint, int) and hint >= 0 else -1
                last = DefiniteError("NOT_CONTROLLER", f"{ep[0]}:{ep[1]} is not the active controller",
                                     hint if hint >= 0 else None)
                if hint >= 0 and hint != self._hint and self.node.endpoint(hint):
                    self._hint, redirected = hint, True
                    break
            if loop.time() >= deadline:
                raise maybe_sent or last
            if not redirected:
                await asyncio.sleep(max(self.node.cfg.retry_backoff_ms, 50) / 1000.0)

    async def close(self) -> None:
        """Close every connection."""
        clients = [c for idle in self._idle.values() for c in idle] + list(self._busy)
        self._idle, self._busy = {}, set()
        for c in clients:
            await c.close()
