"""Vote-granting rules (KIP-595 Vote handling; KIP-996 Pre-Vote).

Pure functions of the receiver's state, so they can be unit-tested alone.
"""
from __future__ import annotations

from ..core.states import StateKind


def is_up_to_date(cand_last_epoch: int, cand_end_offset: int, own_last_epoch: int, own_end_offset: int,
                  compare_offsets: bool = True) -> bool:
    """True iff the candidate's log is at least as up to date as ours.

    Compares (last epoch, log end offset) as a pair, epoch first (KIP-595,
    "Vote"; Raft §5.4.1). ``compare_offsets=False`` is the
    ``vote-ignores-offset`` bug: last epochs only.
    """
    if not compare_offsets:
        return cand_last_epoch >= own_last_epoch
    return (cand_last_epoch, cand_end_offset) >= (own_last_epoch, own_end_offset)


def grant_pre_vote(kind: StateKind, has_fetched_from_leader: bool, up_to_date: bool) -> bool:
    """KIP-996: a Leader rejects every PreVote; a Follower grants one only if it
    has not fetched successfully from its leader in this epoch; anyone else
    grants iff the requester is up to date. Nothing is persisted."""
    if kind is StateKind.LEADER:
        return False
    if kind is StateKind.FOLLOWER and has_fetched_from_leader:
        return False
    return up_to_date


def grant_vote(kind: StateKind, voted_id: int, leader_id: int, candidate_id: int, up_to_date: bool) -> bool:
    """Standard vote in the receiver's current epoch (the candidate's epoch is
    equal, after any higher-epoch transition): granted again to the candidate
    it already voted for; refused if it voted for another or knows a leader in
    this epoch (Leader, Resigned and Candidate have voted for themselves);
    otherwise granted iff the candidate is up to date."""
    if voted_id == candidate_id:
        return True
    if voted_id >= 0 or leader_id >= 0:
        return False
    if kind in (StateKind.LEADER, StateKind.RESIGNED, StateKind.CANDIDATE):
        return False
    return up_to_date
