"""A lazily filled set of KraftClients, one per node, owned by one worker."""
from __future__ import annotations

from typing import Any, Callable

from .topology import Topology

#: builds a client of a quorum node: (host, port, cluster_id, timeout_ms) -> client, whose
#: requests raise ``history.outcomes`` errors (the target's, e.g. targets/kraft_client.py)
ClientFactory = Callable[[str, int, str, int], Any]


class ClientPool:
    """One client per node for a single owner (a worker or monitor).

    Each client has one request in flight at a time, which holds because the
    owner issues ops one after another. ``timeout_ms`` bounds each request.
    """

    def __init__(self, topology: Topology, cluster_id: str, timeout_ms: int,
                 factory: ClientFactory | None = None):
        self.topology, self.cluster_id, self.timeout_ms = topology, cluster_id, timeout_ms
        self.factory = factory or topology.quorum_factory
        if self.factory is None:
            raise ValueError("no client factory: the topology's target names none (Topology.quorum_factory)")
        self._clients: dict[str, Any] = {}

    def get(self, node: str) -> Any:
        """The client for ``node``, created on first use. KeyError for an unknown node."""
        c = self._clients.get(node)
        if c is None:
            host, port = self.topology.addresses[node]
            c = self._clients[node] = self.factory(host, port, self.cluster_id, self.timeout_ms)
        return c

    async def close(self) -> None:
        """Close every client (errors while closing are ignored)."""
        clients, self._clients = list(self._clients.values()), {}
        for c in clients:
            try:
                await c.close()
            except Exception:
                pass
