"""The quorum's RPCs between replicas as plain objects (KIP-595 Vote, BeginQuorumEpoch,
EndQuorumEpoch, Fetch; KIP-996 Pre-Vote; KIP-853 voter keys).

Field names are Kafka's in snake case; kraft/wire/quorum_codec.py maps them to the wire
format of kraft/README.md. Every response carries ``leader_id`` / ``leader_epoch``: the
responder's leader (-1: unknown) and epoch when it answered (the core fills them in).
Treat messages as immutable once sent: a simulator may hand the same object over.
"""
from __future__ import annotations

import dataclasses

from ..core.records import Record


@dataclasses.dataclass(slots=True)
class VoteRequest:
    """Vote (52), or Pre-Vote with ``pre_vote``: a candidate in ``candidate_epoch`` (for a
    pre-vote: the epoch it would stand in, its current one) whose log ends at
    (``last_offset_epoch``, ``last_offset``) asks voter ``voter_id`` (None: any)."""

    candidate_epoch: int
    candidate_id: int
    candidate_directory_id: str | None
    voter_id: object
    voter_directory_id: object
    last_offset_epoch: int
    last_offset: int
    pre_vote: bool


@dataclasses.dataclass(slots=True)
class VoteResponse:
    """The answer to a VoteRequest: ``vote_granted`` (False with any error)."""

    error_code: int
    vote_granted: bool
    pre_vote: bool
    leader_id: int = -1
    leader_epoch: int = -1


@dataclasses.dataclass(slots=True)
class BeginQuorumEpochRequest:
    """BeginQuorumEpoch (53): ``leader_id`` leads ``leader_epoch``, addressed to voter
    ``voter_id`` / ``voter_directory_id`` (None: any). The wire form adds the leader's
    endpoint (the adapter's)."""

    leader_id: int
    leader_epoch: int
    voter_id: object
    voter_directory_id: object


@dataclasses.dataclass(slots=True)
class EndQuorumEpochRequest:
    """EndQuorumEpoch (54): ``leader_id`` resigned ``leader_epoch``; ``preferred_successors``
    are voter ids, best first (by fetch offset, descending)."""

    replica_id: int
    leader_id: int
    leader_epoch: int
    preferred_successors: list


@dataclasses.dataclass(slots=True)
class EpochResponse:
    """An answer that is only an error code (BeginQuorumEpoch, EndQuorumEpoch, and any
    request refused as a whole, e.g. INVALID_REQUEST with ``message``)."""

    error_code: int
    message: str | None = None
    leader_id: int = -1
    leader_epoch: int = -1


@dataclasses.dataclass(slots=True)
class FetchRequest:
    """Fetch (1) from ``fetch_offset`` (the replica's log end offset, all of it stored)
    whose last record has epoch ``last_fetched_epoch``; parked up to ``max_wait_ms`` when
    there is nothing new. ``read_round`` echoes the newest read-index round the replica
    got from this leader (ours; kraft/quorum/read_index.py)."""

    replica_id: int
    replica_directory_id: str | None
    replica_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    max_wait_ms: int
    read_round: int


@dataclasses.dataclass(slots=True)
class FetchResponse:
    """The answer to a FetchRequest: an ``error_code``; or records (``records``, a list of
    :class:`kraft.core.records.Record` from the FetchOffset on) with the ``high_watermark`` and
    the leader's ``read_round``; or ``diverging`` = ``(epoch, end_offset)`` when the
    replica's log diverges (KIP-595 DivergingEpoch; then ``records`` is empty)."""

    error_code: int
    high_watermark: int = 0
    records: list[Record] = dataclasses.field(default_factory=list)
    diverging: tuple[int, int] | None = None
    read_round: int = 0
    leader_id: int = -1
    leader_epoch: int = -1
