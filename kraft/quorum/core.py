"""The quorum core: one KRaft replica as a state machine without I/O (KIP-595, KIP-996,
KIP-853; etcd-io/raft's ``Step``/``Ready`` shape).

:class:`QuorumCore` owns the replica's state, one
:class:`kraft.quorum.state.QuorumState` (``core.state``: the ElectionState and StateKind,
the log in memory, the high watermark, the state machines, the timers and each role's
bookkeeping), and routes every event to the role that handles it. The roles are
functions over that state, one module each; a module imports only modules listed
before it here:

    requests, read_index, commit, fetcher, disk   (answers, reads, the high watermark,
                                                   outgoing Fetches, the log on disk)
    transitions                                   (Unattached, Follower, Leader, Resigned)
    leader, follower                              (both sides of replication)
    elections, client_api, voter_changes          (standing and voting; client requests)

The events it takes and the effects it returns are in kraft/core/events.py; the timer keys
are :class:`kraft.quorum.timer_keys.TimerKey`. Clock, randomness and wall clock are
injected, so the same events with the same clock readings and seed give the same
effects.
"""
from __future__ import annotations

import random
from typing import Callable

from ..core.events import Received, Replied, SyncDone, TimerFired
from ..core.record_log import DurableEnd, RecordLog
from ..core.states import ElectionState, StateKind
from ..rules.voter_set import ReplicaKey, VoterHistory, VoterSet
from .client_api import (on_append, on_describe_quorum, on_kv_get, on_kv_write, on_propose, on_read, on_read_index,
                         on_requests_timer)
from .client_messages import (AddVoterRequest, AppendRequest, DescribeQuorumRequest, KvGetRequest, KvWriteRequest,
                              ProposeRequest, ReadIndexRequest, ReadRequest, RemoveVoterRequest, UpdateVoterRequest)
from .commit import fail_pending, leader_epoch_committed
from .config import QuorumConfig
from .disk import flush_now, on_sync_done
from .elections import (become_candidate, become_leader, become_prospective, on_begin_quorum_epoch,
                        on_election_timer, on_end_quorum_epoch, on_epoch_reply, on_vote_reply, on_vote_request)
from .fetcher import start_discovery
from .follower import handle_fetch_response, on_fetch_reply, on_fetch_timer
from .leader import on_fetch, on_leader_timer, on_parked_timer, resign, wake_parked
from .messages import BeginQuorumEpochRequest, EndQuorumEpochRequest, FetchRequest, FetchResponse, VoteRequest
from .state import QuorumState
from .timer_keys import TimerKey
from .transitions import become_follower, become_leader_state, become_unattached, enter_follower, observe, start_in
from .voter_changes import on_add_voter, on_remove_voter, on_update_voter

UNATTACHED, RESIGNED = StateKind.UNATTACHED, StateKind.RESIGNED


