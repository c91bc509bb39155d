"""Which node of a ``--db kraft`` cluster does what: the controllers (voters) first, then the
brokers (``process.roles=broker``; docs/data-plane.md), and the quorum addresses each
needs. A mixin of :class:`targets.kraft_db.KraftDB`, which sets ``cluster``, ``port``,
``seed``, ``cluster_id`` and ``n_brokers``.
"""
from __future__ import annotations

import asyncio
import hashlib
import logging
import uuid

from history.outcomes import ClientError
from kraft.wire import api

from .kraft_client import KraftClient
from .kraft_queue import kraft_queue_factory

log = logging.getLogger("kraft_chaos.db")


def directory_id(run_seed: int, node_id: int) -> str:
    """The node's KIP-853 directory id at kraft.version 1: a UUID (version 4 layout) from
    SHA-256 of ``"<run_seed>:<node_id>:directory"``, so a run's voter set is reproducible."""
    digest = hashlib.sha256(f"{run_seed}:{node_id}:directory".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


class KraftRoles:
    """Node roles and quorum addresses of a ``KraftDB`` (see the module docstring)."""

    def wait_for_brokers(self, timeout_s: float) -> bool:
        """Until a broker's Metadata (3) lists every broker node unfenced, or ``timeout_s``
        (s) passed; True when it did. No brokers: True at once."""
        want = {self.node_id(n) for n in self.brokers()}
        if not want:
            return True
        return asyncio.run(_brokers_listed([self.address(n) for n in self.brokers()], self.cluster_id,
                                           want, timeout_s))

    def queue_client_factory(self):
        """The queue workload's client (targets/kraft_queue.py): ``(bootstrap, options) ->
        KraftQueueClient`` speaking the broker RPCs, this cluster id closed over."""
        return kraft_queue_factory(self.cluster_id)

    def quorum_nodes(self) -> list[str]:
        """The controllers (voters): every node but the last ``brokers``."""
        return list(self.cluster.nodes[:len(self.cluster.nodes) - self.n_brokers])

    def brokers(self) -> list[str]:
        """The broker nodes (``process.roles=broker``), after the controllers."""
        return list(self.cluster.nodes[len(self.cluster.nodes) - self.n_brokers:])

    def client_nodes(self) -> list[str]:
        """The brokers when there are any (the data plane's clients go there), else the voters."""
        return self.brokers() or self.quorum_nodes()

    def is_broker(self, node: str) -> bool:
        """True for a broker node (raises ``ValueError`` for a node not in the cluster)."""
        return self.node_id(node) > len(self.cluster.nodes) - self.n_brokers

    def voters(self) -> str:
        """The ``controller.quorum.voters`` value: ``1@ip1:port,2@ip2:port,...`` (controllers)."""
        return ",".join(f"{self.node_id(n)}@{self.cluster.ip(n)}:{self.port}" for n in self.quorum_nodes())

    def initial_controllers(self) -> str:
        """KIP-853 ``--initial-controllers`` (kraft.version 1): ``id@ip:port:directory-id,...``,
        directory ids from :func:`directory_id`."""
        return ",".join(f"{self.node_id(n)}@{self.cluster.ip(n)}:{self.port}:{directory_id(self.seed, self.node_id(n))}"
                        for n in self.quorum_nodes())

    def bootstrap_servers(self) -> str:
        """KIP-853 ``controller.quorum.bootstrap.servers`` (kraft.version 1, and brokers):
        ``ip:port,...`` of the controllers."""
        return ",".join(f"{self.cluster.ip(n)}:{self.port}" for n in self.quorum_nodes())


async def _brokers_listed(endpoints: list[tuple[str, int]], cluster_id: str, want: set[int],
                          timeout_s: float) -> bool:
    """Ask each endpoint for Metadata in turn until one lists every id of ``want`` unfenced."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    seen: set[int] = set()
    while True:
        for host, port in endpoints:
            c = KraftClient(host, port, cluster_id, timeout_ms=1000)
            try:
                body = await c.request(api.METADATA, {})
            except ClientError:
                continue
            finally:
                await c.close()
            seen = {b.get("Id") for b in body.get("Brokers") or [] if not b.get("Fenced")}
            if want <= seen:
                return True
        if loop.time() >= deadline:
            log.warning("brokers %s not all registered and unfenced within %.0f s (seen: %s)",
                        sorted(want), timeout_s, sorted(seen))
            return False
        await asyncio.sleep(0.5)
