"""The partition replication of the brokers as plain objects (docs/data-plane.md, "Broker
RPCs"; Kafka 0.8's replication design, KIP-101): the RPCs a broker's core serves and
sends, and the commands and answers it takes from the controller side.

A partition is named by its key ``(topic, partition)``. Every response has
``error_code`` (kraft/core/errors.py) and, for an error, ``message``; the core fills in
``leader_id`` / ``leader_epoch`` of NOT_LEADER_OR_FOLLOWER answers with what it knows
(the adapter replaces them with its metadata image's). kraft/wire/broker_codec.py maps all
of them to the wire.
"""
from __future__ import annotations

import dataclasses

from ..core.records import Record

Key = tuple   # (topic, partition)


# -- commands from the controller side (events) -----------------------------------------------
@dataclasses.dataclass(slots=True)
class LeaderAndIsr:
    """The partition ``key`` as the committed metadata has it (Kafka 0.8's LeaderAndISR
    command): ``leader`` (-1: none), ``leader_epoch``, ``partition_epoch``, ``isr`` and
    ``replicas`` (broker ids), and the topic's ``min_insync`` (min.insync.replicas). The
    core makes its replica leader, follower or offline accordingly; the partition must
    have been added (:meth:`kraft.replication.BrokerCore.add_partition`) if this broker is
    one of its replicas."""

    key: Key
    leader: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple
    replicas: tuple
    min_insync: int = 1


@dataclasses.dataclass(slots=True)
class ClusterView:
    """What the broker knows of the cluster for ISR changes: ``registered`` (it has a broker
    epoch, so it may send AlterPartition) and ``unfenced`` (broker ids that may join an
    ISR; None: all)."""

    registered: bool = True
    unfenced: frozenset | None = None


@dataclasses.dataclass(slots=True)
class IsrAnswer:
    """The controller's answer to a :class:`kraft.core.events.ProposeIsr` (AlterPartition) for
    ``key`` with ``isr`` at ``partition_epoch``: ``error_code`` NONE (the ISR changes when
    the new LeaderAndIsr arrives) or the refusal."""

    key: Key
    isr: tuple
    partition_epoch: int
    error_code: int


# -- RPCs ---------------------------------------------------------------------------------------
@dataclasses.dataclass(slots=True)
class ProduceRequest:
    """Produce (0) ``value`` to ``key`` with ``acks`` (0, 1, -1) within ``timeout_ms`` (None:
    the request timeout)."""

    key: Key
    acks: int
    value: object
    timeout_ms: int | None = None


@dataclasses.dataclass(slots=True)
class ProduceResponse:
    """``base_offset`` of the record (-1 at acks=0 or when refused) in ``leader_epoch``."""

    error_code: int
    base_offset: int = -1
    leader_epoch: int = -1
    message: str | None = None
    leader_id: int = -1


@dataclasses.dataclass(slots=True)
class ReplicaFetchRequest:
    """ReplicaFetch (1101) by follower ``replica_id`` from ``fetch_offset`` (its log end
    offset) in ``leader_epoch``, at most ``max_records``, parked up to ``max_wait_ms``."""

    key: Key
    replica_id: int
    leader_epoch: int
    fetch_offset: int
    max_records: int
    max_wait_ms: int = 0


@dataclasses.dataclass(slots=True)
class ReplicaFetchResponse:
    """``records`` (kraft.core.records.Record, from the fetch offset on) and the
    ``high_watermark``; OFFSET_OUT_OF_RANGE carries the leader's ``log_end_offset``."""

    error_code: int
    high_watermark: int = 0
    records: list[Record] = dataclasses.field(default_factory=list)
    log_end_offset: int = -1
    message: str | None = None
    leader_id: int = -1
    leader_epoch: int = -1


@dataclasses.dataclass(slots=True)
class ConsumerFetchRequest:
    """ConsumerFetch (1100) from ``offset``, at most ``max_records``: records below the
    high watermark only."""

    key: Key
    offset: int
    max_records: int


@dataclasses.dataclass(slots=True)
class ListOffsetsRequest:
    """ListOffsets (2) of ``key``."""

    key: Key


@dataclasses.dataclass(slots=True)
class OffsetsResponse:
    """ConsumerFetch and ListOffsets answers: ``high_watermark``, ``log_end_offset``,
    ``records`` (ConsumerFetch)."""

    error_code: int
    high_watermark: int = 0
    log_end_offset: int = 0
    records: list[Record] = dataclasses.field(default_factory=list)
    message: str | None = None
    leader_id: int = -1
    leader_epoch: int = -1


@dataclasses.dataclass(slots=True)
class OffsetForLeaderEpochRequest:
    """OffsetForLeaderEpoch (23, KIP-101): the end offset of ``leader_epoch`` in the leader's
    log, asked by a replica that knows ``current_leader_epoch``."""

    key: Key
    current_leader_epoch: int
    leader_epoch: int


@dataclasses.dataclass(slots=True)
class OffsetForLeaderEpochResponse:
    """``epoch`` (the largest <= the one asked for) and its ``end_offset``."""

    error_code: int
    epoch: int = -1
    end_offset: int = -1
    message: str | None = None
    leader_id: int = -1
    leader_epoch: int = -1
