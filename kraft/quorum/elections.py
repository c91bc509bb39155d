"""Elections (KIP-595 Vote, BeginQuorumEpoch, EndQuorumEpoch; KIP-996 Pre-Vote and the
election timer; KIP-853 voter keys): standing (Prospective, Candidate), voting, and
learning of new leaders; functions over :class:`kraft.quorum.state.QuorumState`.

The vote-granting rules themselves are the pure functions of kraft/rules/voting.py.
"""
from __future__ import annotations

import logging

from ..core import errors
from ..core.events import Send
from ..core.records import LEADER_CHANGE, Record
from ..core.states import ElectionState, StateKind
from ..rules.high_watermark import end_quorum_backoff_ms
from ..rules.voter_set import ReplicaKey, addressed_to
from ..rules.voting import grant_pre_vote, grant_vote, is_up_to_date
from .disk import append, flush_now
from .fetcher import discovery_targets
from .leader import on_leader_timer, send_begin_quorum
from .messages import (BeginQuorumEpochRequest, EndQuorumEpochRequest, EpochResponse, VoteRequest,
                       VoteResponse)
from .requests import reply
from .state import QuorumState
from .timer_keys import TimerKey
from .transitions import (become_follower, become_leader_state, become_unattached, election_timeout,
                          enter_follower, observe, persist, set_kind)

log = logging.getLogger("kraft.quorum")

UNATTACHED, PROSPECTIVE, CANDIDATE = StateKind.UNATTACHED, StateKind.PROSPECTIVE, StateKind.CANDIDATE
LEADER, FOLLOWER, RESIGNED = StateKind.LEADER, StateKind.FOLLOWER, StateKind.RESIGNED
ELECTION = TimerKey.ELECTION


# -- the election timer ------------------------------------------------------------
def on_election_timer(s: QuorumState) -> None:
    """The current state's timer expired (Kafka's QuorumState timeouts)."""
    k, voter = s.kind, s.history.latest.is_voter(s.key)
    if k is UNATTACHED:
        if voter:
            become_prospective(s)
    elif k is FOLLOWER:
        if voter or discovery_targets(s):
            log.info("fetch timeout: no successful Fetch from leader %d in %d ms",
                     s.election.leader_id, s.cfg.fetch_timeout_ms)
            if voter:
                become_prospective(s)
            else:                                  # an observer looks for the leader again
                e = s.election
                become_unattached(s, e.epoch, e.voted_id, e.voted_directory_id)
    elif k is PROSPECTIVE:
        _prospective_lost(s, "pre-vote timed out" if voter else "no longer a voter")
    elif k is CANDIDATE:
        if voter:
            become_prospective(s)
        else:
            e = s.election
            become_unattached(s, e.epoch, e.voted_id, e.voted_directory_id)
    elif k is RESIGNED:
        become_unattached(s, s.election.epoch + 1)


# -- standing --------------------------------------------------------------------------
def become_prospective(s: QuorumState) -> None:
    """Enter Prospective (not persisted) and send Pre-Votes; straight to Candidate without
    Pre-Vote (config ``pre_vote`` off, or the ``no-pre-vote`` switch)."""
    if not s.history.latest.is_voter(s.key):
        return
    if not s.cfg.pre_vote or s.policy.no_pre_vote:
        become_candidate(s)
        return
    set_kind(s, PROSPECTIVE)
    s.set_deadline(ELECTION, s.now + election_timeout(s))
    _start_election(s, pre_vote=True)


def become_candidate(s: QuorumState) -> None:
    """Persist epoch+1 with a vote for ourselves and request votes."""
    persist(s, ElectionState(s.election.epoch + 1, -1, s.id, s.key.directory_id))
    set_kind(s, CANDIDATE)
    s.set_deadline(ELECTION, s.now + election_timeout(s))
    _start_election(s, pre_vote=False)


