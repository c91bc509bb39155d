"""The wire form of the brokers' replication RPCs (docs/data-plane.md, "Broker RPCs"): request
bodies to the messages of kraft/replication/messages.py (checking every field:
InvalidRequest names the bad one) and back, for the broker adapter (kraft/broker/service.py).
"""
from __future__ import annotations

from ..core import errors
from ..core.records import DATA, Record
from ..core.rpc import field
from ..replication.messages import (ConsumerFetchRequest, ListOffsetsRequest, OffsetForLeaderEpochRequest,
                                    OffsetForLeaderEpochResponse, ProduceRequest, ReplicaFetchRequest,
                                    ReplicaFetchResponse)
from . import api

#: Longest ReplicaFetch long poll accepted (ms).
MAX_WAIT_CAP_MS = 10_000


def _key(b: dict) -> tuple[str, int]:
    return field(b, "Topic", str), field(b, "Partition", int)


def decode_request(api_key: int, b: dict, max_records: int):
    """The message of a broker RPC body (``max_records``: the default MaxRecords). Raises
    InvalidRequest for a bad field, KeyError for another api key."""
    if api_key == api.PRODUCE:
        acks, value = field(b, "Acks", int), field(b, "Value", int)
        return ProduceRequest(_key(b), acks, value, field(b, "TimeoutMs", int, optional=True) or None)
    if api_key == api.CONSUMER_FETCH:
        offset = field(b, "Offset", int)
        return ConsumerFetchRequest(_key(b), offset, field(b, "MaxRecords", int, optional=True) or max_records)
    if api_key == api.LIST_OFFSETS:
        return ListOffsetsRequest(_key(b))
    if api_key == api.OFFSET_FOR_LEADER_EPOCH:
        current, requested = field(b, "CurrentLeaderEpoch", int), field(b, "LeaderEpoch", int)
        return OffsetForLeaderEpochRequest(_key(b), current, requested)
    if api_key == api.REPLICA_FETCH:
        rid, epoch, offset = field(b, "ReplicaId", int), field(b, "LeaderEpoch", int), field(b, "FetchOffset", int)
        n = field(b, "MaxRecords", int, optional=True) or max_records
        max_wait = min(field(b, "MaxWaitMs", int, optional=True) or 0, MAX_WAIT_CAP_MS)
        return ReplicaFetchRequest(_key(b), rid, epoch, offset, n, max_wait)
    raise KeyError(api_key)


def encode_response(api_key: int, msg) -> dict:
    """The wire body of ``msg``, the core's answer to an ``api_key`` request (answers
    NOT_LEADER_OR_FOLLOWER are the adapter's, from its metadata image)."""
    code = msg.error_code
    if code in (errors.FENCED_LEADER_EPOCH, errors.UNKNOWN_LEADER_EPOCH):
        return {"ErrorCode": code, "LeaderEpoch": msg.leader_epoch}
    if code == errors.INVALID_REQUEST:
        return {"ErrorCode": code, "ErrorMessage": msg.message or ""}
    if code == errors.OFFSET_OUT_OF_RANGE:
        return {"ErrorCode": code, "HighWatermark": msg.high_watermark, "LogEndOffset": msg.log_end_offset}
    if api_key == api.PRODUCE:
        return {"ErrorCode": code, "BaseOffset": msg.base_offset, "LeaderEpoch": msg.leader_epoch}
    if api_key == api.REPLICA_FETCH:
        return {"ErrorCode": code, "HighWatermark": msg.high_watermark,
                "Records": [[r.offset, r.epoch, r.payload] for r in msg.records]}
    if api_key == api.CONSUMER_FETCH:
        return {"ErrorCode": code, "HighWatermark": msg.high_watermark,
                "Records": [[r.offset, r.payload] for r in msg.records]}
    if api_key == api.LIST_OFFSETS:
        return {"ErrorCode": code, "HighWatermark": msg.high_watermark, "LogEndOffset": msg.log_end_offset,
                "LogStartOffset": 0}
    return {"ErrorCode": code, "LeaderEpoch": msg.epoch, "EndOffset": msg.end_offset}


def encode_request(msg) -> tuple[int, dict]:
    """``(api key, body)`` of a request a follower sends."""
    key = {"Topic": msg.key[0], "Partition": msg.key[1]}
    if type(msg) is OffsetForLeaderEpochRequest:
        return api.OFFSET_FOR_LEADER_EPOCH, {**key, "CurrentLeaderEpoch": msg.current_leader_epoch,
                                             "LeaderEpoch": msg.leader_epoch}
    return api.REPLICA_FETCH, {**key, "ReplicaId": msg.replica_id, "LeaderEpoch": msg.leader_epoch,
                               "FetchOffset": msg.fetch_offset, "MaxRecords": msg.max_records,
                               "MaxWaitMs": msg.max_wait_ms}


def _int(b: dict, name: str, default: int) -> int:
    v = b.get(name, default)
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def decode_response(request, b: dict):
    """The response message to a follower's ``request`` in body ``b``. A malformed record
    ends the records there (the rest is fetched again)."""
    code = _int(b, "ErrorCode", errors.UNKNOWN_SERVER_ERROR)
    if type(request) is OffsetForLeaderEpochRequest:
        return OffsetForLeaderEpochResponse(code, _int(b, "LeaderEpoch", -1), _int(b, "EndOffset", -1))
    records = []
    for item in b.get("Records") or []:
        if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], int)
                and isinstance(item[1], int)):
            break
        records.append(Record(item[0], item[1], DATA, item[2]))
    hw = b.get("HighWatermark")
    return ReplicaFetchResponse(code, hw if isinstance(hw, int) else None, records, _int(b, "LogEndOffset", -1))
