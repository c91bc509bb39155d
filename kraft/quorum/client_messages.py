"""The client API of the quorum as plain objects: Append (1000), Read (1001), KvWrite (1002),
KvGet (1003), DescribeQuorum (55), AddRaftVoter (80), RemoveRaftVoter (81),
UpdateRaftVoter (82), and two in-process ones: Propose (what the active controller
appends) and ReadIndex.

Requests are validated by whoever builds them (kraft/wire/quorum_codec.py for the wire).
Every response has ``error_code`` (kraft/core/errors.py; NONE = 0), ``message`` (for an
error, or None) and the responder's ``leader_id`` / ``leader_epoch`` (the core fills
them in): NOT_LEADER_OR_FOLLOWER is definite (nothing appended; ``leader_id`` is the
hint), REQUEST_TIMED_OUT indefinite (appended, commit unknown).
"""
from __future__ import annotations

import dataclasses

from ..core.records import Record
from ..rules.voter_set import ReplicaKey, VoterNode


@dataclasses.dataclass(slots=True)
class AppendRequest:
    """Append one data record holding ``value`` (any JSON value); answered once committed."""

    value: object


@dataclasses.dataclass(slots=True)
class ProposeRequest:
    """Append records of type ``rtype`` holding ``payloads`` (one record each, one batch);
    with ``wait``, answer once the last is committed (within ``timeout_ms``, None: the
    request timeout), else once appended. The active controller's writes."""

    rtype: str
    payloads: list
    wait: bool = True
    timeout_ms: int | None = None


@dataclasses.dataclass(slots=True)
class AppendResponse:
    """``offset`` and ``epoch`` of the (first) appended record, once committed."""

    error_code: int
    offset: int = -1
    epoch: int = -1
    message: str | None = None
    leader_id: int = -1
    leader_epoch: int = -1


@dataclasses.dataclass(slots=True)
class KvWriteRequest:
    """KvWrite: ``command``, a kv command payload (kraft/state_machines/kv.py ``command``)."""

    command: dict


@dataclasses.dataclass(slots=True)
class KvWriteResponse:
    """The command's record ``offset`` / ``epoch``, once committed and applied, and its
    outcome: ``succeeded`` (a cas whose compare failed is False) and ``previous``."""

    error_code: int
    offset: int = -1
    epoch: int = -1
    succeeded: bool = False
    previous: int | None = None
    message: str | None = None
    leader_id: int = -1
    leader_epoch: int = -1


@dataclasses.dataclass(slots=True)
class ReadRequest:
    """Read committed records from ``from_offset`` (at most ``max_records``, None: all);
    ``linearizable`` goes through the leader's read-index."""

    from_offset: int
    max_records: int | None = None
    linearizable: bool = True


@dataclasses.dataclass(slots=True)
class ReadResponse:
    """``records`` in [from_offset, ``high_watermark``)."""

    error_code: int
    high_watermark: int = 0
    records: list[Record] = dataclasses.field(default_factory=list)
    message: str | None = None
    leader_id: int = -1
    leader_epoch: int = -1


@dataclasses.dataclass(slots=True)
class KvGetRequest:
    """KvGet ``key`` (linearizable: read-index)."""

    key: str


@dataclasses.dataclass(slots=True)
class KvGetResponse:
    """``value`` of the key (None: never written) at the state machine's ``applied_offset``."""

    error_code: int
    value: int | None = None
    applied_offset: int = 0
    message: str | None = None
    leader_id: int = -1
    leader_epoch: int = -1


@dataclasses.dataclass(slots=True)
class ReadIndexRequest:
    """Confirm leadership with a majority (Raft §6.4) within ``timeout_ms`` (None: the
    request timeout)."""

    timeout_ms: float | None = None


@dataclasses.dataclass(slots=True)
class ReadIndexResponse:
    """``index``: the high watermark once leadership was confirmed."""

    error_code: int
    index: int = -1
    message: str | None = None
    leader_id: int = -1
    leader_epoch: int = -1


@dataclasses.dataclass(slots=True)
class DescribeQuorumRequest:
    """DescribeQuorum (55), answered by the leader."""


@dataclasses.dataclass(slots=True)
class DescribeQuorumResponse:
    """``high_watermark``; ``voters`` and ``observers`` as wire dicts (ReplicaId,
    ReplicaDirectoryId, LogEndOffset, LastFetchTimestamp, LastCaughtUpTimestamp; wall ms)."""

    error_code: int
    high_watermark: int = 0
    voters: list = dataclasses.field(default_factory=list)
    observers: list = dataclasses.field(default_factory=list)
    message: str | None = None
    leader_id: int = -1
    leader_epoch: int = -1


@dataclasses.dataclass(slots=True)
class AddVoterRequest:
    """AddRaftVoter ``voter``; answer once committed (within ``timeout_ms``, None: the
    request timeout) or, without ``ack_when_committed``, once appended."""

    voter: VoterNode
    timeout_ms: int | None = None
    ack_when_committed: bool = True


@dataclasses.dataclass(slots=True)
class RemoveVoterRequest:
    """RemoveRaftVoter ``key``; answered once committed."""

    key: ReplicaKey


@dataclasses.dataclass(slots=True)
class UpdateVoterRequest:
    """UpdateRaftVoter: ``voter``'s new endpoint, from a replica that knows
    ``current_leader_epoch`` and supports kraft.version ``min_version``..``max_version``;
    answered once appended."""

    current_leader_epoch: int
    voter: VoterNode
    min_version: object
    max_version: object


@dataclasses.dataclass(slots=True)
class VoterChangeResponse:
    """The answer to a voter change; ``current_leader`` is set for UpdateRaftVoter."""

    error_code: int
    message: str | None = None
    current_leader: bool = False
    leader_id: int = -1
    leader_epoch: int = -1
