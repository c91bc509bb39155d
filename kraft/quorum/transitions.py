"""The quorum core's state transitions (Kafka's QuorumState: Unattached, Follower, Leader,
Resigned; Prospective and Candidate are elections.py's), the election state persisted
before them, and the epoch and leader every message piggybacks; functions over
:class:`kraft.quorum.state.QuorumState`.

Rule of persistence: a :class:`PersistElection` precedes the effects of the
transition it records (Unattached, voted, Follower, Candidate, Leader); Prospective
and Resigned are not persisted.
"""
from __future__ import annotations

from ..core.events import PersistElection, StateChanged
from ..core.states import ElectionState, StateKind
from .commit import fail_pending
from .disk import flush_now
from .fetcher import start_discovery, start_fetching
from .state import QuorumState
from .timer_keys import TimerKey

UNATTACHED, PROSPECTIVE, CANDIDATE = StateKind.UNATTACHED, StateKind.PROSPECTIVE, StateKind.CANDIDATE
LEADER, FOLLOWER = StateKind.LEADER, StateKind.FOLLOWER
ELECTION, LINGER, LEADER_CHECK, FETCH = TimerKey.ELECTION, TimerKey.LINGER, TimerKey.LEADER_CHECK, TimerKey.FETCH


def election_timeout(s: QuorumState) -> float:
    """Randomised in [T, 2T) (KIP-595), ms."""
    t = s.cfg.election_timeout_ms
    return t + s.rng.random() * t


def persist(s: QuorumState, st: ElectionState) -> None:
    """Take election state ``st`` and persist it (PersistElection), unless ``forget-vote``
    keeps a vote in memory only."""
    if s.policy.forget_vote and st.voted_id >= 0 and st.leader_id < 0:
        s.election = st      # the bug: the vote lives only in memory
        return
    s.out.append(PersistElection(st))
    s.election = st


def set_kind(s: QuorumState, kind: StateKind) -> None:
    """Enter ``kind`` (the election state is already taken): a leader's pending requests
    fail, stale replies and parked Fetches are told apart (``gen``), StateChanged."""
    old = s.kind
    if old is LEADER and kind is not LEADER:
        abandon_leadership(s)
    s.kind = kind
    s.gen += 1
    s.wake = True
    s.clear_deadline(FETCH)
    s.fetching = False
    s.out.append(StateChanged(old, kind, s.election))
    if kind is UNATTACHED and not s.history.latest.is_voter(s.key):
        start_discovery(s)                 # KIP-853 observer: find the leader


def start_in(s: QuorumState, kind: StateKind) -> None:
    """The first state after a start (from Unattached), with a fresh election timer."""
    s.kind = kind
    s.out.append(StateChanged(UNATTACHED, kind, s.election))
    s.set_deadline(ELECTION, s.now + election_timeout(s))


def become_unattached(s: QuorumState, epoch: int, voted_id: int = -1, voted_dir: str | None = None) -> None:
    """Persist and enter Unattached in ``epoch`` (optionally having voted).

    From Unattached, Prospective or Candidate the election timer keeps its
    remaining time, as Kafka's ``QuorumState.transitionToUnattached`` does;
    otherwise it starts afresh. Restarting it on every higher epoch let a
    voter whose log is behind, standing again and again, keep the
    up-to-date voters from ever standing (a livelock without Pre-Vote); the
    ``reset-election-timer`` switch brings that back.
    """
    keep_timer = s.kind in (UNATTACHED, PROSPECTIVE, CANDIDATE) and not s.policy.reset_election_timer
    persist(s, ElectionState(epoch, -1, voted_id, voted_dir))
    set_kind(s, UNATTACHED)
    if not keep_timer or s.deadline(ELECTION) is None:
        s.set_deadline(ELECTION, s.now + election_timeout(s))


def become_follower(s: QuorumState, epoch: int, leader_id: int) -> None:
    """Persist and enter Follower of ``leader_id`` in ``epoch``."""
    e = s.election
    voted, vdir = (e.voted_id, e.voted_directory_id) if epoch == e.epoch else (-1, None)
    persist(s, ElectionState(epoch, leader_id, voted, vdir))
    enter_follower(s)


def enter_follower(s: QuorumState) -> None:
    """Follower of the leader the election state names: fetch timeout, first Fetch."""
    set_kind(s, FOLLOWER)
    s.has_fetched = False
    s.set_deadline(ELECTION, s.now + s.cfg.fetch_timeout_ms)
    start_fetching(s)


def become_leader_state(s: QuorumState) -> None:
    """Enter Leader (the election state already names us): fresh replica progress, this
    epoch starts at the log end. The LeaderChange record is elections.py's."""
    set_kind(s, LEADER)
    s.clear_deadline(ELECTION)
    s.replicas.reset()
    s.epoch_start = s.log.end_offset
    s.leader_since = s.now
    s.begin_sent = {}


def abandon_leadership(s: QuorumState) -> None:
    """Leader no more: stop its timers, fsync what was appended, fail what waits."""
    s.clear_deadline(LINGER)
    s.clear_deadline(LEADER_CHECK)
    flush_now(s)
    fail_pending(s, "leadership lost before commit")


def observe(s: QuorumState, epoch: int, leader_id: int) -> bool:
    """React to the leader and epoch piggybacked on any request or response.

    A higher epoch moves us to Follower (leader known) or Unattached; a
    newly learned leader in our epoch makes a non-leader a Follower.
    Returns True if the state changed.
    """
    e = s.election
    if epoch > e.epoch:
        if leader_id >= 0 and leader_id != s.id:
            become_follower(s, epoch, leader_id)
        else:
            become_unattached(s, epoch)
        return True
    if (epoch == e.epoch and leader_id >= 0 and leader_id != s.id
            and s.kind is not LEADER and leader_id != e.leader_id):
        become_follower(s, epoch, leader_id)
        return True
    return False
