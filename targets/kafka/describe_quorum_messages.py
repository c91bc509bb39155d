"""DescribeQuorum (api key 55) messages as Apache Kafka's KRaft controllers speak them, standard
library only: the request's encoder, the response's decoder and what it decodes to, and the
errors a request can end in.

From Apache Kafka's message schemas in ``clients/src/main/resources/common/message/``:
``DescribeQuorumRequest.json`` / ``DescribeQuorumResponse.json`` versions 0-2 (KIP-595 v0;
KIP-836 v1 adds LastFetchTimestamp/LastCaughtUpTimestamp; KIP-853 v2 adds ErrorMessage,
ReplicaDirectoryId and the voters' Nodes with their listeners). Every version is flexible:
request header v2, response header v1. The client that sends them:
:mod:`targets.kafka.describe_quorum`.
"""
from __future__ import annotations

import dataclasses
from typing import NamedTuple

from history import outcomes

from .protocol import (NONE, KafkaProtocolError, Reader, Writer, check_version, decode_response_header,
                       encode_request_header, error_name, uuid_str)

DESCRIBE_QUORUM = 55
METADATA_TOPIC, METADATA_PARTITION = "__cluster_metadata", 0
#: DescribeQuorum versions spoken here (inclusive).
DESCRIBE_QUORUM_VERSIONS = (0, 2)


class KafkaClientError(outcomes.ClientError):
    """A request did not yield a sample. ``code``: a Kafka error name (e.g.
    "NOT_LEADER_OR_FOLLOWER", "UNSUPPORTED_VERSION") or "timeout" / "connection" /
    "protocol"; ``error_code``: the numeric Kafka code when the server sent one;
    ``leader_id`` / ``leader_epoch``: a leader hint (Kafka's controllers send none
    for DescribeQuorum, so these stay None). Mirrors ``history.outcomes.ClientError``."""

    def __init__(self, code: str, message: str = "", error_code: int | None = None,
                 leader_id: int | None = None, leader_epoch: int | None = None):
        super().__init__(code, message, leader_id, leader_epoch)
        self.error_code = error_code


class KafkaDefiniteError(KafkaClientError, outcomes.DefiniteError):
    """The node answered with an error code, or no connection was made (Jepsen ``fail``)."""


class KafkaIndefiniteError(KafkaClientError, outcomes.IndefiniteError):
    """Timeout, lost connection, or a malformed reply (``protocol``, chained to the
    :class:`~targets.kafka.protocol.KafkaProtocolError`) after sending (Jepsen ``info``)."""


class ReplicaState(NamedTuple):
    """One voter or observer as the leader sees it (DescribeQuorumResponse ReplicaState).

    ``directory_id``: Kafka's text UUID (v2+, None before v2 or when unset);
    ``log_end_offset``: records, -1 unknown; ``last_fetch_ms`` /
    ``last_caught_up_ms``: leader wall-clock ms since the epoch (v1+; -1 unknown
    or before v1)."""

    replica_id: int
    directory_id: str | None
    log_end_offset: int
    last_fetch_ms: int
    last_caught_up_ms: int


class Listener(NamedTuple):
    """A controller endpoint from DescribeQuorum v2 Nodes: listener ``name``, ``host``, ``port``."""

    name: str
    host: str
    port: int


@dataclasses.dataclass(frozen=True)
class PartitionQuorum:
    """One PartitionData of a DescribeQuorum response, error or not."""

    topic: str
    partition: int
    error_code: int
    error_message: str | None
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[ReplicaState, ...]
    observers: tuple[ReplicaState, ...]


@dataclasses.dataclass(frozen=True)
class QuorumSample:
    """The active controller's view of the metadata quorum.

    ``leader_id`` (node id), ``leader_epoch``, ``high_watermark`` (offset, -1
    unknown); ``voters`` / ``observers``: :class:`ReplicaState` tuples;
    ``nodes``: v2's {node id: (Listener, ...)} for the voters, None before v2;
    ``version``: the DescribeQuorum version used.
    """

    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[ReplicaState, ...]
    observers: tuple[ReplicaState, ...]
    nodes: dict[int, tuple[Listener, ...]] | None
    version: int

    def to_body(self) -> dict:
        """The sample in the response-body shape ``workloads/monitor.py`` reads
        (``LeaderId``, ``LeaderEpoch``, ``HighWatermark``, ``CurrentVoters``: [{``ReplicaId``,
        ``ReplicaDirectoryId``, ``LogEndOffset``, ``LastFetchTimestamp``,
        ``LastCaughtUpTimestamp``}], ``Observers``, and ``Nodes`` from v2)."""
        def rs(r: ReplicaState) -> dict:
            return {"ReplicaId": r.replica_id, "ReplicaDirectoryId": r.directory_id,
                    "LogEndOffset": r.log_end_offset, "LastFetchTimestamp": r.last_fetch_ms,
                    "LastCaughtUpTimestamp": r.last_caught_up_ms}
        body = {"ErrorCode": NONE, "LeaderId": self.leader_id, "LeaderEpoch": self.leader_epoch,
                "HighWatermark": self.high_watermark, "CurrentVoters": [rs(v) for v in self.voters],
                "Observers": [rs(o) for o in self.observers]}
        if self.nodes is not None:
            body["Nodes"] = [{"NodeId": n, "Listeners": [{"Name": l.name, "Host": l.host, "Port": l.port} for l in ls]}
                             for n, ls in self.nodes.items()]
        return body


