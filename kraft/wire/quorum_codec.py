"""The wire form of the quorum's messages (kraft/README.md, "Wire format"): request bodies to
message objects (checking every field: InvalidRequest names the bad one) and back, for
the asyncio adapter (kraft/runtime/raft.py). The cores never see a dict.
"""
from __future__ import annotations

from ..core import errors
from ..core.records import Record, check_payload
from ..core.rpc import InvalidRequest, field
from ..quorum.client_messages import (AddVoterRequest, AppendRequest, AppendResponse, DescribeQuorumRequest,
                                      DescribeQuorumResponse, KvGetRequest, KvGetResponse, KvWriteRequest,
                                      KvWriteResponse, ReadRequest, ReadResponse, RemoveVoterRequest,
                                      UpdateVoterRequest, VoterChangeResponse)
from ..quorum.messages import (BeginQuorumEpochRequest, EndQuorumEpochRequest, EpochResponse, FetchRequest,
                               FetchResponse, VoteRequest, VoteResponse)
from ..rules.voter_set import MAX_KRAFT_VERSION, MIN_KRAFT_VERSION, ReplicaKey, VoterNode, endpoint_of
from ..state_machines.kv import CommandError, check_key, command
from . import api

#: Longest Fetch long poll accepted (ms).
MAX_WAIT_CAP_MS = 10_000


def _str_or_none(v: object) -> str | None:
    return v if isinstance(v, str) else None


def _payload(value: object) -> object:
    try:
        check_payload(value)
    except ValueError as e:
        raise InvalidRequest(str(e)) from None
    return value


# -- requests in ------------------------------------------------------------------------
def _fetch(b: dict) -> FetchRequest:
    offset, last_epoch, epoch = field(b, "FetchOffset", int), field(b, "LastFetchedEpoch", int), \
        field(b, "ReplicaEpoch", int)
    rid = field(b, "ReplicaId", int)
    max_wait = min(field(b, "MaxWaitMs", int, optional=True) or 0, MAX_WAIT_CAP_MS)
    echoed = field(b, "ReadRound", int, optional=True) or 0
    if offset < 0 or last_epoch < 0 or last_epoch > epoch:
        raise InvalidRequest(f"FetchOffset {offset} / LastFetchedEpoch {last_epoch} out of range")
    return FetchRequest(rid, _str_or_none(b.get("ReplicaDirectoryId")), epoch, offset, last_epoch, max_wait, echoed)


def _vote(b: dict) -> VoteRequest:
    return VoteRequest(field(b, "CandidateEpoch", int), field(b, "CandidateId", int),
                       _str_or_none(b.get("CandidateDirectoryId")), b.get("VoterId"), b.get("VoterDirectoryId"),
                       field(b, "LastOffsetEpoch", int), field(b, "LastOffset", int),
                       bool(field(b, "PreVote", bool, optional=True)))


def _begin(b: dict) -> BeginQuorumEpochRequest:
    return BeginQuorumEpochRequest(field(b, "LeaderId", int), field(b, "LeaderEpoch", int), b.get("VoterId"),
                                   b.get("VoterDirectoryId"))


def _end(b: dict) -> EndQuorumEpochRequest:
    return EndQuorumEpochRequest(b.get("ReplicaId"), field(b, "LeaderId", int), field(b, "LeaderEpoch", int),
                                 field(b, "PreferredSuccessors", list))


def _append(b: dict) -> AppendRequest:
    if "Value" not in b:
        raise InvalidRequest("missing field Value")
    return AppendRequest(_payload(b["Value"]))


def _read(b: dict) -> ReadRequest:
    start = field(b, "FromOffset", int)
    if start < 0:
        raise InvalidRequest(f"FromOffset {start} is negative")
    return ReadRequest(start, field(b, "MaxRecords", int, optional=True), b.get("Linearizable", True) is not False)


def _kv_write(b: dict) -> KvWriteRequest:
    try:
        cmd = command(b.get("Op"), b)
        if "Value" not in b:
            raise CommandError("missing field Value")
    except CommandError as e:
        raise InvalidRequest(str(e)) from None
    return KvWriteRequest(cmd)


