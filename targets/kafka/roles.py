"""Which node of a ``--db kafka`` cluster does what: the controllers (KRaft voters, node ids
1..C) first, then the brokers (ids C+1..C+B), or with ``topology="combined"`` combined
``broker,controller`` servers; the listeners and addresses each role has, and the clients
that reach them. A mixin of :class:`targets.kafka.db.KafkaDB`, which sets ``cluster``,
``seed``, ``topology``, ``n_controllers``, ``release``, ``version`` and ``txn_client``.
"""
from __future__ import annotations

from targets.base import QuorumClientFactory
from targets.kafka import server_config as sc


class KafkaRoles:
    """Node roles, addresses and clients of a ``KafkaDB`` (see the module docstring)."""

    def role(self, node: str) -> str:
        """``"controller"``, ``"broker"`` or ``"broker,controller"`` (combined)."""
        if self.node_id(node) > self.n_controllers:
            return sc.ROLE_BROKER
        return sc.ROLE_COMBINED if self.topology == "combined" else sc.ROLE_CONTROLLER

    def quorum_nodes(self) -> list[str]:
        """The KRaft voters: :meth:`controllers`."""
        return self.controllers()

    def client_nodes(self) -> list[str]:
        """Where clients connect: :meth:`brokers`."""
        return self.brokers()

    def client_endpoint(self, node: str) -> str:
        """``host:9092``, the broker listener of ``node`` (``host:9093`` for a controller-only one)."""
        port = sc.CONTROLLER_PORT if self.role(node) == sc.ROLE_CONTROLLER else sc.BROKER_PORT
        return f"{self.cluster.ip(node)}:{port}"

    def wait_for_brokers(self, timeout_s: float) -> bool:
        """Until the brokers' metadata lists every broker node, or ``timeout_s`` (s) passed
        (:func:`targets.kafka.queue_client.wait_for_brokers`)."""
        from targets.kafka.queue_client import wait_for_brokers
        return wait_for_brokers([self.client_endpoint(n) for n in self.brokers()],
                                {self.node_id(n) for n in self.brokers()}, timeout_s)

    def locate(self, kind: str, params: dict, rng) -> str | None:
        """The broker node a located fault kind strikes (faults/kill.py ``LOCATED_KINDS``:
        ``txn-coordinator``, ``group-coordinator``, ``partition-leader``), from one Metadata
        request to the brokers (:mod:`targets.kafka.locate`; ``params``: the fault's ``key``,
        ``topic``, ``partition``; ``rng``: the nemesis's, for its draws). None when the role
        has no leader now. Raises ``confluent_kafka.KafkaException`` when no broker answered,
        ``ValueError`` for another kind. Blocking."""
        from targets.kafka.locate import pick, read_leaders
        leaders = read_leaders([self.client_endpoint(n) for n in self.brokers()])
        broker = pick(kind, leaders, params, rng)
        return next((n for n in self.cluster.nodes if self.node_id(n) == broker), None)

    def queue_client_factory(self):
        """The queue workload's client: confluent-kafka against the brokers
        (:func:`targets.kafka.queue_client.kafka_queue_factory`)."""
        from targets.kafka.queue_client import kafka_queue_factory
        return kafka_queue_factory

    def txn_client_factory(self):
        """The ``txn`` workload's transactional client of the run (``txn_client``, else the
        default), against this release: a ``targets.txn_client.TxnClientFactory``
        (:func:`targets.kafka.txn_clients.client_factory`; raises ``ValueError``)."""
        from targets.kafka.txn_clients import DEFAULT_CLIENT, client_factory
        return client_factory(self.txn_client or DEFAULT_CLIENT, self.version)

    def quorum_client_factory(self) -> QuorumClientFactory:
        """DescribeQuorum (api key 55) over Kafka's wire protocol:
        :class:`targets.kafka.describe_quorum.KafkaQuorumClient`."""
        from targets.kafka.describe_quorum import KafkaQuorumClient
        dq = self.release.describe_quorum
        return lambda host, port, cluster_id, timeout_ms: KafkaQuorumClient(host, port, cluster_id, timeout_ms,
                                                                            dq_versions=dq)

    def controllers(self) -> list[str]:
        """The nodes that are KRaft voters (controller or combined), in id order."""
        return list(self.cluster.nodes[:self.n_controllers])

    def brokers(self) -> list[str]:
        """The nodes that run a broker (combined ones included), in id order."""
        return [n for n in self.cluster.nodes if self.role(n) != sc.ROLE_CONTROLLER]

    def address(self, node: str) -> tuple[str, int]:
        """``(host, port)`` of the node's controller listener (9093), or for a
        broker-only node its broker listener (9092)."""
        port = sc.BROKER_PORT if self.role(node) == sc.ROLE_BROKER else sc.CONTROLLER_PORT
        return self.cluster.ip(node), port

    def controller_addresses(self) -> list[tuple[str, int]]:
        """``[(host, 9093), ...]`` of every controller, in id order."""
        return [(self.cluster.ip(n), sc.CONTROLLER_PORT) for n in self.controllers()]

    def bootstrap_servers(self) -> str:
        """The clients' ``bootstrap.servers``: ``host:9092,...`` of every broker."""
        return ",".join(f"{self.cluster.ip(n)}:{sc.BROKER_PORT}" for n in self.brokers())

    def voters(self) -> list[sc.Controller]:
        """The voter set: node id, host and metadata directory id of every controller."""
        return [sc.Controller(self.node_id(n), self.cluster.ip(n), sc.directory_id(self.seed, self.node_id(n)))
                for n in self.controllers()]
