"""The quorum core: one KRaft replica as a state machine without I/O (KIP-595, KIP-996,
KIP-853; etcd-io/raft's ``Step``/``Ready`` shape).

:class:`QuorumCore` holds the replica's state (ElectionState, StateKind, the log in
memory, the high watermark, the state machines) and the timers; the concepts live in
mixins, one module each: elections (kraft/quorum/elections.py), leader-side and
follower-side replication (leader.py, follower.py), the high watermark (commit.py),
read-index (read_index.py), voter changes (voter_changes.py) and the client API
(client_api.py). The events it takes and the effects it returns are in
kraft/events.py; clock, randomness and wall clock are injected, so the same events
with the same clock readings and seed give the same effects.

Rule of persistence: a :class:`PersistElection` precedes the effects of the
transition it records (Unattached, voted, Follower, Candidate, Leader); Prospective
and Resigned are not persisted.
"""
from __future__ import annotations

import logging
import random
from typing import Callable

from ..core.events import (PersistElection, Received, Replied, Reply, StateChanged, SyncDone, SyncLog,
                           TimerFired, TruncateLog)
from ..core.record_log import DurableEnd, RecordLog
from ..core.states import ElectionState, StateKind
from ..core.timers import DeadlineTimers
from ..rules.voter_set import ReplicaKey, VoterHistory, VoterSet
from ..state_machines.kv import KvStateMachine
from ..state_machines.metadata_replay import MetadataReplay
from .client_api import ClientApi
from .client_messages import (AddVoterRequest, AppendRequest, DescribeQuorumRequest, KvGetRequest, KvWriteRequest,
                              ProposeRequest, ReadIndexRequest, ReadRequest, RemoveVoterRequest, UpdateVoterRequest)
from .commit import Commit
from .config import QuorumConfig
from .elections import Elections
from .follower import FollowerReplication
from .leader import LeaderReplication
from .messages import BeginQuorumEpochRequest, EndQuorumEpochRequest, FetchRequest, VoteRequest
from .read_index import ReadIndex
from .voter_changes import VoterChanges

log = logging.getLogger("kraft.quorum")

UNATTACHED, PROSPECTIVE, CANDIDATE = StateKind.UNATTACHED, StateKind.PROSPECTIVE, StateKind.CANDIDATE
LEADER, FOLLOWER, RESIGNED = StateKind.LEADER, StateKind.FOLLOWER, StateKind.RESIGNED

#: Timer keys (SetTimer / TimerFired).
ELECTION, LINGER, LEADER_CHECK, FETCH, PARKED, REQUESTS = (
    "election", "linger", "leader", "fetch", "parked", "requests")


