"""How a replica that is not a voter finds the leader (KIP-853, "Observers" and
``controller.quorum.bootstrap.servers``).

An observer that knows no leader (Unattached), or whose leader stopped
answering for a fetch timeout, sends Fetch to the bootstrap servers in turn
(at kraft.version 1 without bootstrap servers: to the voters' endpoints).
Any answer names the current leader and epoch, and Fetch responses carry the
leader's endpoint in ``NodeEndpoints``; :meth:`RaftNode.observe` then makes
the observer a Follower of that leader, which it replicates from like any
follower. At kraft.version 0 without bootstrap servers nothing is sent
(today's static behaviour: a non-voter waits to be told of a leader).
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from . import api
from .client import ClientError, DefiniteError, KraftClient

if TYPE_CHECKING:
    from .raft import RaftNode

log = logging.getLogger("kraft.observer")


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


def leader_endpoints(node: "RaftNode") -> list[dict]:
    """``NodeEndpoints`` for a response: ``[{"NodeId", "Host", "Port"}]`` of the leader this
    node knows, or ``[]``."""
    lid = node.leader_id
    ep = (node.cfg.listen_host, node.cfg.listen_port) if lid == node.id else node.endpoint(lid)
    return [{"NodeId": lid, "Host": ep[0], "Port": ep[1]}] if lid >= 0 and ep else []


def learn_endpoints(node: "RaftNode", body: dict) -> None:
    """Remember the endpoints a response's ``NodeEndpoints`` names (malformed ones ignored)."""
    for e in body.get("NodeEndpoints") or ():
        if isinstance(e, dict) and isinstance(e.get("NodeId"), int) and isinstance(e.get("Host"), str) \
                and isinstance(e.get("Port"), int):
            node.known_endpoints[e["NodeId"]] = (e["Host"], e["Port"])


def learn_leader_endpoint(node: "RaftNode", leader_id: int, text: object) -> None:
    """Remember ``leader_id``'s endpoint from BeginQuorumEpoch's ``LeaderEndpoint``
    (``"host:port"``; a malformed one is ignored)."""
    try:
        host, port = text.rsplit(":", 1)
        node.known_endpoints[leader_id] = (host, int(port))
    except (AttributeError, ValueError):
        pass


def discovery_targets(node: "RaftNode") -> list[tuple[str, int]]:
    """Where an observer asks for the leader: the bootstrap servers, else (kraft.version 1)
    the voters' endpoints; empty at kraft.version 0 without bootstrap servers."""
    if node.cfg.bootstrap_servers:
        return list(node.cfg.bootstrap_servers)
    if node.voter_history.kraft_version >= 1:
        return [(v.host, v.port) for v in node.voters.voters if v.id != node.id]
    return []


class Discovery:
    """Runs at most one discovery loop per state generation of ``node``."""

    def __init__(self, node: "RaftNode"):
        self.node = node
        self._gen = -1

    def maybe_start(self) -> None:
        """Start the loop for the node's current generation, if not running and there are targets."""
        n = self.node
        if self._gen != n._gen and discovery_targets(n):
            self._gen = n._gen
            n._spawn(self._loop(n._gen))

    async def _loop(self, gen: int) -> None:
        n = self.node
        i = 0
        while n._gen == gen and not n.stopping:
            targets = discovery_targets(n)
            if not targets:
                return
            host, port = targets[i % len(targets)]
            i += 1
            client = KraftClient(host, port, n.cluster_id, timeout_ms=n.cfg.request_timeout_ms)
            try:
                resp = await client.request(api.FETCH, dict(n._fetch_body(), MaxWaitMs=0))
            except ClientError as e:
                log.debug("discovery Fetch to %s:%d failed: %s", host, port, e)
                resp = None
            finally:
                await client.close()
            if resp is not None and n._gen == gen:
                learn_endpoints(n, resp)
                if n.observe(resp.get("LeaderEpoch", -1), resp.get("LeaderId", -1)):
                    log.info("observer found leader %d in epoch %d via %s:%d", n.leader_id, n.epoch, host, port)
                    return
            await asyncio.sleep(max(n.cfg.retry_backoff_ms, 50) / 1000.0)
