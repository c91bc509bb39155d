"""The wire form of the controller RPCs (docs/data-plane.md; KIP-631, KIP-497): request bodies
to the messages of kraft/controller/messages.py (checking every field: InvalidRequest names
the bad one) and responses back, for the controller's adapter (kraft/controller/service.py);
and the other way round for the broker's side (kraft/broker/service.py).

The bodies carry no LeaderId / LeaderEpoch of their own: the server adds the node's
(kraft/node/server.py), and a broker reads the hint from them.
"""
from __future__ import annotations

from ..core import errors
from ..core.rpc import InvalidRequest, field
from ..wire import api
from .messages import (AlterPartitionRequest, AlterPartitionResponse, BrokerHeartbeatRequest, BrokerHeartbeatResponse,
                       BrokerRegistrationRequest, BrokerRegistrationResponse, CreateTopicsRequest,
                       CreateTopicsResponse, IsrChange, NewTopic, PartitionResult, TopicResult)

#: api key by request type
API_KEYS = {BrokerRegistrationRequest: api.BROKER_REGISTRATION, BrokerHeartbeatRequest: api.BROKER_HEARTBEAT,
            CreateTopicsRequest: api.CREATE_TOPICS, AlterPartitionRequest: api.ALTER_PARTITION}


def _objects(body: dict, name: str) -> list[dict]:
    items = field(body, name, list)
    if any(not isinstance(x, dict) for x in items):
        raise InvalidRequest(f"each of {name} must be an object")
    return items


def decode_request(api_key: int, b: dict):
    """The message of a controller RPC body. Raises InvalidRequest for a bad field, KeyError
    for another api key."""
    if api_key == api.BROKER_REGISTRATION:
        bid, host = field(b, "BrokerId", int), field(b, "Host", str)
        port, inc = field(b, "Port", int), field(b, "IncarnationId", str)
        if bid < 0 or not host or not inc or not 0 < port < 65536:
            raise InvalidRequest("BrokerId, Host, Port or IncarnationId out of range")
        return BrokerRegistrationRequest(bid, host, port, inc)
    if api_key == api.BROKER_HEARTBEAT:
        return BrokerHeartbeatRequest(field(b, "BrokerId", int), field(b, "BrokerEpoch", int),
                                      field(b, "CurrentMetadataOffset", int))
    if api_key == api.CREATE_TOPICS:
        topics = []
        for t in _objects(b, "Topics"):
            name, parts = field(t, "Name", str), field(t, "NumPartitions", int)
            rf, configs = field(t, "ReplicationFactor", int), field(t, "Configs", dict, optional=True) or {}
            topics.append(NewTopic(name, parts, rf, tuple(configs.items())))
        return CreateTopicsRequest(tuple(topics))
    if api_key == api.ALTER_PARTITION:
        bid, epoch = field(b, "BrokerId", int), field(b, "BrokerEpoch", int)
        changes = []
        for t in _objects(b, "Topics"):
            name = field(t, "Name", str)
            for p in _objects(t, "Partitions"):
                isr = field(p, "NewIsr", list)
                if any(type(x) is not int for x in isr):
                    raise InvalidRequest("NewIsr must be a list of broker ids")
                changes.append(IsrChange(name, field(p, "PartitionIndex", int), field(p, "LeaderEpoch", int),
                                         field(p, "PartitionEpoch", int), tuple(isr)))
        return AlterPartitionRequest(bid, epoch, tuple(changes))
    raise KeyError(api_key)


def _error(msg) -> dict:
    out = {"ErrorCode": msg.error_code}
    if msg.message:
        out["ErrorMessage"] = msg.message
    return out


