"""The broker's RPCs (docs/data-plane.md, "Broker RPCs"): Produce (0), ListOffsets (2),
Metadata (3), CreateTopics (19, forwarded to the active controller),
OffsetForLeaderEpoch (23), ConsumerFetch (1100) and ReplicaFetch (1101).

Sources: Kafka 0.8's replication design (``on_ReplicaFetchRequest``; a consumer reads
below the high watermark only, and between the high watermark and the log end offset
gets an empty set), KIP-101 (OffsetForLeaderEpoch), Kafka's Produce (acks,
``min.insync.replicas``; kraft/produce.py).

Only the partition's leader answers Produce, ListOffsets, ConsumerFetch, ReplicaFetch
and OffsetForLeaderEpoch; others answer NOT_LEADER_OR_FOLLOWER with ``LeaderId`` (the
partition's leader in this broker's image, -1 if none) and ``LeaderEpoch``. A missing
or mistyped field is INVALID_REQUEST.
"""
from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from . import api, errors, produce
from .client import ClientError, DefiniteError
from .partition import LEADER, PartitionReplica
from .rpc import InvalidRequest, field
from .truncation import leader_epoch_answer

if TYPE_CHECKING:
    from .broker import BrokerService

#: Longest ReplicaFetch long poll accepted (ms).
MAX_WAIT_CAP_MS = 10_000


class Refusal(Exception):
    """A request answered with an error body (``body``)."""

    def __init__(self, body: dict):
        super().__init__(errors.name(body.get("ErrorCode", -1)))
        self.body = body


def _now_ms() -> float:
    return time.monotonic() * 1000.0