def _prospective_lost(s: QuorumState, why: str) -> None:
    log.info("pre-vote lost in epoch %d: %s", s.election.epoch, why)
    if s.policy.vote_after_failed_prevote and s.history.latest.is_voter(s.key):
        become_candidate(s)     # the bug: KIP-996's rejected alternative
        return
    if s.election.leader_id >= 0:
        enter_follower(s)
    else:
        set_kind(s, UNATTACHED)
        s.set_deadline(ELECTION, s.now + election_timeout(s))


def _start_election(s: QuorumState, pre_vote: bool) -> None:
    s.votes_granted = {s.id}
    s.votes_rejected = set()
    if _check_votes(s, pre_vote):
        return
    e, lg, me = s.election, s.log, s.key
    for v in s.history.latest.voters:
        if v.id != s.id:
            s.out.append(Send(v.id, VoteRequest(e.epoch, me.id, me.directory_id, v.id, v.directory_id,
                                                lg.last_epoch, lg.end_offset, pre_vote), s.gen))


def on_vote_reply(s: QuorumState, ev) -> None:
    """The answer to our (Pre-)Vote request (a Replied event)."""
    resp = ev.response
    if resp is None or ev.gen != s.gen or observe(s, resp.leader_epoch, resp.leader_id):
        return
    if resp.error_code == errors.NONE and resp.vote_granted is True:
        s.votes_granted.add(ev.to)
    else:
        s.votes_rejected.add(ev.to)
    _check_votes(s, ev.request.pre_vote)


def _check_votes(s: QuorumState, pre_vote: bool) -> bool:
    voters = s.history.latest
    if len(s.votes_granted & set(voters.ids)) >= voters.majority:
        if pre_vote:
            become_candidate(s)
        else:
            become_leader(s)
        return True
    if len(s.votes_rejected) >= len(voters) - voters.majority + 1:
        if pre_vote:
            _prospective_lost(s, "a majority rejected the pre-vote")
        else:
            # election lost: back off a random time before the next pre-vote
            s.set_deadline(ELECTION, s.now + s.rng.random() * s.cfg.election_backoff_max_ms)
        return True
    return False


def become_leader(s: QuorumState) -> None:
    """Persist leadership of the current epoch, append LeaderChange (and, at kraft.version
    1 with no VotersRecord yet, the bootstrap voter set), send BeginQuorumEpoch."""
    e, lg = s.election, s.log
    persist(s, ElectionState(e.epoch, s.id, s.id, s.key.directory_id))
    become_leader_state(s)
    granted = sorted(s.votes_granted | {s.id})
    append(s, Record(lg.end_offset, e.epoch, LEADER_CHANGE,
                     {"LeaderId": s.id, "Voters": s.history.latest.ids, "GrantingVoters": granted}))
    for rtype, payload in s.history.start_of_epoch_records():
        append(s, Record(lg.end_offset, e.epoch, rtype, payload))
    flush_now(s)
    for vid in s.history.latest.ids:
        if vid != s.id:
            send_begin_quorum(s, vid)
    on_leader_timer(s)


def on_epoch_reply(s: QuorumState, ev) -> None:
    """A BeginQuorumEpoch or EndQuorumEpoch answer: only a higher epoch matters."""
    resp = ev.response
    if resp is not None and ev.gen == s.gen and resp.leader_epoch > s.election.epoch:
        observe(s, resp.leader_epoch, resp.leader_id)