def _kv_get(b: dict) -> KvGetRequest:
    try:
        return KvGetRequest(check_key(b.get("Key")))
    except CommandError as e:
        raise InvalidRequest(str(e)) from None


def _voter_node(b: dict) -> VoterNode:
    vid, vdir = field(b, "VoterId", int), field(b, "VoterDirectoryId", str)
    try:
        host, port = endpoint_of(field(b, "Listeners", list))
    except ValueError as e:
        raise InvalidRequest(f"Listeners: {e}") from None
    return VoterNode(vid, vdir, host, port)


def _add_voter(b: dict) -> AddVoterRequest:
    node = _voter_node(b)
    return AddVoterRequest(node, field(b, "TimeoutMs", int, optional=True), b.get("AckWhenCommitted", True) is not False)


def _remove_voter(b: dict) -> RemoveVoterRequest:
    return RemoveVoterRequest(ReplicaKey(field(b, "VoterId", int), field(b, "VoterDirectoryId", str)))


def _update_voter(b: dict) -> UpdateVoterRequest:
    node = _voter_node(b)
    epoch = field(b, "CurrentLeaderEpoch", int)
    feature = field(b, "KRaftVersionFeature", dict, optional=True) or {}
    return UpdateVoterRequest(epoch, node, feature.get("MinSupportedVersion", MIN_KRAFT_VERSION),
                              feature.get("MaxSupportedVersion", MAX_KRAFT_VERSION))


#: Api key -> decoder of a request body the quorum core serves.
DECODERS = {api.FETCH: _fetch, api.VOTE: _vote, api.BEGIN_QUORUM_EPOCH: _begin, api.END_QUORUM_EPOCH: _end,
            api.DESCRIBE_QUORUM: lambda b: DescribeQuorumRequest(), api.APPEND: _append, api.READ: _read,
            api.KV_WRITE: _kv_write, api.KV_GET: _kv_get, api.ADD_RAFT_VOTER: _add_voter,
            api.REMOVE_RAFT_VOTER: _remove_voter, api.UPDATE_RAFT_VOTER: _update_voter}


def decode_request(api_key: int, body: dict):
    """The message of a request body; raises InvalidRequest for a bad field, KeyError for an
    api key the quorum does not serve."""
    return DECODERS[api_key](body)


# -- responses out ------------------------------------------------------------------------
def _error(msg) -> dict:
    out = {"ErrorCode": msg.error_code}
    if msg.message:
        out["ErrorMessage"] = msg.message
    return out


def encode_response(msg, listen: tuple[str, int]) -> dict:
    """The wire body of response ``msg`` (the server adds LeaderId and LeaderEpoch);
    ``listen`` is this node's (host, port), for UpdateRaftVoter's CurrentLeader."""
    t, code = type(msg), msg.error_code
    if t is FetchResponse:
        if code != errors.NONE:
            out = {"ErrorCode": code}
        elif msg.diverging is not None:
            out = {"ErrorCode": code, "HighWatermark": msg.high_watermark, "LogStartOffset": 0,
                   "DivergingEpoch": {"Epoch": msg.diverging[0], "EndOffset": msg.diverging[1]}, "Records": [],
                   "ReadRound": msg.read_round}
        else:
            out = {"ErrorCode": code, "HighWatermark": msg.high_watermark, "LogStartOffset": 0,
                   "CurrentLeader": {"LeaderId": msg.leader_id, "LeaderEpoch": msg.leader_epoch},
                   "Records": [r.to_wire() for r in msg.records], "ReadRound": msg.read_round}
    elif t is VoteResponse:
        out = {"ErrorCode": code, "VoteGranted": msg.vote_granted}
        if code == errors.NONE:
            out["PreVote"] = msg.pre_vote
    elif code != errors.NONE and t is not VoterChangeResponse:
        out = _error(msg)
    elif t is AppendResponse:
        out = {"ErrorCode": code, "Offset": msg.offset, "Epoch": msg.epoch}
    elif t is KvWriteResponse:
        out = {"ErrorCode": code, "Offset": msg.offset, "Epoch": msg.epoch, "Succeeded": msg.succeeded,
               "Previous": msg.previous}
    elif t is ReadResponse:
        out = {"ErrorCode": code, "HighWatermark": msg.high_watermark, "Records": [r.to_wire() for r in msg.records]}
    elif t is KvGetResponse:
        out = {"ErrorCode": code, "Value": msg.value, "AppliedOffset": msg.applied_offset}
    elif t is DescribeQuorumResponse:
        out = {"ErrorCode": code, "HighWatermark": msg.high_watermark, "CurrentVoters": msg.voters,
               "Observers": msg.observers}
    elif t is VoterChangeResponse:
        out = _error(msg)
        if msg.current_leader:
            out["CurrentLeader"] = {"LeaderId": msg.leader_id, "LeaderEpoch": msg.leader_epoch,
                                    "Host": listen[0], "Port": listen[1]}
    else:
        out = _error(msg)
    return out


