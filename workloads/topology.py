"""Where a workload sends requests: node names, their addresses and node ids."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping


@dataclasses.dataclass(frozen=True)
class Topology:
    """The client's view of the cluster.

    ``nodes`` are the quorum's node names in order (``["n1", "n2", ...]``);
    ``addresses`` maps each name to its quorum endpoint ``(host, port)``;
    ``ids`` maps each name to its KRaft node id (int). ``quorum_factory``
    makes the DescribeQuorum client of a node, ``(host, port, cluster_id,
    timeout_ms) -> client``, whose requests raise ``history.outcomes`` errors (the
    target's: ``DB.quorum_client_factory()``).
    ``bootstrap`` lists the ``host:port`` endpoints of the nodes a target's
    own clients connect to (Kafka's brokers; our quorum's clients use
    ``addresses``). ``queue_client_factory``: how the queue workload makes
    its producer/consumer, ``(bootstrap, options) -> QueueClient``
    (workloads/queue.py), or None when the target has none. ``txn_clients``: how the
    ``txn`` workload gets its transactional client, ``() -> TxnClientFactory``
    (targets/txn_client.py; the target's ``DB.txn_client_factory``, called only when the
    workload needs it), or None. Raises ``ValueError`` when a node lacks an
    address or an id, or two nodes share an id.
    """

    nodes: tuple[str, ...]
    addresses: Mapping[str, tuple[str, int]]
    ids: Mapping[str, int]
    quorum_factory: Callable[[str, int, str, int], Any] | None = None
    bootstrap: tuple[str, ...] = ()
    queue_client_factory: Callable[[tuple[str, ...], Any], Any] | None = None
    txn_clients: Callable[[], Any] | None = None

    def __post_init__(self) -> None:
        if not self.nodes:
            raise ValueError("topology has no nodes")
        for n in self.nodes:
            if n not in self.addresses:
                raise ValueError(f"topology: node {n!r} has no address")
            if n not in self.ids:
                raise ValueError(f"topology: node {n!r} has no node id")
        if len(set(self.ids[n] for n in self.nodes)) != len(self.nodes):
            raise ValueError(f"topology: node ids are not unique: {dict(self.ids)}")

    @classmethod
    def from_db(cls, db, nodes=None) -> "Topology":
        """Build from a ``targets.base.DB``: its quorum nodes (or ``nodes``), their
        ``address``/``node_id``, its ``quorum_client_factory()`` and the endpoints of
        its client nodes, its ``queue_client_factory()`` if it has one, and its
        ``txn_client_factory`` (not called)."""
        nodes = tuple(db.quorum_nodes() if nodes is None else nodes)
        queue = getattr(db, "queue_client_factory", None)
        return cls(nodes, {n: tuple(db.address(n)) for n in nodes},
                   {n: int(db.node_id(n)) for n in nodes}, db.quorum_client_factory(),
                   tuple(db.client_endpoint(n) for n in db.client_nodes()),
                   queue() if callable(queue) else None, getattr(db, "txn_client_factory", None))

    def node_for_id(self, node_id: int | None) -> str | None:
        """The node name whose KRaft id is ``node_id``; None when unknown or None."""
        if node_id is None:
            return None
        for n in self.nodes:
            if self.ids[n] == node_id:
                return n
        return None
