"""Voter changes one at a time (KIP-853 AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter): a
mixin of :class:`kraft.quorum.core.QuorumCore`, applying the pure rules of
kraft/membership.py.

The new voter set is appended as a KRaftVoters record and is in effect at once
(kraft/voter_set.py); Add and Remove answer once it is committed by a majority of
the new set, Update once it is appended. A leader that removed itself resigns once
the removal commits (kraft/quorum/commit.py).
"""
from __future__ import annotations

from ..core import errors
from ..core.records import VOTERS, Record
from ..core.rpc import Refused
from ..core.states import StateKind
from ..rules.membership import check_change_allowed, plan_add, plan_remove, plan_update
from .client_messages import AddVoterRequest, RemoveVoterRequest, UpdateVoterRequest, VoterChangeResponse
from .commit import VOTERS as VOTER_CHANGE

LEADER = StateKind.LEADER
LEADER_CHECK = "leader"


class VoterChanges:
    """Handlers of the voter changes (needs the core's state)."""

    def _check_change(self) -> None:
        check_change_allowed(is_leader=self.kind is LEADER and not self.stopping,
                             epoch_committed=self.hw > self.epoch_start,
                             kraft_version=self.history.kraft_version,
                             last_voters_offset=self.history.last_offset, hw=self.hw)

    def _on_add_voter(self, token, req: AddVoterRequest) -> None:
        try:
            self._check_change()
            voters = self.voters
            new = plan_add(voters, req.voter, self.replicas.get(voters, req.voter.key), self.wall_clock(),
                           self.cfg.fetch_timeout_ms)
        except Refused as e:
            self._reply(token, VoterChangeResponse(e.code, e.body.get("ErrorMessage")))
            return
        self._change_voters(token, new, req.timeout_ms, req.ack_when_committed)

    def _on_remove_voter(self, token, req: RemoveVoterRequest) -> None:
        try:
            self._check_change()
            new = plan_remove(self.voters, req.key)
        except Refused as e:
            self._reply(token, VoterChangeResponse(e.code, e.body.get("ErrorMessage")))
            return
        self._change_voters(token, new, None, True)

    def _on_update_voter(self, token, req: UpdateVoterRequest) -> None:
        lo, hi = req.min_version, req.max_version
        version = self.history.kraft_version
        try:
            epoch = self.election.epoch
            if req.current_leader_epoch != epoch:
                raise Refused(errors.FENCED_LEADER_EPOCH if req.current_leader_epoch < epoch
                              else errors.UNKNOWN_LEADER_EPOCH)
            self._check_change()
            if not (isinstance(lo, int) and isinstance(hi, int) and lo <= version <= hi):
                raise Refused(errors.INVALID_REQUEST, f"kraft.version range {lo}..{hi} does not support "
                                                      f"the finalized version {version}")
            new = plan_update(self.voters, req.voter)
        except Refused as e:
            self._reply(token, VoterChangeResponse(e.code, e.body.get("ErrorMessage"), current_leader=True))
            return
        self._change_voters(None, new, None, False)
        self._reply(token, VoterChangeResponse(errors.NONE, current_leader=True))

    def _change_voters(self, token, voters, timeout_ms, wait: bool) -> None:
        self._set_deadline(LEADER_CHECK, self.now)      # check quorum and BeginQuorumEpoch: new voters
        if not wait:
            e = self.election
            self._append(Record(self.log.end_offset, e.epoch, VOTERS, voters.to_payload()))
            self._schedule_flush()
            self._complete_reads()          # the majority may have changed
            if token is not None:
                self._reply(token, VoterChangeResponse(errors.NONE))
            return
        self._write(token, VOTER_CHANGE, VOTERS, [voters.to_payload()], timeout_ms)
        self._complete_reads()
