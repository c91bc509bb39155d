"""Which broker a data-plane fault strikes (the located kinds of faults/kill.py: a transaction
coordinator, a group coordinator, a partition's leader), from the cluster's Metadata.

Kafka puts a transactional id's state in partition ``abs(id.hashCode()) % n`` of
``__transaction_state`` and a group's in the same partition of ``__consumer_offsets``
(``TransactionStateManager.partitionFor``, ``GroupMetadataManager.partitionFor``; ``abs`` is
``Utils.abs``, 0 for Integer.MIN_VALUE); the coordinator is that partition's leader, which is
what FindCoordinator answers. :func:`pick` decides from a Metadata snapshot (pure);
:func:`read_leaders` takes the snapshot with confluent-kafka's AdminClient.
"""
from __future__ import annotations

import random
from typing import Mapping, Sequence

#: Kafka's internal topics of the two coordinators
TXN_TOPIC = "__transaction_state"
GROUP_TOPIC = "__consumer_offsets"
#: the internal topic of each coordinator kind
COORDINATOR_TOPICS = {"txn-coordinator": TXN_TOPIC, "group-coordinator": GROUP_TOPIC}
#: ``{topic: {partition: leader broker id (-1: none)}}``
Leaders = Mapping[str, Mapping[int, int]]


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units, 32-bit signed wrap-around)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator_partition(key: str, n_partitions: int) -> int:
    """The internal topic's partition that holds ``key`` (a transactional id or a group id):
    ``Utils.abs(key.hashCode()) % n_partitions``. Raises ``ValueError`` for ``n_partitions`` < 1."""
    if n_partitions < 1:
        raise ValueError(f"n_partitions must be >= 1, got {n_partitions!r}")
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % n_partitions


def _most_led(partitions: Mapping[int, int], rng: random.Random) -> int | None:
    counts: dict[int, int] = {}
    for leader in partitions.values():
        if leader >= 0:
            counts[leader] = counts.get(leader, 0) + 1
    if not counts:
        return None
    top = max(counts.values())
    return rng.choice(sorted(b for b, c in counts.items() if c == top))


def pick(kind: str, leaders: Leaders, params: Mapping, rng: random.Random) -> int | None:
    """The broker id a fault of ``kind`` strikes, or None when the role has no leader now.

    ``txn-coordinator`` / ``group-coordinator``: with ``params["key"]`` (a transactional or
    group id), the leader of its partition of the internal topic; without, the broker that
    leads the most of that topic's partitions (it coordinates the most ids; ties drawn from
    ``rng``). ``partition-leader``: the leader of ``params["partition"]`` (else one drawn) of
    ``params["topic"]`` (else one drawn among the topics that are not internal, ``__*``).
    Raises ``ValueError`` for another kind."""
    if kind in COORDINATOR_TOPICS:
        parts = leaders.get(COORDINATOR_TOPICS[kind]) or {}
        if not parts:
            return None
        key = params.get("key")
        if key is None:
            return _most_led(parts, rng)
        leader = parts.get(coordinator_partition(str(key), len(parts)), -1)
        return leader if leader >= 0 else None
    if kind == "partition-leader":
        topic = params.get("topic")
        if topic is None:
            topics = sorted(t for t, p in leaders.items() if not t.startswith("__") and p)
            if not topics:
                return None
            topic = rng.choice(topics)
        parts = leaders.get(topic) or {}
        if not parts:
            return None
        partition = params.get("partition")
        leader = parts.get(partition if partition is not None else rng.choice(sorted(parts)), -1)
        return leader if leader >= 0 else None
    raise ValueError(f"no located kind {kind!r}: choose from {', '.join([*COORDINATOR_TOPICS, 'partition-leader'])}")


def read_leaders(bootstrap: Sequence[str], timeout_s: float = 3.0) -> dict[str, dict[int, int]]:
    """Every topic's partition leaders, internal topics included, from one Metadata request
    (``AdminClient.list_topics``). Raises ``confluent_kafka.KafkaException`` when no broker
    answered within ``timeout_s`` (s). Blocking."""
    from confluent_kafka.admin import AdminClient
    from targets.kafka.queue_client import RDKAFKA_LOG
    admin = AdminClient({"bootstrap.servers": ",".join(bootstrap), "socket.timeout.ms": int(timeout_s * 1000)},
                        logger=RDKAFKA_LOG)
    md = admin.list_topics(timeout=timeout_s)
    return {name: {p: part.leader for p, part in t.partitions.items()} for name, t in md.topics.items()}