# -- our requests out, their responses in ---------------------------------------------------
def encode_request(msg, listen: tuple[str, int]) -> tuple[int, dict]:
    """``(api key, body)`` of a request the core sends; ``listen`` is this node's endpoint
    (BeginQuorumEpoch's LeaderEndpoint)."""
    t = type(msg)
    if t is FetchRequest:
        return api.FETCH, {"ReplicaId": msg.replica_id, "ReplicaDirectoryId": msg.replica_directory_id,
                           "ReplicaEpoch": msg.replica_epoch, "FetchOffset": msg.fetch_offset,
                           "LastFetchedEpoch": msg.last_fetched_epoch, "MaxWaitMs": msg.max_wait_ms,
                           "ReadRound": msg.read_round}
    if t is VoteRequest:
        return api.VOTE, {"CandidateEpoch": msg.candidate_epoch, "CandidateId": msg.candidate_id,
                          "CandidateDirectoryId": msg.candidate_directory_id,
                          "LastOffsetEpoch": msg.last_offset_epoch, "LastOffset": msg.last_offset,
                          "PreVote": msg.pre_vote, "VoterId": msg.voter_id, "VoterDirectoryId": msg.voter_directory_id}
    if t is BeginQuorumEpochRequest:
        return api.BEGIN_QUORUM_EPOCH, {"LeaderId": msg.leader_id, "LeaderEpoch": msg.leader_epoch,
                                        "VoterId": msg.voter_id, "VoterDirectoryId": msg.voter_directory_id,
                                        "LeaderEndpoint": f"{listen[0]}:{listen[1]}"}
    if t is EndQuorumEpochRequest:
        return api.END_QUORUM_EPOCH, {"ReplicaId": msg.replica_id, "LeaderId": msg.leader_id,
                                      "LeaderEpoch": msg.leader_epoch,
                                      "PreferredSuccessors": msg.preferred_successors}
    raise TypeError(f"not a quorum request: {msg!r}")


def _int(b: dict, name: str, default: int) -> int:
    v = b.get(name, default)
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def decode_response(request, b: dict):
    """The response message to ``request`` in body ``b``; raises ValueError when it is
    malformed (the adapter counts that as a failed request)."""
    leader_id, leader_epoch = _int(b, "LeaderId", -1), _int(b, "LeaderEpoch", -1)
    code = _int(b, "ErrorCode", errors.UNKNOWN_SERVER_ERROR)
    t = type(request)
    if t is FetchRequest:
        div = b.get("DivergingEpoch")
        diverging = (int(div["Epoch"]), int(div["EndOffset"])) if div else None
        records = [Record.from_wire(r) for r in b.get("Records") or []]
        return FetchResponse(code, _int(b, "HighWatermark", 0), records, diverging, _int(b, "ReadRound", 0),
                             leader_id, leader_epoch)
    if t is VoteRequest:
        return VoteResponse(code, b.get("VoteGranted") is True, bool(b.get("PreVote")), leader_id, leader_epoch)
    return EpochResponse(code, b.get("ErrorMessage"), leader_id, leader_epoch)