class QuorumCore(DeadlineTimers, Elections, LeaderReplication, FollowerReplication, Commit, ReadIndex,
                 VoterChanges, ClientApi):
    """One KRaft replica without I/O.

    ``config`` (:class:`QuorumConfig`); ``log``: the records the replica holds (its
    disk's durable content at a restart); ``history``: the voter sets by offset (its
    bootstrap set: kraft/bootstrap.py ``load_history``; the core attaches it to
    ``log``); ``clock() -> float`` ms, monotonic; ``wall_clock() -> int`` ms (for
    DescribeQuorum's timestamps); ``rng``: a seeded ``random.Random`` (election
    jitter). Then :meth:`start` with the persisted ElectionState, and :meth:`step`.
    """

    def __init__(self, config: QuorumConfig, log_: RecordLog, history: VoterHistory, *,
                 clock: Callable[[], float], rng: random.Random,
                 wall_clock: Callable[[], int] | None = None):
        self.cfg = config
        self.id = config.node_id
        self.key = ReplicaKey(config.node_id, config.directory_id)
        self.log = log_
        self.history = history
        if history not in log_.listeners:
            for r in log_.records:
                history.on_append(r)
            log_.listeners.append(history)
        self.clock, self.rng = clock, rng
        self.wall_clock = wall_clock or (lambda: int(clock()))
        self.now = clock()
        self.election = ElectionState()
        self.kind = UNATTACHED
        self.hw = 0
        self.gen = 0                      # bumped on every transition; stale replies check it
        self.durable = DurableEnd(log_.end_offset)    # what of the log is on disk (fsynced)
        self.kv = KvStateMachine()           # applied from committed records (kraft/kv.py)
        self.metadata = MetadataReplay()     # committed Metadata records (kraft/metadata_replay.py)
        self.stopping = False                # the node is shutting down: refuse writes
        self.out: list = []                  # effects of the step under way
        self._init_timers()
        self._wake = False                   # parked Fetches must look again (end of step)
        self._init_elections()
        self._init_leader()
        self._init_follower()
        self._init_commit()
        self._init_reads()
        self._init_requests()
        self._handlers = {TimerFired: self._on_timer, Received: self._on_received,
                          Replied: self._on_replied, SyncDone: self._on_sync_done}
        self._timer_handlers = {ELECTION: self._on_election_timer, LINGER: self._flush_now,
                                LEADER_CHECK: self._on_leader_timer, FETCH: self._on_fetch_timer,
                                PARKED: self._on_parked_timer, REQUESTS: self._on_requests_timer}

    # -- views -------------------------------------------------------------------------
    @property
    def policy(self):
        """The :class:`kraft.unsafe.Unsafe` policy in force."""
        return self.cfg.unsafe

    @property
    def epoch(self) -> int:
        """The current epoch (persisted in quorum-state)."""
        return self.election.epoch

    @property
    def leader_id(self) -> int:
        """The leader of the current epoch, or -1 if unknown."""
        return self.election.leader_id

    @property
    def voters(self) -> VoterSet:
        """The voter set in effect (KIP-853: the log's latest VotersRecord, else the bootstrap set)."""
        return self.history.latest

    @property
    def is_voter(self) -> bool:
        """True iff this replica's key is in the current voter set."""
        return self.history.latest.is_voter(self.key)

    @property
    def majority(self) -> int:
        """The current voter set's majority (``len // 2 + 1``)."""
        return self.history.latest.majority

    # -- driving -------------------------------------------------------------------------
    def step(self, event) -> list:
        """Handle one event (kraft/events.py); returns the effects to carry out, in order.
        Raises FatalError when an invariant breaks."""
        self.now = self.clock()
        self._handlers[type(event)](event)
        return self._drain()

    def call(self, fn: Callable, *args) -> tuple[object, list]:
        """Run ``fn(*args)`` (a transition such as :meth:`resign`) as one step; returns what it
        returned and the effects."""
        self.now = self.clock()
        result = fn(*args)
        return result, self._drain()

    def _drain(self) -> list:
        if self._wake:
            self._wake = False
            self._wake_parked()
        out, self.out = self.out, []
        return out

    def start(self, election: ElectionState) -> list:
        """Take the persisted ``election`` and pick the start state; returns the first effects.

        A node whose quorum-state names itself leader restarts Resigned in the same
        epoch (KAFKA-10527), unless the ``leader-restart`` switch is on.
        """
        self.now = self.clock()
        self.election = election
        if election.leader_id == self.id:
            if self.policy.leader_restart:
                self._become_leader_state()     # the bug: no LeaderChange, same epoch
                self._on_leader_timer()
            else:
                self._start_in(RESIGNED)
        elif election.leader_id >= 0:
            self._enter_follower()
        else:
            self._start_in(UNATTACHED)
            if not self.is_voter:
                self._start_discovery()
        return self._drain()

    def _start_in(self, kind: StateKind) -> None:
        self.kind = kind
        self.out.append(StateChanged(UNATTACHED, kind, self.election))
        self._set_deadline(ELECTION, self.now + self._election_timeout())

    # -- timers (kraft/timers.py) ----------------------------------------------------------
    def _timer_due(self, key: str) -> None:
        self._timer_handlers[key]()

    def _election_timeout(self) -> float:
        """Randomised in [T, 2T) (KIP-595), ms."""
        t = self.cfg.election_timeout_ms
        return t + self.rng.random() * t

    # -- messages ----------------------------------------------------------------------------
    def _on_received(self, ev: Received) -> None:
        self._request_handlers[type(ev.msg)](self, ev.token, ev.msg)

    def _on_replied(self, ev: Replied) -> None:
        self._reply_handlers[type(ev.request)](self, ev)

    def _reply(self, token, msg) -> None:
        """Answer request ``token`` with ``msg``, stamped with our leader and epoch."""
        e = self.election
        msg.leader_id, msg.leader_epoch = e.leader_id, e.epoch
        self.out.append(Reply(token, msg))

    # -- the disk ------------------------------------------------------------------------------
    def _persist(self, st: ElectionState) -> None:
        if self.policy.forget_vote and st.voted_id >= 0 and st.leader_id < 0:
            self.election = st      # the bug: the vote lives only in memory
            return
        self.out.append(PersistElection(st))
        self.election = st

    @property
    def durable_end(self) -> int:
        """Records below this offset are on disk (fsynced, as SyncDone said)."""
        return self.durable.end

    def _sync(self) -> None:
        """fsync what was written (SyncLog); under ``no-fsync`` count it as stored at once."""
        end = self.log.end_offset
        if self.policy.no_fsync:
            if self.durable.advance(end):
                self._on_durable()
            return
        self.durable.asked(end)
        self.out.append(SyncLog(end))

    def _on_sync_done(self, ev: SyncDone) -> None:
        if self.durable.done(ev.end, self.log.end_offset):
            self._on_durable()

    def _truncated(self, offset: int) -> None:
        """The log was truncated to ``offset`` (already in memory): TruncateLog, and what
        was stored above it no longer is."""
        self.out.append(TruncateLog(offset))
        self.durable.truncated(offset)

    # -- transitions ------------------------------------------------------------------------------
    def _set_kind(self, kind: StateKind) -> None:
        old = self.kind
        if old is LEADER and kind is not LEADER:
            self._abandon_leadership()
        self.kind = kind
        self.gen += 1
        self._wake = True
        self._clear_deadline(FETCH)
        self.fetching = False
        self.out.append(StateChanged(old, kind, self.election))
        if kind is UNATTACHED and not self.is_voter:
            self._start_discovery()                 # KIP-853 observer: find the leader

    def become_unattached(self, epoch: int, voted_id: int = -1, voted_dir: str | None = None) -> None:
        """Persist and enter Unattached in ``epoch`` (optionally having voted).

        From Unattached, Prospective or Candidate the election timer keeps its
        remaining time, as Kafka's ``QuorumState.transitionToUnattached`` does;
        otherwise it starts afresh. Restarting it on every higher epoch let a
        voter whose log is behind, standing again and again, keep the
        up-to-date voters from ever standing (a livelock without Pre-Vote).
        """
        keep_timer = self.kind in (UNATTACHED, PROSPECTIVE, CANDIDATE)
        self._persist(ElectionState(epoch, -1, voted_id, voted_dir))
        self._set_kind(UNATTACHED)
        if not keep_timer or ELECTION not in self._want:
            self._set_deadline(ELECTION, self.now + self._election_timeout())

    def become_follower(self, epoch: int, leader_id: int) -> None:
        """Persist and enter Follower of ``leader_id`` in ``epoch``."""
        e = self.election
        voted, vdir = (e.voted_id, e.voted_directory_id) if epoch == e.epoch else (-1, None)
        self._persist(ElectionState(epoch, leader_id, voted, vdir))
        self._enter_follower()

    def _enter_follower(self) -> None:
        self._set_kind(FOLLOWER)
        self.has_fetched = False
        self._set_deadline(ELECTION, self.now + self.cfg.fetch_timeout_ms)
        self._start_fetching()

    def become_prospective(self) -> None:
        """Enter Prospective (not persisted) and send Pre-Votes; straight to Candidate without
        Pre-Vote (config ``pre_vote`` off, or the ``no-pre-vote`` switch)."""
        if not self.is_voter:
            return
        if not self.cfg.pre_vote or self.policy.no_pre_vote:
            self.become_candidate()
            return
        self._set_kind(PROSPECTIVE)
        self._set_deadline(ELECTION, self.now + self._election_timeout())
        self._start_election(pre_vote=True)

    def become_candidate(self) -> None:
        """Persist epoch+1 with a vote for ourselves and request votes."""
        self._persist(ElectionState(self.election.epoch + 1, -1, self.id, self.key.directory_id))
        self._set_kind(CANDIDATE)
        self._set_deadline(ELECTION, self.now + self._election_timeout())
        self._start_election(pre_vote=False)

    def observe(self, epoch: int, leader_id: int) -> bool:
        """React to the leader and epoch piggybacked on any request or response.

        A higher epoch moves us to Follower (leader known) or Unattached; a
        newly learned leader in our epoch makes a non-leader a Follower.
        Returns True if the state changed.
        """
        e = self.election
        if epoch > e.epoch:
            if leader_id >= 0 and leader_id != self.id:
                self.become_follower(epoch, leader_id)
            else:
                self.become_unattached(epoch)
            return True
        if (epoch == e.epoch and leader_id >= 0 and leader_id != self.id
                and self.kind is not LEADER and leader_id != e.leader_id):
            self.become_follower(epoch, leader_id)
            return True
        return False


