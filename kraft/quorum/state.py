"""The quorum core's shared state: :class:`QuorumState`, the one object every role module of
kraft/quorum/ reads and writes.

The roles are functions over it (transitions.py, elections.py, leader.py, follower.py and
fetcher.py, disk.py, commit.py, read_index.py, requests.py, client_api.py,
voter_changes.py); :class:`kraft.quorum.core.QuorumCore` owns one and drives them. No role
keeps state of its own, so what a role reads of another is a field below, not an
attribute of a shared ``self``. Each field says its type and unit, which modules set it
and which read it ("all": every role module).
"""
from __future__ import annotations

import dataclasses
import random
from typing import Callable

from ..core.record_log import DurableEnd, RecordLog
from ..core.states import ElectionState, StateKind
from ..core.timers import DeadlineTimers
from ..core.unsafe import Unsafe
from ..rules.replicas import ReplicaTracker
from ..rules.voter_set import ReplicaKey, VoterHistory
from ..state_machines.kv import KvStateMachine
from ..state_machines.metadata_replay import MetadataReplay
from .config import QuorumConfig
from .pending import Parked, PendingRead, PendingWrite


@dataclasses.dataclass(slots=True, eq=False, repr=False)
class QuorumState(DeadlineTimers):
    """One replica's state: identity and environment, the step under way, its timers, the
    election, the log's durability and commit, and each role's bookkeeping.

    Built by :class:`kraft.quorum.core.QuorumCore` (``cfg``, ``policy``, ``id``, ``key``,
    ``log``, ``history``, ``rng``, ``wall_clock``, ``now``, ``durable``; every other field
    starts at its default). The timers are kraft/core/timers.py's: :meth:`set_deadline`,
    :meth:`clear_deadline`, :meth:`deadline`, :meth:`fired`, keyed by
    :class:`kraft.quorum.timer_keys.TimerKey`. Raises nothing itself.
    """

    # -- identity and environment (set by the core at construction) ---------------------------
    #: QuorumConfig: the settings (times in ms). Set: core (construction, ``reconfigure``). Read: all.
    cfg: QuorumConfig
    #: Unsafe: ``cfg.unsafe``, the policy of kraft/core/unsafe.py (the bugs switched on). Set: core,
    #: with ``cfg``. Read: transitions, elections, leader, disk, commit, read_index, core.
    policy: Unsafe
    #: int: this replica's node id. Read: core, transitions, elections, leader, fetcher.
    id: int
    #: ReplicaKey: (node id, directory id). Read: core, transitions, elections, leader, follower,
    #: fetcher, commit, read_index, client_api.
    key: ReplicaKey
    #: RecordLog: the records this replica holds, in memory (offsets). Appended: disk (the
    #: leader), follower (fetched records); truncated: follower. Read: all.
    log: RecordLog
    #: VoterHistory: the voter sets by offset (a listener of ``log``; ``history.latest`` is the
    #: set in effect, KIP-853). Read: all.
    history: VoterHistory
    #: random.Random (seeded): election jitter and back-off. Read: transitions, elections.
    rng: random.Random
    #: () -> int, wall-clock ms: DescribeQuorum's and AddVoter's timestamps. Read: leader,
    #: client_api, voter_changes.
    wall_clock: Callable[[], int]

    # -- the step under way ----------------------------------------------------------------------
    #: float, ms on the core's monotonic clock: the time of the step under way. Set: core (every
    #: step), kraft/core/timers.py (a firing timer's deadline). Read: all.
    now: float
    #: list of effects (kraft/core/events.py) of the step under way, in order. Appended: all;
    #: handed out and replaced by the core at the end of the step.
    out: list = dataclasses.field(default_factory=list)
    #: bool: parked Fetches must look again at the end of the step. Set: disk (append), commit,
    #: read_index, transitions. Read and cleared: core (then leader.wake_parked).
    wake: bool = False
    #: dict TimerKey -> float ms: the deadline wanted per timer. Set: kraft/core/timers.py through
    #: set_deadline / clear_deadline (all). Read: through deadline() (transitions, elections,
    #: disk, leader, requests); fired() (core).
    _want: dict = dataclasses.field(default_factory=dict)
    #: dict TimerKey -> float ms: the deadline the runtime holds per timer (a SetTimer was
    #: emitted). Set and read: kraft/core/timers.py only.
    _armed: dict = dataclasses.field(default_factory=dict)

    # -- the election (KIP-595, KIP-996) ---------------------------------------------------------
    #: ElectionState: epoch, leader, vote (quorum-state). Set: transitions (persist; every
    #: PersistElection), core (start). Read: all.
    election: ElectionState = dataclasses.field(default_factory=ElectionState)
    #: StateKind: Unattached, Prospective, Candidate, Leader, Follower or Resigned. Set:
    #: transitions. Read: all.
    kind: StateKind = StateKind.UNATTACHED
    #: int: bumped on every transition; a Send carries it and a stale reply (or a parked Fetch)
    #: is recognised by it. Set: transitions. Read: elections, leader, fetcher, follower.
    gen: int = 0
    #: set of node ids that granted this epoch's (pre-)vote. Set: elections. Read: elections.
    votes_granted: set = dataclasses.field(default_factory=set)
    #: set of node ids that rejected it. Set: elections. Read: elections.
    votes_rejected: set = dataclasses.field(default_factory=set)
    #: bool: a Follower fetched successfully from its leader in this epoch (it then refuses
    #: pre-votes, KIP-996). Set: follower (True), transitions and elections (False). Read: elections.
    has_fetched: bool = False

    # -- the log: durability and commit ----------------------------------------------------------
    #: DurableEnd: how much of the log is fsynced (offset ``durable.end``). Updated: disk. Read:
    #: disk, commit, fetcher, follower.
    durable: DurableEnd = dataclasses.field(default_factory=DurableEnd)
    #: int offset: the high watermark (records below it are committed). Set: commit (leader),
    #: follower (from Fetch responses). Read: all.
    hw: int = 0
    #: KvStateMachine: applied from committed records (kraft/state_machines/kv.py). Applied: commit. Read:
    #: commit, read_index, client_api; adapters.
    kv: KvStateMachine = dataclasses.field(default_factory=KvStateMachine)
    #: MetadataReplay: committed Metadata records (kraft/state_machines/metadata_replay.py). Applied: commit.
    #: Read: adapters (the controller, the simulator).
    metadata: MetadataReplay = dataclasses.field(default_factory=MetadataReplay)
    #: bool: the node is shutting down, writes are refused. Set: the adapter (kraft/runtime/raft.py).
    #: Read: client_api, voter_changes.
    stopping: bool = False

    # -- the leader --------------------------------------------------------------------------------
    #: ReplicaTracker: every fetching replica's progress (kraft/rules/replicas.py). Updated: leader
    #: (each Fetch); reset: transitions. Read: commit, read_index, leader, client_api,
    #: voter_changes.
    replicas: ReplicaTracker = dataclasses.field(default_factory=ReplicaTracker)
    #: int offset: the first record of this leader's epoch. Set: transitions. Read: commit,
    #: read_index, voter_changes.
    epoch_start: int = 0
    #: float ms: when this replica became leader. Set: transitions. Read: leader (check quorum).
    leader_since: float = 0.0
    #: dict node id -> float ms: when BeginQuorumEpoch was last sent to each voter. Set:
    #: leader; reset: transitions. Read: leader.
    begin_sent: dict = dataclasses.field(default_factory=dict)
    #: list of Parked: the Fetches held for news (long polling). Set and read: leader.
    parked: list[Parked] = dataclasses.field(default_factory=list)

    # -- the follower and the observer -------------------------------------------------------------
    #: int: the newest read round the leader sent us, echoed in our Fetches. Set: fetcher
    #: (reset), follower. Read: fetcher, follower.
    echo_round: int = 0
    #: bool: a Fetch to the leader is in flight. Set: fetcher (True), follower and transitions
    #: (False). Read: follower.
    fetching: bool = False
    #: int: the ``gen`` whose Fetch waits for an fsync before the next one (-1: none). Set:
    #: follower, fetcher (reset). Read: fetcher, follower.
    sync_gen: int = -1
    #: int: the next bootstrap server (or voter) an observer asks for the leader (round robin).
    #: Set and read: fetcher.
    discovery_i: int = 0

    # -- client requests ----------------------------------------------------------------------------
    #: dict last offset -> PendingWrite, in offset order: writes waiting for the high
    #: watermark. Added: client_api; answered, expired, failed: commit.
    pending: dict[int, PendingWrite] = dataclasses.field(default_factory=dict)
    #: int: the newest read round (grows for life; Raft §6.4 read-index). Set: read_index.
    #: Read: read_index, leader (Fetch responses carry it).
    read_round: int = 0
    #: dict expiry seq -> PendingRead, in round order: reads waiting for a majority's echo.
    #: Set and read: read_index.
    pending_reads: dict[int, PendingRead] = dataclasses.field(default_factory=dict)
    #: heap of (deadline ms, seq, "a" | "r", offset or None, timeout ms): when each waiting
    #: request expires. Pushed: requests (expire_in). Popped: client_api.
    expiry: list = dataclasses.field(default_factory=list)
    #: int: the last expiry seq handed out. Set and read: requests.
    expiry_seq: int = 0

    # -- the timers (kraft/core/timers.py), under the names the roles call ---------------------------------
    set_deadline = DeadlineTimers._set_deadline
    clear_deadline = DeadlineTimers._clear_deadline
    fired = DeadlineTimers._fired