def encode_response(msg) -> dict:
    """The wire body of a controller core's response ``msg``."""
    out = _error(msg)
    t = type(msg)
    if t is BrokerRegistrationResponse:
        if msg.error_code == errors.NONE:
            out["BrokerEpoch"] = msg.broker_epoch
    elif t is BrokerHeartbeatResponse:
        if msg.error_code == errors.NONE:
            out["IsFenced"] = msg.is_fenced
    elif t is CreateTopicsResponse:
        out["Topics"] = [{"Name": r.name, "ErrorCode": r.error_code,
                          **({"ErrorMessage": r.message} if r.message else {})} for r in msg.topics]
    else:
        by_topic: dict[str, list] = {}
        for r in msg.partitions:
            entry = {"PartitionIndex": r.index, "ErrorCode": r.error_code}
            if r.isr is not None:
                entry.update(LeaderId=r.leader, LeaderEpoch=r.leader_epoch, PartitionEpoch=r.partition_epoch,
                             Isr=list(r.isr))
            by_topic.setdefault(r.topic, []).append(entry)
        out["Topics"] = [{"Name": n, "Partitions": ps} for n, ps in by_topic.items()]
    return out


# -- the broker's side ---------------------------------------------------------------------------------
def encode_request(msg) -> tuple[int, dict]:
    """``(api key, body)`` of a request to the controller."""
    t = type(msg)
    if t is BrokerRegistrationRequest:
        body = {"BrokerId": msg.broker_id, "Host": msg.host, "Port": msg.port, "IncarnationId": msg.incarnation_id}
    elif t is BrokerHeartbeatRequest:
        body = {"BrokerId": msg.broker_id, "BrokerEpoch": msg.broker_epoch,
                "CurrentMetadataOffset": msg.metadata_offset}
    elif t is CreateTopicsRequest:
        body = {"Topics": [{"Name": x.name, "NumPartitions": x.partitions, "ReplicationFactor": x.replication_factor,
                            "Configs": dict(x.configs)} for x in msg.topics]}
    else:
        topics: dict[str, list] = {}
        for c in msg.changes:
            topics.setdefault(c.topic, []).append({"PartitionIndex": c.index, "LeaderEpoch": c.leader_epoch,
                                                   "PartitionEpoch": c.partition_epoch, "NewIsr": list(c.new_isr)})
        body = {"BrokerId": msg.broker_id, "BrokerEpoch": msg.broker_epoch,
                "Topics": [{"Name": n, "Partitions": ps} for n, ps in topics.items()]}
    return API_KEYS[t], body


def _int(b: dict, name: str, default: int) -> int:
    v = b.get(name, default)
    return v if type(v) is int else default


def decode_response(request, b: dict):
    """The response message of body ``b`` to ``request`` (lenient: a missing or mistyped
    field takes its default; a missing ErrorCode is UNKNOWN_SERVER_ERROR)."""
    code = _int(b, "ErrorCode", errors.UNKNOWN_SERVER_ERROR)
    message = b.get("ErrorMessage") if isinstance(b.get("ErrorMessage"), str) else None
    hint = dict(leader_id=_int(b, "LeaderId", -1), leader_epoch=_int(b, "LeaderEpoch", -1))
    t = type(request)
    if t is BrokerRegistrationRequest:
        return BrokerRegistrationResponse(code, _int(b, "BrokerEpoch", -1), message, **hint)
    if t is BrokerHeartbeatRequest:
        return BrokerHeartbeatResponse(code, bool(b.get("IsFenced", True)), message, **hint)
    if t is CreateTopicsRequest:
        topics = [TopicResult(x.get("Name"), _int(x, "ErrorCode", errors.UNKNOWN_SERVER_ERROR), x.get("ErrorMessage"))
                  for x in b.get("Topics") or [] if isinstance(x, dict)]
        return CreateTopicsResponse(code, topics, message, **hint)
    parts = []
    for x in b.get("Topics") or []:
        for p in (x.get("Partitions") or []) if isinstance(x, dict) else []:
            if isinstance(p, dict):
                isr = p.get("Isr")
                parts.append(PartitionResult(x.get("Name"), _int(p, "PartitionIndex", -1),
                                             _int(p, "ErrorCode", errors.UNKNOWN_SERVER_ERROR), _int(p, "LeaderId", -1),
                                             _int(p, "LeaderEpoch", -1), _int(p, "PartitionEpoch", -1),
                                             tuple(isr) if isinstance(isr, list) else None))
    return AlterPartitionResponse(code, parts, message, **hint)
