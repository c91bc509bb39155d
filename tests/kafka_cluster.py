"""A real Apache Kafka cluster in Docker for the data-plane client tests: controllers and
brokers of one release, made the way a run makes them (the target's node image, its
``KafkaDB``), without a workload or a nemesis.

:func:`kafka_cluster` is a context manager yielding a :class:`KafkaCluster`: ``db`` (the
``KafkaDB``), ``bootstrap`` (every broker's ``"host:port"``) and :meth:`create_topic`.
Whoever starts one holds the machine's shared cluster lock (run pytest under ``flock``).
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from types import SimpleNamespace
from typing import Iterator

@dataclasses.dataclass
class KafkaCluster:
    """A started cluster: its ``db`` (``targets.kafka.db.KafkaDB``) and the brokers' endpoints."""

    db: object
    bootstrap: tuple[str, ...]

    def create_topic(self, topic: str, partitions: int = 2, replication_factor: int = 3,
                     min_insync: int = 2, timeout_s: float = 60.0) -> None:
        """Create ``topic`` (unclean leader election off) and wait until every partition has
        a leader; raises ``RuntimeError`` when that did not happen within ``timeout_s``."""
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": ",".join(self.bootstrap)})
        fut = admin.create_topics([NewTopic(topic, partitions, replication_factor, config={
            "min.insync.replicas": str(min_insync), "unclean.leader.election.enable": "false"})])[topic]
        fut.result(timeout_s)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            md = admin.list_topics(topic, timeout=5).topics.get(topic)
            if md is not None and md.error is None and len(md.partitions) == partitions and \
                    all(p.leader >= 0 for p in md.partitions.values()):
                return
            time.sleep(0.3)
        raise RuntimeError(f"topic {topic} has no leader for every partition after {timeout_s:.0f} s")


@contextlib.contextmanager
def kafka_cluster(engine, version: str, subnet: str, *, controllers: int = 1, brokers: int = 3,
                  name: str = "clients") -> Iterator[KafkaCluster]:
    """Start ``controllers`` controllers and ``brokers`` brokers of Kafka ``version`` in Docker
    on ``subnet`` (the node image built if missing), wait until every broker is registered,
    yield the cluster, and always tear it down. Raises ``TargetError``/``ClusterError`` when
    it cannot be made, ``RuntimeError`` when the brokers do not register within 90 s."""
    from clusters.registry import Resolved, make_cluster
    from targets.kafka.queue_client import wait_for_brokers
    from targets.registry import node_software, target_spec

    spec = target_spec("kafka")
    options = SimpleNamespace(seed=7, nodes=controllers, brokers=brokers, base_image=None, unsafe=[],
                              kafka_version=version, kafka_topology="dedicated", kraft_version=None,
                              kafka_dist=None, kafka_props=None, fetch_max_records=None)
    options.kraft_version = None
    software = node_software(spec, Resolved("docker", engine), options, lambda m: None)
    cluster = make_cluster("docker", controllers + brokers, f"{name}-{int(time.time())}", software,
                           subnet=subnet, engine=engine)
    db = None
    try:
        cluster.setup()
        db = spec.make_db(cluster, f"kc{os.getpid()}", options)
        db.setup()
        bootstrap = tuple(db.client_endpoint(n) for n in db.client_nodes())
        ids = {db.node_id(n) for n in db.client_nodes()}
        if not wait_for_brokers(bootstrap, ids, 90.0):
            raise RuntimeError(f"Kafka {version}: brokers {sorted(ids)} did not all register within 90 s")
        yield KafkaCluster(db, bootstrap)
    finally:
        if db is not None:
            db.teardown()
        cluster.teardown()
