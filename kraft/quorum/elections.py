"""Elections (KIP-595 Vote, BeginQuorumEpoch, EndQuorumEpoch; KIP-996 Pre-Vote and the
election timer; KIP-853 voter keys): a mixin of :class:`kraft.quorum.core.QuorumCore`.

The vote-granting rules themselves are the pure functions of kraft/voting.py.
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
from .messages import (BeginQuorumEpochRequest, EndQuorumEpochRequest, EpochResponse, VoteRequest,
                       VoteResponse)

log = logging.getLogger("kraft.quorum")

UNATTACHED, PROSPECTIVE, CANDIDATE = StateKind.UNATTACHED, StateKind.PROSPECTIVE, StateKind.CANDIDATE
LEADER, FOLLOWER, RESIGNED = StateKind.LEADER, StateKind.FOLLOWER, StateKind.RESIGNED
ELECTION = "election"


class Elections:
    """Standing for election, voting, and learning of new leaders (needs the core's state)."""

    def _init_elections(self) -> None:
        self.votes_granted: set[int] = set()
        self.votes_rejected: set[int] = set()
        self.has_fetched = False          # Follower: fetched successfully in this epoch

    # -- the election timer ------------------------------------------------------------
    def _on_election_timer(self) -> None:
        """The current state's timer expired (Kafka's QuorumState timeouts)."""
        k, voter = self.kind, self.is_voter
        if k is UNATTACHED:
            if voter:
                self.become_prospective()
        elif k is FOLLOWER:
            if voter or self._discovery_targets():
                log.info("fetch timeout: no successful Fetch from leader %d in %d ms",
                         self.leader_id, self.cfg.fetch_timeout_ms)
                if voter:
                    self.become_prospective()
                else:                                  # an observer looks for the leader again
                    e = self.election
                    self.become_unattached(e.epoch, e.voted_id, e.voted_directory_id)
        elif k is PROSPECTIVE:
            self._prospective_lost("pre-vote timed out" if voter else "no longer a voter")
        elif k is CANDIDATE:
            if voter:
                self.become_prospective()
            else:
                e = self.election
                self.become_unattached(e.epoch, e.voted_id, e.voted_directory_id)
        elif k is RESIGNED:
            self.become_unattached(self.election.epoch + 1)

    def _prospective_lost(self, why: str) -> None:
        log.info("pre-vote lost in epoch %d: %s", self.election.epoch, why)
        if self.policy.vote_after_failed_prevote and self.is_voter:
            self.become_candidate()     # the bug: KIP-996's rejected alternative
            return
        if self.election.leader_id >= 0:
            self._enter_follower()
        else:
            self._set_kind(UNATTACHED)
            self._set_deadline(ELECTION, self.now + self._election_timeout())

    # -- standing --------------------------------------------------------------------------
    def _start_election(self, pre_vote: bool) -> None:
        self.votes_granted = {self.id}
        self.votes_rejected = set()
        if self._check_votes(pre_vote):
            return
        e, lg, me = self.election, self.log, self.key
        for v in self.voters.voters:
            if v.id != self.id:
                self.out.append(Send(v.id, VoteRequest(e.epoch, me.id, me.directory_id, v.id, v.directory_id,
                                                       lg.last_epoch, lg.end_offset, pre_vote), self.gen))

    def _on_vote_reply(self, ev) -> None:
        resp = ev.response
        if resp is None or ev.gen != self.gen or self.observe(resp.leader_epoch, resp.leader_id):
            return
        if resp.error_code == errors.NONE and resp.vote_granted is True:
            self.votes_granted.add(ev.to)
        else:
            self.votes_rejected.add(ev.to)
        self._check_votes(ev.request.pre_vote)

    def _check_votes(self, pre_vote: bool) -> bool:
        voters = self.voters
        if len(self.votes_granted & set(voters.ids)) >= voters.majority:
            if pre_vote:
                self.become_candidate()
            else:
                self.become_leader()
            return True
        if len(self.votes_rejected) >= len(voters) - voters.majority + 1:
            if pre_vote:
                self._prospective_lost("a majority rejected the pre-vote")
            else:
                # election lost: back off a random time before the next pre-vote
                self._set_deadline(ELECTION, self.now + self.rng.random() * self.cfg.election_backoff_max_ms)
            return True
        return False

    def become_leader(self) -> None:
        """Persist leadership of the current epoch, append LeaderChange (and, at kraft.version
        1 with no VotersRecord yet, the bootstrap voter set), send BeginQuorumEpoch."""
        e, lg = self.election, self.log
        self._persist(ElectionState(e.epoch, self.id, self.id, self.key.directory_id))
        self._become_leader_state()
        granted = sorted(self.votes_granted | {self.id})
        self._append(Record(lg.end_offset, e.epoch, LEADER_CHANGE,
                            {"LeaderId": self.id, "Voters": self.voters.ids, "GrantingVoters": granted}))
        for rtype, payload in self.history.start_of_epoch_records():
            self._append(Record(lg.end_offset, e.epoch, rtype, payload))
        self._flush_now()
        for vid in self.voters.ids:
            if vid != self.id:
                self._send_begin_quorum(vid)
        self._on_leader_timer()

    def resign(self, reason: str) -> None:
        """Leader -> Resigned (not persisted): send EndQuorumEpoch to the voters."""
        if self.kind is not LEADER:
            return
        log.warning("resigning leadership of epoch %d: %s", self.election.epoch, reason)
        successors = self.replicas.successors(self.voters, self.key)
        self._set_kind(RESIGNED)
        self._set_deadline(ELECTION, self.now + self._election_timeout())
        e = self.election
        for vid in successors:
            self.out.append(Send(vid, EndQuorumEpochRequest(self.id, self.id, e.epoch, successors), self.gen))

    def _on_epoch_reply(self, ev) -> None:
        """A BeginQuorumEpoch or EndQuorumEpoch answer: only a higher epoch matters."""
        resp = ev.response
        if resp is not None and ev.gen == self.gen and resp.leader_epoch > self.election.epoch:
            self.observe(resp.leader_epoch, resp.leader_id)

    # -- voting (receiver side) -----------------------------------------------------------------
    def _on_vote_request(self, token, req: VoteRequest) -> None:
        """KIP-595 Vote / KIP-996 Pre-Vote handling."""
        cid, cdir = req.candidate_id, req.candidate_directory_id
        voters = self.voters
        if self.history.kraft_version == 0:       # static voters: both must be voters
            bad = voters.get(cid) is None or not self.is_voter
        else:   # KIP-853: addressed to our key; and (ours) no vote for a voter id under another directory
            bad = (not addressed_to(self.key, req.voter_id, req.voter_directory_id)
                   or voters.conflicts(ReplicaKey(cid, cdir)))
        if bad:
            self._reply(token, VoteResponse(errors.INVALID_VOTER_KEY, False, req.pre_vote))
            return
        if req.candidate_epoch < self.election.epoch:
            self._reply(token, VoteResponse(errors.FENCED_LEADER_EPOCH, False, req.pre_vote))
            return
        lg = self.log
        up = is_up_to_date(req.last_offset_epoch, req.last_offset, lg.last_epoch, lg.end_offset,
                           compare_offsets=not self.policy.vote_ignores_offset)
        if req.pre_vote:
            if req.candidate_epoch > self.election.epoch:
                granted = up            # no transition on a pre-vote
            else:
                granted = grant_pre_vote(self.kind, self.has_fetched, up)
            self._reply(token, VoteResponse(errors.NONE, granted, True))
            return
        if req.candidate_epoch > self.election.epoch:
            self.become_unattached(req.candidate_epoch)
        e = self.election
        granted = grant_vote(self.kind, e.voted_id, e.leader_id, cid, up)
        if granted and e.voted_id != cid:
            self._persist(ElectionState(e.epoch, -1, cid, cdir))
            self._set_deadline(ELECTION, self.now + self._election_timeout())
            log.info("voted for %d in epoch %d", cid, e.epoch)
        self._reply(token, VoteResponse(errors.NONE, granted, False))

    def _on_begin_quorum_epoch(self, token, req: BeginQuorumEpochRequest) -> None:
        """KIP-595 BeginQuorumEpoch: a new leader announces itself."""
        lid, lepoch = req.leader_id, req.leader_epoch
        e = self.election
        if lepoch < e.epoch:
            self._reply(token, EpochResponse(errors.FENCED_LEADER_EPOCH))
            return
        version = self.history.kraft_version
        if version == 0 and self.voters.get(lid) is None:
            self._reply(token, EpochResponse(errors.INVALID_REQUEST, f"LeaderId {lid} is not a voter"))
            return
        if version > 0 and not addressed_to(self.key, req.voter_id, req.voter_directory_id):
            self._reply(token, EpochResponse(errors.INVALID_VOTER_KEY))
            return
        if lepoch == e.epoch and self.kind is LEADER and lid != self.id:
            log.critical("BeginQuorumEpoch from %d for epoch %d, which we lead", lid, lepoch)
            self._reply(token, EpochResponse(errors.INVALID_REQUEST))
            return
        if not (lepoch == e.epoch and self.kind is FOLLOWER and e.leader_id == lid):
            self.become_follower(lepoch, lid)
        self._reply(token, EpochResponse(errors.NONE))

    def _on_end_quorum_epoch(self, token, req: EndQuorumEpochRequest) -> None:
        """KIP-595 EndQuorumEpoch: the leader resigned; elect after the successor back-off."""
        lid, lepoch, successors = req.leader_id, req.leader_epoch, req.preferred_successors
        if lepoch < self.election.epoch:
            self._reply(token, EpochResponse(errors.FENCED_LEADER_EPOCH))
            return
        if lepoch > self.election.epoch:
            self.become_unattached(lepoch)
        elif self.election.leader_id != lid:
            self._reply(token, EpochResponse(errors.NONE))   # stale: we already moved on in this epoch
            return
        pos = successors.index(self.id) if self.id in successors else None
        delay = end_quorum_backoff_ms(pos, self.cfg.retry_backoff_ms, self.cfg.election_backoff_max_ms)
        if self.kind is FOLLOWER:
            self.has_fetched = False     # our leader is gone: grant pre-votes again
        if self.kind in (FOLLOWER, UNATTACHED):
            self._set_deadline(ELECTION, min(self._want.get(ELECTION, float("inf")), self.now + delay))
        log.info("EndQuorumEpoch from %d (epoch %d): successor position %s, electing in %d ms",
                 lid, lepoch, pos, delay)
        self._reply(token, EpochResponse(errors.NONE))