@dataclasses.dataclass(frozen=True)
class DescribeQuorumResponse:
    """A decoded DescribeQuorumResponse: top-level ``error_code`` / ``error_message``
    (v2+), ``partitions``, ``nodes`` (v2+, else None), plus header ``correlation_id``."""

    correlation_id: int
    version: int
    error_code: int
    error_message: str | None
    partitions: tuple[PartitionQuorum, ...]
    nodes: dict[int, tuple[Listener, ...]] | None

    def sample(self, topic: str = METADATA_TOPIC, partition: int = METADATA_PARTITION) -> QuorumSample:
        """The :class:`QuorumSample` for ``topic``/``partition``. Raises
        :class:`KafkaDefiniteError` for a top-level or partition error code and
        :class:`KafkaProtocolError` when the partition is absent."""
        if self.error_code != NONE:
            raise KafkaDefiniteError(error_name(self.error_code), self.error_message or "", self.error_code)
        for p in self.partitions:
            if (p.topic, p.partition) == (topic, partition):
                if p.error_code != NONE:
                    raise KafkaDefiniteError(error_name(p.error_code), p.error_message or "", p.error_code)
                return QuorumSample(p.leader_id, p.leader_epoch, p.high_watermark, p.voters,
                                    p.observers, self.nodes, self.version)
        raise KafkaProtocolError(f"DescribeQuorumResponse v{self.version}: no partition {topic}-{partition} "
                                 f"in the answer ({[(p.topic, p.partition) for p in self.partitions]})")


def encode_describe_quorum_request(version: int, correlation_id: int, client_id: str | None = "kraft-chaos",
                                   topic: str = METADATA_TOPIC, partition: int = METADATA_PARTITION) -> bytes:
    """DescribeQuorumRequest ``version`` (0-2; the body is the same in all) for one
    partition, with request header v2, unframed."""
    check_version("DescribeQuorum", version, DESCRIBE_QUORUM_VERSIONS)
    w = Writer()
    w.buf += encode_request_header(DESCRIBE_QUORUM, version, correlation_id, client_id, 2)
    w.compact_array([topic], lambda w, t: w.compact_string(t).compact_array(
        [partition], lambda w, p: w.int32(p).tagged_fields()).tagged_fields())
    return w.tagged_fields().bytes()


def decode_describe_quorum_response(payload: bytes, version: int) -> DescribeQuorumResponse:
    """Decode a DescribeQuorumResponse frame payload (header v1 + body) of ``version``
    (0-2). Raises :class:`KafkaProtocolError` naming the field when malformed."""
    check_version("DescribeQuorum", version, DESCRIBE_QUORUM_VERSIONS)
    r = Reader(payload, context=f"DescribeQuorumResponse v{version}")
    cid = decode_response_header(r, 1)

    def replica(rr: Reader) -> ReplicaState:
        rid = rr.int32("ReplicaId")
        did = uuid_str(rr.uuid("ReplicaDirectoryId")) if version >= 2 else None
        leo = rr.int64("LogEndOffset")
        fetch, caught = (rr.int64("LastFetchTimestamp"), rr.int64("LastCaughtUpTimestamp")) \
            if version >= 1 else (-1, -1)
        rr.tagged_fields("ReplicaState tagged fields")
        return ReplicaState(rid, did, leo, fetch, caught)

    def partition(rr: Reader, topic: str) -> PartitionQuorum:
        idx, err = rr.int32("PartitionIndex"), rr.int16("partition ErrorCode")
        msg = rr.compact_string("partition ErrorMessage", nullable=True) if version >= 2 else None
        leader, epoch, hw = rr.int32("LeaderId"), rr.int32("LeaderEpoch"), rr.int64("HighWatermark")
        voters = rr.compact_array(replica, "CurrentVoters")
        observers = rr.compact_array(replica, "Observers")
        rr.tagged_fields("PartitionData tagged fields")
        return PartitionQuorum(topic, idx, err, msg, leader, epoch, hw, tuple(voters), tuple(observers))

    def topic(rr: Reader) -> list[PartitionQuorum]:
        name = rr.compact_string("TopicName")
        parts = rr.compact_array(lambda r2: partition(r2, name), "Partitions")
        rr.tagged_fields("TopicData tagged fields")
        return parts

    def listener(rr: Reader) -> Listener:
        out = Listener(rr.compact_string("Listener Name"), rr.compact_string("Listener Host"),
                       rr.uint16("Listener Port"))
        rr.tagged_fields("Listener tagged fields")
        return out

    def node(rr: Reader) -> tuple[int, tuple[Listener, ...]]:
        nid, ls = rr.int32("NodeId"), tuple(rr.compact_array(listener, "Listeners"))
        rr.tagged_fields("Node tagged fields")
        return nid, ls

    err = r.int16("ErrorCode")
    msg = r.compact_string("ErrorMessage", nullable=True) if version >= 2 else None
    parts = tuple(p for t in r.compact_array(topic, "Topics") for p in t)
    nodes = dict(r.compact_array(node, "Nodes")) if version >= 2 else None
    r.tagged_fields()
    r.expect_end()
    return DescribeQuorumResponse(cid, version, err, msg, parts, nodes)