# -- voting (receiver side) -----------------------------------------------------------------
def on_vote_request(s: QuorumState, token, req: VoteRequest) -> None:
    """KIP-595 Vote / KIP-996 Pre-Vote handling."""
    cid, cdir = req.candidate_id, req.candidate_directory_id
    voters = s.history.latest
    if s.history.kraft_version == 0:       # static voters: both must be voters
        bad = voters.get(cid) is None or not voters.is_voter(s.key)
    else:   # KIP-853: addressed to our key; and (ours) no vote for a voter id under another directory
        bad = (not addressed_to(s.key, req.voter_id, req.voter_directory_id)
               or voters.conflicts(ReplicaKey(cid, cdir)))
    if bad:
        reply(s, token, VoteResponse(errors.INVALID_VOTER_KEY, False, req.pre_vote))
        return
    if req.candidate_epoch < s.election.epoch:
        reply(s, token, VoteResponse(errors.FENCED_LEADER_EPOCH, False, req.pre_vote))
        return
    lg = s.log
    up = is_up_to_date(req.last_offset_epoch, req.last_offset, lg.last_epoch, lg.end_offset,
                       compare_offsets=not s.policy.vote_ignores_offset)
    if req.pre_vote:
        if req.candidate_epoch > s.election.epoch:
            granted = up            # no transition on a pre-vote
        else:
            granted = grant_pre_vote(s.kind, s.has_fetched, up)
        reply(s, token, VoteResponse(errors.NONE, granted, True))
        return
    if req.candidate_epoch > s.election.epoch:
        become_unattached(s, req.candidate_epoch)
    e = s.election
    granted = grant_vote(s.kind, e.voted_id, e.leader_id, cid, up)
    if granted and e.voted_id != cid:
        persist(s, ElectionState(e.epoch, -1, cid, cdir))
        s.set_deadline(ELECTION, s.now + election_timeout(s))
        log.info("voted for %d in epoch %d", cid, e.epoch)
    reply(s, token, VoteResponse(errors.NONE, granted, False))


def on_begin_quorum_epoch(s: QuorumState, token, req: BeginQuorumEpochRequest) -> None:
    """KIP-595 BeginQuorumEpoch: a new leader announces itself."""
    lid, lepoch = req.leader_id, req.leader_epoch
    e = s.election
    if lepoch < e.epoch:
        reply(s, token, EpochResponse(errors.FENCED_LEADER_EPOCH))
        return
    version = s.history.kraft_version
    if version == 0 and s.history.latest.get(lid) is None:
        reply(s, token, EpochResponse(errors.INVALID_REQUEST, f"LeaderId {lid} is not a voter"))
        return
    if version > 0 and not addressed_to(s.key, req.voter_id, req.voter_directory_id):
        reply(s, token, EpochResponse(errors.INVALID_VOTER_KEY))
        return
    if lepoch == e.epoch and s.kind is LEADER and lid != s.id:
        log.critical("BeginQuorumEpoch from %d for epoch %d, which we lead", lid, lepoch)
        reply(s, token, EpochResponse(errors.INVALID_REQUEST))
        return
    if not (lepoch == e.epoch and s.kind is FOLLOWER and e.leader_id == lid):
        become_follower(s, lepoch, lid)
    reply(s, token, EpochResponse(errors.NONE))


def on_end_quorum_epoch(s: QuorumState, token, req: EndQuorumEpochRequest) -> None:
    """KIP-595 EndQuorumEpoch: the leader resigned; elect after the successor back-off."""
    lid, lepoch, successors = req.leader_id, req.leader_epoch, req.preferred_successors
    if lepoch < s.election.epoch:
        reply(s, token, EpochResponse(errors.FENCED_LEADER_EPOCH))
        return
    if lepoch > s.election.epoch:
        become_unattached(s, lepoch)
    elif s.election.leader_id != lid:
        reply(s, token, EpochResponse(errors.NONE))   # stale: we already moved on in this epoch
        return
    pos = successors.index(s.id) if s.id in successors else None
    delay = end_quorum_backoff_ms(pos, s.cfg.retry_backoff_ms, s.cfg.election_backoff_max_ms)
    if s.kind is FOLLOWER:
        s.has_fetched = False     # our leader is gone: grant pre-votes again
    if s.kind in (FOLLOWER, UNATTACHED):
        wanted = s.deadline(ELECTION)
        s.set_deadline(ELECTION, min(float("inf") if wanted is None else wanted, s.now + delay))
    log.info("EndQuorumEpoch from %d (epoch %d): successor position %s, electing in %d ms",
             lid, lepoch, pos, delay)
    reply(s, token, EpochResponse(errors.NONE))