#: Request message type -> handler(core, token, msg).
QuorumCore._request_handlers = {
    VoteRequest: QuorumCore._on_vote_request, BeginQuorumEpochRequest: QuorumCore._on_begin_quorum_epoch,
    EndQuorumEpochRequest: QuorumCore._on_end_quorum_epoch, FetchRequest: QuorumCore._on_fetch,
    AppendRequest: QuorumCore._on_append, ProposeRequest: QuorumCore._on_propose,
    KvWriteRequest: QuorumCore._on_kv_write, ReadRequest: QuorumCore._on_read, KvGetRequest: QuorumCore._on_kv_get,
    ReadIndexRequest: QuorumCore._on_read_index, DescribeQuorumRequest: QuorumCore._on_describe_quorum,
    AddVoterRequest: QuorumCore._on_add_voter, RemoveVoterRequest: QuorumCore._on_remove_voter,
    UpdateVoterRequest: QuorumCore._on_update_voter}
#: Type of a request we sent -> handler(core, Replied).
QuorumCore._reply_handlers = {
    VoteRequest: QuorumCore._on_vote_reply, FetchRequest: QuorumCore._on_fetch_reply,
    BeginQuorumEpochRequest: QuorumCore._on_epoch_reply, EndQuorumEpochRequest: QuorumCore._on_epoch_reply}