class QuorumCore:
    """One KRaft replica without I/O.

    ``config`` (:class:`QuorumConfig`); ``log``: the records the replica holds (its
    disk's durable content at a restart); ``history``: the voter sets by offset (its
    bootstrap set: kraft/storage/bootstrap.py ``load_history``; the core attaches it to
    ``log``); ``clock() -> float`` ms, monotonic; ``wall_clock() -> int`` ms (for
    DescribeQuorum's timestamps); ``rng``: a seeded ``random.Random`` (election
    jitter). Then :meth:`start` with the persisted ElectionState, and :meth:`step`.

    ``state`` is the replica's :class:`QuorumState` (read it for the kind, the high
    watermark, the log...); ``id`` and ``cfg`` are also here, for the runtimes
    (change the settings with :meth:`reconfigure`).
    """

    def __init__(self, config: QuorumConfig, log_: RecordLog, history: VoterHistory, *,
                 clock: Callable[[], float], rng: random.Random,
                 wall_clock: Callable[[], int] | None = None):
        if history not in log_.listeners:
            for r in log_.records:
                history.on_append(r)
            log_.listeners.append(history)
        self.clock = clock
        self.id = config.node_id
        self.cfg = config
        self.state = QuorumState(cfg=config, policy=config.unsafe, id=config.node_id,
                                 key=ReplicaKey(config.node_id, config.directory_id), log=log_,
                                 history=history, rng=rng, wall_clock=wall_clock or (lambda: int(clock())),
                                 now=clock(), durable=DurableEnd(log_.end_offset))
        self.state.kv.decide_at_propose = self.state.policy.kv_cas_at_propose

    def reconfigure(self, config: QuorumConfig) -> None:
        """Take new settings (same node id) from the next step on."""
        s = self.state
        self.cfg = s.cfg = config
        s.policy = config.unsafe
        s.kv.decide_at_propose = s.policy.kv_cas_at_propose

    # -- views -------------------------------------------------------------------------
    @property
    def policy(self):
        """The :class:`kraft.core.unsafe.Unsafe` policy in force."""
        return self.state.policy

    @property
    def epoch(self) -> int:
        """The current epoch (persisted in quorum-state)."""
        return self.state.election.epoch

    @property
    def leader_id(self) -> int:
        """The leader of the current epoch, or -1 if unknown."""
        return self.state.election.leader_id

    @property
    def voters(self) -> VoterSet:
        """The voter set in effect (KIP-853: the log's latest VotersRecord, else the bootstrap set)."""
        return self.state.history.latest

    @property
    def is_voter(self) -> bool:
        """True iff this replica's key is in the current voter set."""
        s = self.state
        return s.history.latest.is_voter(s.key)

    @property
    def majority(self) -> int:
        """The current voter set's majority (``len // 2 + 1``)."""
        return self.state.history.latest.majority

    @property
    def durable_end(self) -> int:
        """Records below this offset are on disk (fsynced, as SyncDone said)."""
        return self.state.durable.end

    def deadline(self, key) -> float | None:
        """The deadline (ms) wanted for timer ``key`` (a :class:`TimerKey`), or None."""
        return self.state.deadline(key)

    def leader_epoch_committed(self) -> bool:
        """True iff this node is the leader and the first record of its epoch is committed."""
        return leader_epoch_committed(self.state)

    # -- driving -------------------------------------------------------------------------
    def step(self, event) -> list:
        """Handle one event (kraft/core/events.py); returns the effects to carry out, in order.
        Raises FatalError when an invariant breaks."""
        s = self.state
        s.now = self.clock()
        _HANDLERS[type(event)](s, event)
        return _drain(s)

    def call(self, fn: Callable, *args) -> tuple[object, list]:
        """Run ``fn(*args)`` (a transition such as :meth:`resign`) as one step; returns what it
        returned and the effects."""
        s = self.state
        s.now = self.clock()
        result = fn(*args)
        return result, _drain(s)

    def start(self, election: ElectionState) -> list:
        """Take the persisted ``election`` and pick the start state; returns the first effects.

        A node whose quorum-state names itself leader restarts Resigned in the same
        epoch (KAFKA-10527), unless the ``leader-restart`` switch is on.
        """
        s = self.state
        s.now = self.clock()
        s.election = election
        if election.leader_id == s.id:
            if s.policy.leader_restart:
                become_leader_state(s)     # the bug: no LeaderChange, same epoch
                on_leader_timer(s)
            else:
                start_in(s, RESIGNED)
        elif election.leader_id >= 0:
            enter_follower(s)
        else:
            start_in(s, UNATTACHED)
            if not s.history.latest.is_voter(s.key):
                start_discovery(s)
        return _drain(s)

    # -- transitions and actions, for :meth:`call` (the adapter's and tests') ----------------
    def become_unattached(self, epoch: int, voted_id: int = -1, voted_dir: str | None = None) -> None:
        """Persist and enter Unattached in ``epoch`` (kraft/quorum/transitions.py)."""
        become_unattached(self.state, epoch, voted_id, voted_dir)

    def become_follower(self, epoch: int, leader_id: int) -> None:
        """Persist and enter Follower of ``leader_id`` in ``epoch``."""
        become_follower(self.state, epoch, leader_id)

    def become_prospective(self) -> None:
        """Enter Prospective and send Pre-Votes (kraft/quorum/elections.py)."""
        become_prospective(self.state)

    def become_candidate(self) -> None:
        """Persist epoch+1 with a vote for ourselves and request votes."""
        become_candidate(self.state)

    def become_leader(self) -> None:
        """Persist leadership of the current epoch, append LeaderChange, send BeginQuorumEpoch."""
        become_leader(self.state)

    def resign(self, reason: str) -> None:
        """Leader -> Resigned (not persisted): send EndQuorumEpoch to the voters."""
        resign(self.state, reason)

    def observe(self, epoch: int, leader_id: int) -> bool:
        """React to a leader and epoch seen in a message; True if the state changed."""
        return observe(self.state, epoch, leader_id)

    def flush_now(self) -> None:
        """fsync what was appended now, rather than after the append linger."""
        flush_now(self.state)

    def fail_pending(self, why: str) -> None:
        """Answer every waiting write (REQUEST_TIMED_OUT: ``why``) and read (refused)."""
        fail_pending(self.state, why)

    def handle_fetch_response(self, resp: FetchResponse) -> bool:
        """Apply one Fetch response as a follower; True to fetch again at once."""
        return handle_fetch_response(self.state, resp)


