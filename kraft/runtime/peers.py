"""How the asyncio adapter reaches other replicas: their endpoints (from the voter set, or
learned from BeginQuorumEpoch's ``LeaderEndpoint`` and the ``NodeEndpoints`` of
responses; KIP-853) and a stand-in client for a node whose endpoint is unknown.

The cores address replicas by node id only; this is the adapter's address book.
"""
from __future__ import annotations

import asyncio

from ..rules.voter_set import VoterSet
from ..wire.client import DefiniteError


class NoRoute:
    """A stand-in client for a node whose endpoint is unknown: every request fails as
    DefiniteError "connection" (nothing was sent)."""

    def __init__(self, node_id: int):
        self.node_id = node_id

    async def request(self, api_key: int, body: dict) -> dict:
        """Raises DefiniteError: there is no address to send to."""
        await asyncio.sleep(0)
        raise DefiniteError("connection", f"no known endpoint for node {self.node_id}")

    async def close(self) -> None:
        """Nothing to close."""


class AddressBook:
    """Endpoints of node ids: the voter set's (``voters()``, a callable: the set changes),
    else as learned (:meth:`learn`, :meth:`learn_leader`)."""

    def __init__(self, voters) -> None:
        self._voters = voters
        self.known: dict[int, tuple[str, int]] = {}

    def endpoint(self, node_id: int) -> tuple[str, int] | None:
        """(host, port) of ``node_id``, or None if unknown."""
        v: VoterSet = self._voters()
        node = v.get(node_id)
        return (node.host, node.port) if node is not None else self.known.get(node_id)

    def learn(self, body: dict) -> None:
        """Remember the endpoints a response's ``NodeEndpoints`` names (malformed ones ignored)."""
        for e in body.get("NodeEndpoints") or ():
            if isinstance(e, dict) and isinstance(e.get("NodeId"), int) and isinstance(e.get("Host"), str) \
                    and isinstance(e.get("Port"), int):
                self.known[e["NodeId"]] = (e["Host"], e["Port"])

    def learn_leader(self, leader_id: object, text: object) -> None:
        """Remember ``leader_id``'s endpoint from BeginQuorumEpoch's ``LeaderEndpoint``
        (``"host:port"``; a malformed one is ignored)."""
        try:
            host, port = text.rsplit(":", 1)
            if isinstance(leader_id, int):
                self.known[leader_id] = (host, int(port))
        except (AttributeError, ValueError):
            pass

    def leader_endpoints(self, leader_id: int, self_id: int, listen: tuple[str, int]) -> list[dict]:
        """``NodeEndpoints`` for a response: ``[{"NodeId", "Host", "Port"}]`` of ``leader_id``
        (``listen`` when it is us), or ``[]``."""
        ep = listen if leader_id == self_id else self.endpoint(leader_id)
        return [{"NodeId": leader_id, "Host": ep[0], "Port": ep[1]}] if leader_id >= 0 and ep else []