class BrokerApi:
    """The handlers, over ``service``'s partitions and metadata image."""

    def __init__(self, service: "BrokerService"):
        self.service = service

    def handlers(self) -> dict:
        """``{api key: async handler(body) -> response body}`` for kraft/server.py."""
        return {api.PRODUCE: self._guard(self.produce), api.LIST_OFFSETS: self._guard(self.list_offsets),
                api.METADATA: self.metadata, api.CREATE_TOPICS: self.create_topics,
                api.OFFSET_FOR_LEADER_EPOCH: self._guard(self.offset_for_leader_epoch),
                api.CONSUMER_FETCH: self._guard(self.consumer_fetch),
                api.REPLICA_FETCH: self._guard(self.replica_fetch)}

    @staticmethod
    def _guard(handler):
        async def run(body: dict) -> dict:
            try:
                return await handler(body)
            except Refusal as e:
                return e.body
        return run

    # -- lookups ----------------------------------------------------------------------
    def _partition(self, body: dict) -> tuple[PartitionReplica | None, object]:
        topic, index = field(body, "Topic", str), field(body, "Partition", int)
        state = self.service.image.partitions.get((topic, index))
        if state is None:
            raise Refusal({"ErrorCode": errors.UNKNOWN_TOPIC_OR_PARTITION,
                           "ErrorMessage": f"{topic}-{index} is not in this broker's metadata"})
        return self.service.partitions.get((topic, index)), state

    def _leader(self, body: dict) -> PartitionReplica:
        """The partition, if this broker leads it; else raises Refusal NOT_LEADER_OR_FOLLOWER."""
        replica, state = self._partition(body)
        if replica is None or replica.role != LEADER:
            raise Refusal({"ErrorCode": errors.NOT_LEADER_OR_FOLLOWER, "LeaderId": state.leader,
                           "LeaderEpoch": state.leader_epoch,
                           "ErrorMessage": f"broker {self.service.broker_id} does not lead "
                                           f"{state.topic}-{state.partition}"})
        return replica

    @staticmethod
    def _epoch_check(replica: PartitionReplica, epoch: int) -> None:
        if epoch < replica.leader_epoch:
            raise Refusal({"ErrorCode": errors.FENCED_LEADER_EPOCH, "LeaderEpoch": replica.leader_epoch})
        if epoch > replica.leader_epoch:
            raise Refusal({"ErrorCode": errors.UNKNOWN_LEADER_EPOCH, "LeaderEpoch": replica.leader_epoch})

    # -- client RPCs --------------------------------------------------------------------
    async def produce(self, body: dict) -> dict:
        """Produce ``{"Topic", "Partition", "Acks", "Value": int, "TimeoutMs"?}`` ->
        ``{"ErrorCode", "BaseOffset", "LeaderEpoch"}`` (kraft/produce.py; BaseOffset -1 at
        acks=0). REQUEST_TIMED_OUT after ``TimeoutMs`` (default the node's request timeout)
        or when leadership is lost with the record appended."""
        acks = field(body, "Acks", int)
        value = field(body, "Value", int)
        timeout_ms = field(body, "TimeoutMs", int, optional=True) or self.service.cfg.request_timeout_ms
        replica = self._leader(body)
        code = produce.check_append(acks, len(replica.isr), replica.min_insync)
        if code != errors.NONE:
            return {"ErrorCode": code, "BaseOffset": -1, "LeaderEpoch": replica.leader_epoch}
        epoch = replica.leader_epoch
        offset = replica.append(value)
        self.service.schedule_flush(replica)
        if acks == 0:
            return {"ErrorCode": errors.NONE, "BaseOffset": -1, "LeaderEpoch": epoch}
        fut = replica.wait_produce(offset, acks)
        try:
            code = await asyncio.wait_for(fut, timeout_ms / 1000.0)
        except TimeoutError:
            code = errors.REQUEST_TIMED_OUT
        return {"ErrorCode": code, "BaseOffset": offset, "LeaderEpoch": epoch}

    async def consumer_fetch(self, body: dict) -> dict:
        """ConsumerFetch ``{"Topic", "Partition", "Offset", "MaxRecords"}`` ->
        ``{"ErrorCode", "HighWatermark", "Records": [[offset, value], ...]}``: records below
        the high watermark only; OFFSET_OUT_OF_RANGE before 0 or past the log end."""
        offset = field(body, "Offset", int)
        max_records = field(body, "MaxRecords", int, optional=True) or self.service.cfg.fetch_max_records
        replica = self._leader(body)
        if offset < 0 or offset > replica.log.end_offset:
            return {"ErrorCode": errors.OFFSET_OUT_OF_RANGE, "HighWatermark": replica.hw,
                    "LogEndOffset": replica.log.end_offset}
        recs = replica.log.read(offset, replica.hw, max(1, max_records))
        return {"ErrorCode": errors.NONE, "HighWatermark": replica.hw,
                "Records": [[r.offset, r.payload] for r in recs]}

    async def list_offsets(self, body: dict) -> dict:
        """ListOffsets -> ``{"ErrorCode", "HighWatermark", "LogEndOffset", "LogStartOffset"}``."""
        replica = self._leader(body)
        return {"ErrorCode": errors.NONE, "HighWatermark": replica.hw,
                "LogEndOffset": replica.log.end_offset, "LogStartOffset": 0}

    async def metadata(self, body: dict) -> dict:
        """Metadata -> brokers and topics from this broker's image (docs/data-plane.md)."""
        image = self.service.image
        brokers = [{"Id": b.id, "Host": b.host, "Port": b.port, "Fenced": b.fenced}
                   for b in sorted(image.brokers.values(), key=lambda b: b.id)]
        topics = [{"Name": name, "Partitions": [
            {"Index": p.partition, "Leader": p.leader, "LeaderEpoch": p.leader_epoch,
             "Isr": list(p.isr), "Replicas": list(p.replicas)} for p in image.topic_partitions(name)]}
            for name in sorted(image.topics)]
        return {"ErrorCode": errors.NONE, "Brokers": brokers, "Topics": topics,
                "MetadataOffset": image.offset}

    async def create_topics(self, body: dict) -> dict:
        """CreateTopics: forwarded to the active controller; its answer is returned. When no
        controller answers, every topic gets NOT_CONTROLLER (certainly not sent) or
        REQUEST_TIMED_OUT (maybe sent)."""
        topics = field(body, "Topics", list)
        fwd = {k: v for k, v in body.items() if k != "ClusterId"}
        try:
            return await self.service.channel.request(api.CREATE_TOPICS, fwd,
                                                      self.service.cfg.request_timeout_ms / 1000.0)
        except ClientError as e:
            code = errors.NOT_CONTROLLER if isinstance(e, DefiniteError) else errors.REQUEST_TIMED_OUT
            names = [t.get("Name") for t in topics if isinstance(t, dict)]
            return {"ErrorCode": errors.NONE, "Topics": [{"Name": n, "ErrorCode": code,
                                                          "ErrorMessage": str(e)} for n in names]}

    # -- replication RPCs ---------------------------------------------------------------
    async def offset_for_leader_epoch(self, body: dict) -> dict:
        """OffsetForLeaderEpoch (KIP-101) ``{"Topic", "Partition", "CurrentLeaderEpoch",
        "LeaderEpoch"}`` -> ``{"ErrorCode", "LeaderEpoch", "EndOffset"}``: the largest epoch
        <= LeaderEpoch in the leader's log and its end offset (kraft/truncation.py)."""
        current = field(body, "CurrentLeaderEpoch", int)
        requested = field(body, "LeaderEpoch", int)
        replica = self._leader(body)
        self._epoch_check(replica, current)
        epoch, end = leader_epoch_answer(replica.log, requested)
        return {"ErrorCode": errors.NONE, "LeaderEpoch": epoch, "EndOffset": end}

    async def replica_fetch(self, body: dict) -> dict:
        """ReplicaFetch ``{"ReplicaId", "Topic", "Partition", "LeaderEpoch", "FetchOffset",
        "MaxRecords", "MaxWaitMs"?}`` -> ``{"ErrorCode", "HighWatermark", "Records":
        [[offset, leaderEpoch, value], ...]}``.

        FetchOffset is the follower's log end offset (0.8): it advances the high
        watermark. With nothing to send the leader waits up to MaxWaitMs for a new record
        or high watermark. A FetchOffset past the log end is OFFSET_OUT_OF_RANGE with
        ``LogEndOffset``.
        """
        rid = field(body, "ReplicaId", int)
        epoch = field(body, "LeaderEpoch", int)
        offset = field(body, "FetchOffset", int)
        max_records = field(body, "MaxRecords", int, optional=True) or self.service.cfg.fetch_max_records
        max_wait = min(field(body, "MaxWaitMs", int, optional=True) or 0, MAX_WAIT_CAP_MS)
        replica = self._leader(body)
        self._epoch_check(replica, epoch)
        if rid not in replica.replicas or rid == self.service.broker_id:
            raise InvalidRequest(f"ReplicaId {rid} is not a follower of {replica.name}")
        if offset < 0 or offset > replica.log.end_offset:
            return {"ErrorCode": errors.OFFSET_OUT_OF_RANGE, "HighWatermark": replica.hw,
                    "LogEndOffset": replica.log.end_offset}
        replica.on_replica_fetch(rid, offset, _now_ms())
        self.service.maybe_alter_isr(replica)
        gen, hw_seen = replica.generation, replica.hw
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_wait / 1000.0
        while replica.generation == gen and offset >= replica.log.end_offset and replica.hw == hw_seen:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            try:
                await asyncio.wait_for(replica.changed().wait(), remaining)
            except TimeoutError:
                break
        if replica.generation != gen or replica.role != LEADER:
            return {"ErrorCode": errors.NOT_LEADER_OR_FOLLOWER, "LeaderEpoch": replica.leader_epoch}
        recs = replica.log.read(offset, replica.log.end_offset, max(1, max_records))
        return {"ErrorCode": errors.NONE, "HighWatermark": replica.hw,
                "Records": [[r.offset, r.epoch, r.payload] for r in recs]}