def _drain(s: QuorumState) -> list:
    """End of a step: answer the parked Fetches that have news; hand out the effects."""
    if s.wake:
        s.wake = False
        wake_parked(s)
    out, s.out = s.out, []
    return out


def _on_timer(s: QuorumState, ev: TimerFired) -> None:
    key = s.fired(ev)
    if key is not None:
        _TIMER_HANDLERS[key](s)


def _on_received(s: QuorumState, ev: Received) -> None:
    _REQUEST_HANDLERS[type(ev.msg)](s, ev.token, ev.msg)


def _on_replied(s: QuorumState, ev: Replied) -> None:
    _REPLY_HANDLERS[type(ev.request)](s, ev)


#: Event type -> handler(state, event).
_HANDLERS = {TimerFired: _on_timer, Received: _on_received, Replied: _on_replied, SyncDone: on_sync_done}
#: Timer key -> handler(state).
_TIMER_HANDLERS = {TimerKey.ELECTION: on_election_timer, TimerKey.LINGER: flush_now,
                   TimerKey.LEADER_CHECK: on_leader_timer, TimerKey.FETCH: on_fetch_timer,
                   TimerKey.PARKED: on_parked_timer, TimerKey.REQUESTS: on_requests_timer}
#: Request message type -> handler(state, token, msg).
_REQUEST_HANDLERS = {
    VoteRequest: on_vote_request, BeginQuorumEpochRequest: on_begin_quorum_epoch,
    EndQuorumEpochRequest: on_end_quorum_epoch, FetchRequest: on_fetch,
    AppendRequest: on_append, ProposeRequest: on_propose, KvWriteRequest: on_kv_write, ReadRequest: on_read,
    KvGetRequest: on_kv_get, ReadIndexRequest: on_read_index, DescribeQuorumRequest: on_describe_quorum,
    AddVoterRequest: on_add_voter, RemoveVoterRequest: on_remove_voter, UpdateVoterRequest: on_update_voter}
#: Type of a request we sent -> handler(state, Replied).
_REPLY_HANDLERS = {VoteRequest: on_vote_reply, FetchRequest: on_fetch_reply,
                   BeginQuorumEpochRequest: on_epoch_reply, EndQuorumEpochRequest: on_epoch_reply}
