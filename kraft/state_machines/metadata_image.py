"""The cluster metadata image: brokers, topics and partitions (docs/data-plane.md).

Pure, the model of kraft/rules/voting.py: :meth:`MetadataImage.apply` folds one committed
``Metadata`` record (kraft/core/records.py type 4) into a new, immutable image. The
records and their field names are Kafka's (KIP-631 RegisterBrokerRecord,
FenceBrokerRecord, UnfenceBrokerRecord, TopicRecord, PartitionRecord,
PartitionChangeRecord); the ISR rules are Kafka 0.8's replication design.

Each record is a JSON object ``{"type": <record name>, ...fields}``:

- ``RegisterBrokerRecord`` ``brokerId``, ``brokerEpoch`` (= the record's own offset),
  ``host``, ``port``, ``incarnationId``: the broker is (re)registered, fenced.
- ``FenceBrokerRecord`` / ``UnfenceBrokerRecord`` ``id``, ``epoch`` (its broker epoch).
- ``TopicRecord`` ``name``, ``topicId``, ``configs``
  (``{"min.insync.replicas": int >= 1, "unclean.leader.election.enable": bool}``).
- ``PartitionRecord`` ``topic``, ``partitionId``, ``replicas``, ``isr``, ``leader``
  (-1: none), ``leaderEpoch``, ``partitionEpoch``.
- ``PartitionChangeRecord`` ``topic``, ``partitionId`` and the whole new ``isr``,
  ``leader``, ``leaderEpoch``, ``partitionEpoch``: ``partitionEpoch`` goes up by
  exactly one; ``leaderEpoch`` by exactly one iff the leader changes.
"""
from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import Mapping

REGISTER_BROKER = "RegisterBrokerRecord"
FENCE_BROKER = "FenceBrokerRecord"
UNFENCE_BROKER = "UnfenceBrokerRecord"
TOPIC = "TopicRecord"
PARTITION = "PartitionRecord"
PARTITION_CHANGE = "PartitionChangeRecord"
RECORD_TYPES = (REGISTER_BROKER, FENCE_BROKER, UNFENCE_BROKER, TOPIC, PARTITION, PARTITION_CHANGE)

MIN_ISR = "min.insync.replicas"
UNCLEAN = "unclean.leader.election.enable"
#: Topic configs and their defaults (Kafka's: min.insync.replicas 1, unclean off).
DEFAULT_TOPIC_CONFIGS = MappingProxyType({MIN_ISR: 1, UNCLEAN: False})
NO_LEADER = -1


@dataclasses.dataclass(frozen=True)
class BrokerInfo:
    """A registered broker: ``id``, ``epoch`` (the offset of its RegisterBrokerRecord),
    ``host``, ``port`` and ``fenced`` (True from registration until unfenced)."""

    id: int
    epoch: int
    host: str
    port: int
    fenced: bool


@dataclasses.dataclass(frozen=True)
class TopicInfo:
    """A topic: ``name``, ``topic_id``, ``partitions`` (how many PartitionRecords so far)
    and ``configs`` (every key of DEFAULT_TOPIC_CONFIGS)."""

    name: str
    topic_id: str
    partitions: int
    configs: dict


