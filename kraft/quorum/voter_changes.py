"""Voter changes one at a time (KIP-853 AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter);
functions over :class:`kraft.quorum.state.QuorumState`, applying the pure rules of
kraft/rules/membership.py.

The new voter set is appended as a KRaftVoters record and is in effect at once
(kraft/rules/voter_set.py); Add and Remove answer once it is committed by a majority of
the new set, Update once it is appended. A leader that removed itself resigns once
the removal commits (kraft/quorum/commit.py).
"""
from __future__ import annotations

from ..core import errors
from ..core.records import VOTERS, Record
from ..core.rpc import Refused
from ..core.states import StateKind
from ..rules.membership import check_change_allowed, plan_add, plan_remove, plan_update
from .client_api import write
from .client_messages import AddVoterRequest, RemoveVoterRequest, UpdateVoterRequest, VoterChangeResponse
from .disk import append, schedule_flush
from .pending import VOTERS as VOTER_CHANGE
from .read_index import complete_reads
from .requests import reply
from .state import QuorumState
from .timer_keys import TimerKey

LEADER = StateKind.LEADER
LEADER_CHECK = TimerKey.LEADER_CHECK


def _check_change(s: QuorumState) -> None:
    check_change_allowed(is_leader=s.kind is LEADER and not s.stopping,
                         epoch_committed=s.hw > s.epoch_start,
                         kraft_version=s.history.kraft_version,
                         last_voters_offset=s.history.last_offset, hw=s.hw)


def on_add_voter(s: QuorumState, token, req: AddVoterRequest) -> None:
    """KIP-853 AddRaftVoter: answered once the new set is committed (or at once, without
    ``ack_when_committed``)."""
    try:
        _check_change(s)
        voters = s.history.latest
        new = plan_add(voters, req.voter, s.replicas.get(voters, req.voter.key), s.wall_clock(),
                       s.cfg.fetch_timeout_ms)
    except Refused as e:
        reply(s, token, VoterChangeResponse(e.code, e.body.get("ErrorMessage")))
        return
    _change_voters(s, token, new, req.timeout_ms, req.ack_when_committed)


def on_remove_voter(s: QuorumState, token, req: RemoveVoterRequest) -> None:
    """KIP-853 RemoveRaftVoter: answered once the new set is committed."""
    try:
        _check_change(s)
        new = plan_remove(s.history.latest, req.key)
    except Refused as e:
        reply(s, token, VoterChangeResponse(e.code, e.body.get("ErrorMessage")))
        return
    _change_voters(s, token, new, None, True)


def on_update_voter(s: QuorumState, token, req: UpdateVoterRequest) -> None:
    """KIP-853 UpdateRaftVoter: answered once the new set is appended."""
    lo, hi = req.min_version, req.max_version
    version = s.history.kraft_version
    try:
        epoch = s.election.epoch
        if req.current_leader_epoch != epoch:
            raise Refused(errors.FENCED_LEADER_EPOCH if req.current_leader_epoch < epoch
                          else errors.UNKNOWN_LEADER_EPOCH)
        _check_change(s)
        if not (isinstance(lo, int) and isinstance(hi, int) and lo <= version <= hi):
            raise Refused(errors.INVALID_REQUEST, f"kraft.version range {lo}..{hi} does not support "
                                                  f"the finalized version {version}")
        new = plan_update(s.history.latest, req.voter)
    except Refused as e:
        reply(s, token, VoterChangeResponse(e.code, e.body.get("ErrorMessage"), current_leader=True))
        return
    _change_voters(s, None, new, None, False)
    reply(s, token, VoterChangeResponse(errors.NONE, current_leader=True))


def _change_voters(s: QuorumState, token, voters, timeout_ms, wait: bool) -> None:
    s.set_deadline(LEADER_CHECK, s.now)      # check quorum and BeginQuorumEpoch: new voters
    if not wait:
        e = s.election
        append(s, Record(s.log.end_offset, e.epoch, VOTERS, voters.to_payload()))
        schedule_flush(s)
        complete_reads(s)          # the majority may have changed
        if token is not None:
            reply(s, token, VoterChangeResponse(errors.NONE))
        return
    write(s, token, VOTER_CHANGE, VOTERS, [voters.to_payload()], timeout_ms)
    complete_reads(s)