@dataclasses.dataclass(frozen=True)
class PartitionState:
    """One partition: ``replicas`` (assignment order; the first is preferred), ``isr``,
    ``leader`` (broker id, -1 when offline), ``leader_epoch``, ``partition_epoch``."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int

    def to_change(self) -> dict:
        """This state as a PartitionChangeRecord payload."""
        return {"type": PARTITION_CHANGE, "topic": self.topic, "partitionId": self.partition,
                "isr": list(self.isr), "leader": self.leader, "leaderEpoch": self.leader_epoch,
                "partitionEpoch": self.partition_epoch}


def _int(payload: dict, key: str, minimum: int | None = None) -> int:
    v = payload.get(key)
    if type(v) is not int:
        raise ValueError(f"{payload.get('type')}: field {key!r} must be an int, got {v!r}")
    if minimum is not None and v < minimum:
        raise ValueError(f"{payload.get('type')}: field {key!r} must be >= {minimum}, got {v}")
    return v


def _str(payload: dict, key: str) -> str:
    v = payload.get(key)
    if not isinstance(v, str) or not v:
        raise ValueError(f"{payload.get('type')}: field {key!r} must be a non-empty string, got {v!r}")
    return v


def _ids(payload: dict, key: str) -> tuple[int, ...]:
    v = payload.get(key)
    if not isinstance(v, list) or any(type(x) is not int or x < 0 for x in v) or len(set(v)) != len(v):
        raise ValueError(f"{payload.get('type')}: field {key!r} must be a list of distinct broker ids, got {v!r}")
    return tuple(v)


def topic_configs(configs: object) -> dict:
    """``configs`` (a dict, possibly partial) completed with DEFAULT_TOPIC_CONFIGS.

    Raises ValueError for an unknown key or a value of the wrong type
    (min.insync.replicas an int >= 1; unclean.leader.election.enable a bool).
    """
    if not isinstance(configs, dict):
        raise ValueError(f"topic configs must be an object, got {configs!r}")
    unknown = set(configs) - set(DEFAULT_TOPIC_CONFIGS)
    if unknown:
        raise ValueError(f"unknown topic configs {sorted(unknown)}")
    out = {**DEFAULT_TOPIC_CONFIGS, **configs}
    if type(out[MIN_ISR]) is not int or out[MIN_ISR] < 1:
        raise ValueError(f"{MIN_ISR} must be an int >= 1, got {out[MIN_ISR]!r}")
    if type(out[UNCLEAN]) is not bool:
        raise ValueError(f"{UNCLEAN} must be a bool, got {out[UNCLEAN]!r}")
    return out


@dataclasses.dataclass(frozen=True)
class MetadataImage:
    """The metadata as of the record at ``offset`` (-1: none applied).

    ``brokers`` by id, ``topics`` by name, ``partitions`` by (topic, partition); all
    read-only mappings. Immutable: :meth:`apply` returns a new image.
    """

    offset: int
    brokers: Mapping[int, BrokerInfo]
    topics: Mapping[str, TopicInfo]
    partitions: Mapping[tuple[str, int], PartitionState]

    def unfenced(self) -> list[int]:
        """The ids of the unfenced brokers, ascending."""
        return sorted(b.id for b in self.brokers.values() if not b.fenced)

    def is_unfenced(self, broker_id: int) -> bool:
        """True iff ``broker_id`` is registered and unfenced."""
        b = self.brokers.get(broker_id)
        return b is not None and not b.fenced

    def topic_partitions(self, topic: str) -> list[PartitionState]:
        """The partitions of ``topic`` in index order (empty for an unknown topic)."""
        info = self.topics.get(topic)
        return [] if info is None else [self.partitions[(topic, i)] for i in range(info.partitions)]

    def apply(self, offset: int, payload: dict) -> "MetadataImage":
        """The image after the Metadata record ``payload`` at log ``offset``.

        Raises ValueError naming the problem for a malformed record, an offset not
        after :attr:`offset`, an unknown record type, a reference to an unknown
        broker, topic or partition, a stale broker epoch, a duplicate topic or
        partition, an ISR not within the replicas, a leader outside the ISR, or
        epochs that do not follow the rules (module docstring).
        """
        if type(offset) is not int or offset <= self.offset:
            raise ValueError(f"record offset {offset!r} is not after the image's offset {self.offset}")
        if not isinstance(payload, dict):
            raise ValueError(f"a Metadata record must be an object, got {payload!r}")
        kind = payload.get("type")
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is None:
            raise ValueError(f"unknown Metadata record type {kind!r}")
        return dataclasses.replace(handler(self, offset, payload), offset=offset)

    # -- one method per record type --------------------------------------------------
    def _register(self, offset: int, p: dict) -> "MetadataImage":
        bid, epoch = _int(p, "brokerId", 0), _int(p, "brokerEpoch", 0)
        if epoch != offset:
            raise ValueError(f"RegisterBrokerRecord: brokerEpoch {epoch} is not the record's offset {offset}")
        _str(p, "incarnationId")
        info = BrokerInfo(bid, epoch, _str(p, "host"), _int(p, "port", 0), True)
        return self._with(brokers={**self.brokers, bid: info})

    def _fencing(self, p: dict, fenced: bool) -> "MetadataImage":
        bid, epoch = _int(p, "id"), _int(p, "epoch")
        b = self.brokers.get(bid)
        if b is None:
            raise ValueError(f"{p['type']}: unknown broker {bid}")
        if b.epoch != epoch:
            raise ValueError(f"{p['type']}: broker {bid} has epoch {b.epoch}, record names {epoch}")
        return self._with(brokers={**self.brokers, bid: dataclasses.replace(b, fenced=fenced)})

    def _topic(self, offset: int, p: dict) -> "MetadataImage":
        name = _str(p, "name")
        if name in self.topics:
            raise ValueError(f"TopicRecord: topic {name!r} already exists")
        info = TopicInfo(name, _str(p, "topicId"), 0, topic_configs(p.get("configs", {})))
        return self._with(topics={**self.topics, name: info})

    def _partition(self, offset: int, p: dict) -> "MetadataImage":
        topic, index = _str(p, "topic"), _int(p, "partitionId", 0)
        info = self.topics.get(topic)
        if info is None:
            raise ValueError(f"PartitionRecord: unknown topic {topic!r}")
        if index != info.partitions:
            raise ValueError(f"PartitionRecord: {topic}-{index} is not the next partition ({info.partitions})")
        replicas = _ids(p, "replicas")
        if not replicas:
            raise ValueError(f"PartitionRecord: {topic}-{index} has no replicas")
        unknown = [r for r in replicas if r not in self.brokers]
        if unknown:
            raise ValueError(f"PartitionRecord: {topic}-{index} names unregistered brokers {unknown}")
        state = PartitionState(topic, index, replicas, (), NO_LEADER, _int(p, "leaderEpoch", 0),
                               _int(p, "partitionEpoch", 0))
        state = _checked_isr(state, _ids(p, "isr"), _int(p, "leader", NO_LEADER), "PartitionRecord")
        return self._with(topics={**self.topics, topic: dataclasses.replace(info, partitions=index + 1)},
                          partitions={**self.partitions, (topic, index): state})

    def _partition_change(self, offset: int, p: dict) -> "MetadataImage":
        topic, index = _str(p, "topic"), _int(p, "partitionId", 0)
        old = self.partitions.get((topic, index))
        if old is None:
            raise ValueError(f"PartitionChangeRecord: unknown partition {topic}-{index}")
        leader, leader_epoch, pe = _int(p, "leader", NO_LEADER), _int(p, "leaderEpoch"), _int(p, "partitionEpoch")
        if pe != old.partition_epoch + 1:
            raise ValueError(f"PartitionChangeRecord: {topic}-{index} partitionEpoch {pe} does not follow "
                             f"{old.partition_epoch}")
        want = old.leader_epoch + (1 if leader != old.leader else 0)
        if leader_epoch != want:
            raise ValueError(f"PartitionChangeRecord: {topic}-{index} leaderEpoch {leader_epoch} for leader "
                             f"{leader} (was {old.leader} at {old.leader_epoch}); expected {want}")
        new = dataclasses.replace(old, leader_epoch=leader_epoch, partition_epoch=pe)
        new = _checked_isr(new, _ids(p, "isr"), leader, "PartitionChangeRecord")
        return self._with(partitions={**self.partitions, (topic, index): new})

    def _with(self, **changes) -> "MetadataImage":
        return dataclasses.replace(self, **{k: MappingProxyType(v) for k, v in changes.items()})


def _checked_isr(state: PartitionState, isr: tuple[int, ...], leader: int, what: str) -> PartitionState:
    name = f"{state.topic}-{state.partition}"
    if not set(isr) <= set(state.replicas):
        raise ValueError(f"{what}: {name} ISR {list(isr)} is not within replicas {list(state.replicas)}")
    if leader != NO_LEADER and leader not in isr:
        raise ValueError(f"{what}: {name} leader {leader} is not in the ISR {list(isr)}")
    if not isr:     # an offline partition keeps its last ISR member (Kafka)
        raise ValueError(f"{what}: {name} has an empty ISR")
    return dataclasses.replace(state, isr=isr, leader=leader)


_HANDLERS = {
    REGISTER_BROKER: MetadataImage._register,
    FENCE_BROKER: lambda img, off, p: img._fencing(p, True),
    UNFENCE_BROKER: lambda img, off, p: img._fencing(p, False),
    TOPIC: MetadataImage._topic,
    PARTITION: MetadataImage._partition,
    PARTITION_CHANGE: MetadataImage._partition_change,
}

#: The image before any record.
EMPTY = MetadataImage(-1, MappingProxyType({}), MappingProxyType({}), MappingProxyType({}))
