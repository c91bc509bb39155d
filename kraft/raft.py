"""The KRaft replica: state machine, elections, replication and the client API.

Implements KIP-595 (Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch,
DescribeQuorum; pull-based replication; LeaderChange), KIP-996 (Prospective
state, Pre-Vote, Check Quorum) and KIP-853 (directory ids; at kraft.version 1
the voter set of the log, kraft/voter_set.py, observers, kraft/observer.py,
and voter changes, kraft/membership.py; the leader's per-replica progress is
in kraft/replicas.py). One asyncio
event loop drives everything: request handlers are coroutines, timers are
checked by :meth:`RaftNode.tick` every ``TICK_S``.

Rule of persistence: quorum-state is written *before* the in-memory
transition it records (Unattached, voted, Follower, Candidate, Leader);
Prospective and Resigned are not persisted.

Every node feeds its committed records, in offset order, to the key-value
state machine (:mod:`kraft.kv`) whenever its high watermark advances; the
KvWrite/KvGet requests are served by :mod:`kraft.kv_service` on top of
:meth:`RaftNode.append_and_commit` and :meth:`RaftNode.read_index`.
"""
from __future__ import annotations

import asyncio
import logging
import random
import time

from . import api, errors
from .bootstrap import load_history
from .client import ClientError, KraftClient
from .config import NodeConfig
from .high_watermark import end_quorum_backoff_ms, majority_position, next_high_watermark
from .kv import KvStateMachine
from .log import Log
from .log_service import LogService
from .membership import should_resign
from .metadata_replay import MetadataReplay
from .meta import Meta
from .observer import Discovery, discovery_targets, learn_endpoints, learn_leader_endpoint
from .quorum_state import ElectionState, read_state, write_state
from .quorum_view import QuorumView
from .records import DATA, LEADER_CHANGE, Record
from .replicas import ReplicaTracker
from .rpc import InvalidRequest, Refused, field  # noqa: F401 - re-exported (server, kv_service, tests)
from .states import StateKind
from .voter_set import ReplicaKey, addressed_to
from .voting import grant_pre_vote, grant_vote, is_up_to_date

log = logging.getLogger("kraft.raft")

TICK_S = 0.01
#: Append linger: how long the leader batches appends before one fsync (s).
APPEND_LINGER_S = 0.002
HW_CHECKPOINT_INTERVAL_S = 0.2
NO_FSYNC_WRITE_INTERVAL_S = 1.0


class FatalError(RuntimeError):
    """An invariant broke (e.g. truncation below the high watermark): the node stops."""


class RaftNode(QuorumView):
    """One KRaft replica. Create, then ``await start()``; ``tick()`` runs the timers.

    ``cfg`` is the node config, ``meta`` its data dir identity. Raises
    OSError / QuorumStateError from :meth:`start` when the data dir is bad.
    """

    def __init__(self, cfg: NodeConfig, meta: Meta):
        self.cfg = cfg
        self.meta = meta
        self.id = cfg.node_id
        self.cluster_id = meta.cluster_id
        self.rng = random.Random(cfg.seed)
        self.voter_history = load_history(cfg.data_dir, cfg.voters)   # KIP-853 voter sets by offset
        self.log = Log(cfg.data_dir / "log", segment_bytes=cfg.segment_bytes,
                       fsync="no-fsync" not in cfg.unsafe)
        self.log.listeners.append(self.voter_history)
        self.known_endpoints: dict[int, tuple[str, int]] = {}   # learned from BeginQuorumEpoch / Fetch
        self._discovery = Discovery(self)
        self.election = ElectionState()
        self.kind = StateKind.UNATTACHED
        self.hw = 0
        self._gen = 0                     # bumped on every transition; stale tasks check it
        self._deadline = 0.0              # election / fetch timer for the current state
        self._has_fetched = False         # Follower: fetched successfully in this epoch
        self._votes_granted: set[int] = set()
        self._votes_rejected: set[int] = set()
        self.replicas = ReplicaTracker()     # Leader: every fetching replica's progress
        self._epoch_start = 0
        self._leader_since = 0.0
        self._begin_sent: dict[int, float] = {}
        self._pending_appends: dict[int, asyncio.Future] = {}
        self._plain_appends: set[int] = set()   # pending offsets from Append (not KvWrite)
        self._pending_reads: list[tuple[int, asyncio.Future]] = []   # (read round, answer)
        self.kv = KvStateMachine()           # applied from committed records (kraft/kv.py)
        self.metadata = MetadataReplay()     # committed Metadata records (kraft/metadata_replay.py)
        self._read_round = 0                 # Leader: the newest read-index round (grows for life)
        self._echo_round = 0                 # Follower: the newest round the leader sent us
        self._flush_handle: asyncio.Handle | None = None
        self._wakeup = asyncio.Event()
        self._tasks: set[asyncio.Task] = set()
        self._fetch_client: KraftClient | None = None
        self._last_hw_checkpoint = (-1, 0.0)
        self._last_buffer_write = 0.0
        self.stopping = False
        self.fatal: FatalError | None = None   # set when an invariant broke; the node stops

    # -- helpers ---------------------------------------------------------------
    @property
    def epoch(self) -> int:
        """The current epoch (persisted in quorum-state)."""
        return self.election.epoch

    @property
    def leader_id(self) -> int:
        """The leader of the current epoch, or -1 if unknown."""
        return self.election.leader_id

    def _now(self) -> float:
        return time.monotonic()

    @staticmethod
    def wall_ms() -> int:
        """Wall-clock time in ms."""
        return int(time.time() * 1000)

    def _election_timeout_s(self) -> float:
        """Randomised in [T, 2T) (KIP-595)."""
        t = self.cfg.election_timeout_ms / 1000.0
        return t + self.rng.random() * t

    def _spawn(self, coro) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            if isinstance(exc, FatalError):
                log.critical("fatal: %s", exc)
                self.fatal = exc
            else:
                log.error("task failed: %r", exc, exc_info=exc)

    def _notify(self) -> None:
        """Wake every parked Fetch (new records, a new high watermark, or a read-index round)."""
        self._wakeup.set()
        self._wakeup = asyncio.Event()

    def _persist(self, st: ElectionState) -> None:
        if "forget-vote" in self.cfg.unsafe and st.voted_id >= 0 and st.leader_id < 0:
            self.election = st      # the bug: the vote lives only in memory
            return
        write_state(self.cfg.data_dir, st)
        self.election = st

    def _set_kind(self, kind: StateKind) -> None:
        old = self.kind
        if old is StateKind.LEADER and kind is not StateKind.LEADER:
            self._abandon_leadership()
        self.kind = kind
        self._gen += 1
        self._notify()
        log.info("state %s -> %s epoch=%d leader=%d voted=%d", old.value, kind.value,
                 self.epoch, self.leader_id, self.election.voted_id)

    # -- start-up ----------------------------------------------------------------
    async def start(self) -> None:
        """Open the log (cutting a torn tail), read quorum-state, pick the start state.

        A node whose quorum-state names itself leader restarts Resigned in the
        same epoch (KAFKA-10527), unless the ``leader-restart`` switch is on.
        """
        self.log.open()
        if self.log.recovered_bytes:
            log.warning("recovery cut %d bytes of torn log tail", self.log.recovered_bytes)
        self.election = read_state(self.cfg.data_dir)
        log.info("starting node %d directory %s epoch %d leader %d voted %d log end offset %d",
                 self.id, self.meta.directory_id, self.epoch, self.leader_id,
                 self.election.voted_id, self.log.end_offset)
        if self.leader_id == self.id:
            if "leader-restart" in self.cfg.unsafe:
                self._become_leader_state()
            else:
                self.kind = StateKind.RESIGNED
                self._deadline = self._now() + self._election_timeout_s()
        elif self.leader_id >= 0:
            self._enter_follower()
        else:
            self.kind = StateKind.UNATTACHED
            self._deadline = self._now() + self._election_timeout_s()

    async def close(self) -> None:
        """Cancel tasks, answer pending requests, flush and close the log."""
        self.stopping = True
        self._fail_pending("node shutting down")
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        for t in list(self._tasks):
            t.cancel()
        if self._fetch_client:
            await self._fetch_client.close()
        try:
            self.log.flush()
        finally:
            self.log.close()

    # -- transitions -------------------------------------------------------------
    def become_unattached(self, epoch: int, voted_id: int = -1, voted_dir: str | None = None) -> None:
        """Persist and enter Unattached in ``epoch`` (optionally having voted).

        From Unattached, Prospective or Candidate the election timer keeps its
        remaining time, as Kafka's ``QuorumState.transitionToUnattached`` does;
        otherwise it starts afresh. Restarting it on every higher epoch let a
        voter whose log is behind, standing again and again, keep the
        up-to-date voters from ever standing (a livelock without Pre-Vote).
        """
        keep_timer = self.kind in (StateKind.UNATTACHED, StateKind.PROSPECTIVE, StateKind.CANDIDATE)
        self._persist(ElectionState(epoch, -1, voted_id, voted_dir))
        self._set_kind(StateKind.UNATTACHED)
        if not keep_timer:
            self._deadline = self._now() + self._election_timeout_s()

    def become_follower(self, epoch: int, leader_id: int) -> None:
        """Persist and enter Follower of ``leader_id`` in ``epoch``."""
        voted = self.election.voted_id if epoch == self.epoch else -1
        vdir = self.election.voted_directory_id if epoch == self.epoch else None
        self._persist(ElectionState(epoch, leader_id, voted, vdir))
        self._enter_follower()

    def _enter_follower(self) -> None:
        self._set_kind(StateKind.FOLLOWER)
        self._has_fetched = False
        self._deadline = self._now() + self.cfg.fetch_timeout_ms / 1000.0
        self._spawn(self._fetch_loop(self._gen))

    def become_prospective(self) -> None:
        """Enter Prospective (not persisted) and send Pre-Votes; straight to Candidate without pre_vote."""
        if not self.is_voter:
            return
        if not self.cfg.pre_vote:
            self.become_candidate()
            return
        self._set_kind(StateKind.PROSPECTIVE)
        self._deadline = self._now() + self._election_timeout_s()
        self._start_election(pre_vote=True)

    def become_candidate(self) -> None:
        """Persist epoch+1 with a vote for ourselves and request votes."""
        self._persist(ElectionState(self.epoch + 1, -1, self.id, self.meta.directory_id))
        self._set_kind(StateKind.CANDIDATE)
        self._deadline = self._now() + self._election_timeout_s()
        self._start_election(pre_vote=False)

    def become_leader(self) -> None:
        """Persist leadership of the current epoch, append LeaderChange, send BeginQuorumEpoch."""
        self._persist(ElectionState(self.epoch, self.id, self.id, self.meta.directory_id))
        self._become_leader_state()
        granted = sorted(self._votes_granted | {self.id})
        self._append(Record(self.log.end_offset, self.epoch, LEADER_CHANGE,
                            {"LeaderId": self.id, "Voters": self.voters.ids, "GrantingVoters": granted}))
        for rtype, payload in self.voter_history.start_of_epoch_records():
            self._append(Record(self.log.end_offset, self.epoch, rtype, payload))
        self._flush_now()
        for vid in self.voters.ids:
            if vid != self.id:
                self._send_begin_quorum(vid)

    def _become_leader_state(self) -> None:
        self._set_kind(StateKind.LEADER)
        self.replicas.reset()
        self._epoch_start = self.log.end_offset
        self._leader_since = self._now()
        self._begin_sent = {}

    def resign(self, reason: str) -> None:
        """Leader -> Resigned (not persisted): send EndQuorumEpoch to the voters."""
        if self.kind is not StateKind.LEADER:
            return
        log.warning("resigning leadership of epoch %d: %s", self.epoch, reason)
        successors = self.replicas.successors(self.voters, self.key)
        self._set_kind(StateKind.RESIGNED)
        self._deadline = self._now() + self._election_timeout_s()
        for vid in successors:
            self._spawn(self._send_end_quorum(vid, successors, self._gen))

    def _abandon_leadership(self) -> None:
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        self._flush_now()
        self._fail_pending("leadership lost before commit")

    def _fail_pending(self, why: str) -> None:
        for fut in self._pending_appends.values():
            if not fut.done():
                fut.set_exception(ClientError("REQUEST_TIMED_OUT", why))
        self._pending_appends.clear()
        self._plain_appends.clear()
        for _, fut in self._pending_reads:
            if not fut.done():
                fut.set_exception(ClientError("NOT_LEADER_OR_FOLLOWER", why))
        self._pending_reads.clear()

    def observe(self, epoch: int, leader_id: int) -> bool:
        """React to the leader and epoch piggybacked on any request or response.

        A higher epoch moves us to Follower (leader known) or Unattached; a
        newly learned leader in our epoch makes a non-leader a Follower.
        Returns True if the state changed.
        """
        if epoch > self.epoch:
            if leader_id >= 0 and leader_id != self.id:
                self.become_follower(epoch, leader_id)
            else:
                self.become_unattached(epoch)
            return True
        if (epoch == self.epoch and leader_id >= 0 and leader_id != self.id
                and self.kind is not StateKind.LEADER and leader_id != self.leader_id):
            self.become_follower(epoch, leader_id)
            return True
        return False

    # -- timers ------------------------------------------------------------------
    def tick(self) -> None:
        """Run whatever timer has expired for the current state."""
        now = self._now()
        k = self.kind
        voter = self.is_voter
        if k is StateKind.UNATTACHED and voter and now >= self._deadline:
            self.become_prospective()
        elif k is StateKind.UNATTACHED and not voter:
            self._discovery.maybe_start()          # KIP-853 observer: find the leader
        elif k is StateKind.FOLLOWER and now >= self._deadline and (voter or discovery_targets(self)):
            log.info("fetch timeout: no successful Fetch from leader %d in %d ms",
                     self.leader_id, self.cfg.fetch_timeout_ms)
            if voter:
                self.become_prospective()
            else:                                  # an observer looks for the leader again
                self.become_unattached(self.epoch, self.election.voted_id, self.election.voted_directory_id)
        elif k is StateKind.PROSPECTIVE and (now >= self._deadline or not voter):
            self._prospective_lost("pre-vote timed out" if voter else "no longer a voter")
        elif k is StateKind.CANDIDATE and not voter:
            self.become_unattached(self.epoch, self.election.voted_id, self.election.voted_directory_id)
        elif k is StateKind.CANDIDATE and now >= self._deadline:
            self.become_prospective()
        elif k is StateKind.RESIGNED and now >= self._deadline:
            self.become_unattached(self.epoch + 1)
        elif k is StateKind.LEADER:
            self._leader_tick(now)
        self._background(now)

    def _prospective_lost(self, why: str) -> None:
        log.info("pre-vote lost in epoch %d: %s", self.epoch, why)
        if "vote-after-failed-prevote" in self.cfg.unsafe and self.is_voter:
            self.become_candidate()     # the bug: KIP-996's rejected alternative
            return
        if self.leader_id >= 0:
            self._enter_follower()
        else:
            self._set_kind(StateKind.UNATTACHED)
            self._deadline = self._now() + self._election_timeout_s()

    def _leader_tick(self, now: float) -> None:
        window = 1.5 * self.cfg.fetch_timeout_ms / 1000.0
        voters, me = self.voters, self.key
        if (self.cfg.check_quorum and not (len(voters) == 1 and self.is_voter)
                and now - self._leader_since >= window):
            live = self.replicas.live_voters(voters, me, now, window)
            if live < self.majority:
                self.resign(f"check quorum: only {live} of {len(voters)} voters fetched "
                            f"in the last {window * 1000:.0f} ms")
                return
        if should_resign(voters, me, self.hw, self.voter_history.last_offset):
            self.resign("removed from the voter set, and the removal is committed")
            return
        resend = self.cfg.fetch_timeout_ms / 2000.0
        for vid, p in self.replicas.others(voters, me):
            last = p.last_fetch if p else float("-inf")
            if now - last > resend and now - self._begin_sent.get(vid, float("-inf")) > resend:
                self._send_begin_quorum(vid)
        self._complete_reads()

    def _background(self, now: float) -> None:
        if not self.log.fsync and now - self._last_buffer_write > NO_FSYNC_WRITE_INTERVAL_S:
            self._last_buffer_write = now
            self.log.write_out_buffer()
        last_hw, last_t = self._last_hw_checkpoint
        if self.hw != last_hw and now - last_t > HW_CHECKPOINT_INTERVAL_S:
            self._last_hw_checkpoint = (self.hw, now)
            try:
                (self.cfg.data_dir / "high-watermark").write_text(str(self.hw))
            except OSError as e:
                log.warning("cannot write high-watermark checkpoint: %s", e)

    # -- elections ---------------------------------------------------------------
    def _start_election(self, pre_vote: bool) -> None:
        self._votes_granted = {self.id}
        self._votes_rejected = set()
        if self._check_votes(pre_vote):
            return
        body = {"CandidateEpoch": self.epoch, "CandidateId": self.id,
                "CandidateDirectoryId": self.meta.directory_id,
                "LastOffsetEpoch": self.log.last_epoch, "LastOffset": self.log.end_offset,
                "PreVote": pre_vote}
        for v in self.voters.voters:
            if v.id != self.id:
                self._spawn(self._request_vote(v.id, dict(body, VoterId=v.id, VoterDirectoryId=v.directory_id),
                                               pre_vote, self._gen))

    async def _rpc(self, vid: int, key: int, body: dict) -> dict | None:
        """One request to voter ``vid`` on a connection of its own; None if it failed."""
        client = self._peer(vid, self.cfg.request_timeout_ms)
        try:
            return await client.request(key, body)
        except ClientError as e:
            log.debug("%s to %d failed: %s", api.NAMES[key], vid, e)
            return None
        finally:
            await client.close()

    async def _request_vote(self, vid: int, body: dict, pre_vote: bool, gen: int) -> None:
        resp = await self._rpc(vid, api.VOTE, body)
        if resp is None or gen != self._gen or self.observe(resp.get("LeaderEpoch", -1), resp.get("LeaderId", -1)):
            return
        if resp.get("ErrorCode") == errors.NONE and resp.get("VoteGranted") is True:
            self._votes_granted.add(vid)
        else:
            self._votes_rejected.add(vid)
        self._check_votes(pre_vote)

    def _check_votes(self, pre_vote: bool) -> bool:
        if len(self._votes_granted & set(self.voters.ids)) >= self.majority:
            if pre_vote:
                self.become_candidate()
            else:
                self.become_leader()
            return True
        if len(self._votes_rejected) >= len(self.voters) - self.majority + 1:
            if pre_vote:
                self._prospective_lost("a majority rejected the pre-vote")
            else:
                # election lost: back off a random time before the next pre-vote
                self._deadline = self._now() + self.rng.random() * self.cfg.election_backoff_max_ms / 1000.0
            return True
        return False

    def _send_begin_quorum(self, vid: int) -> None:
        self._begin_sent[vid] = self._now()
        self._spawn(self._send_one(vid, api.BEGIN_QUORUM_EPOCH, {
            "LeaderId": self.id, "LeaderEpoch": self.epoch, "VoterId": vid,
            "VoterDirectoryId": v.directory_id if (v := self.voters.get(vid)) else None,
            "LeaderEndpoint": f"{self.cfg.listen_host}:{self.cfg.listen_port}"}, self._gen))

    async def _send_end_quorum(self, vid: int, successors: list[int], gen: int) -> None:
        await self._send_one(vid, api.END_QUORUM_EPOCH, {
            "ReplicaId": self.id, "LeaderId": self.id, "LeaderEpoch": self.epoch,
            "PreferredSuccessors": successors}, gen)

    async def _send_one(self, vid: int, key: int, body: dict, gen: int) -> None:
        resp = await self._rpc(vid, key, body)
        if resp is not None and gen == self._gen and resp.get("LeaderEpoch", -1) > self.epoch:
            self.observe(resp["LeaderEpoch"], resp.get("LeaderId", -1))

    # -- replication: follower side ------------------------------------------------
    async def _fetch_loop(self, gen: int) -> None:
        leader = self.leader_id
        client = self._peer(leader, self.cfg.fetch_max_wait_ms + self.cfg.request_timeout_ms)
        self._echo_round = 0
        try:
            while gen == self._gen and not self.stopping:
                try:
                    resp = await client.request(api.FETCH, self._fetch_body())
                except ClientError:
                    await asyncio.sleep(self.cfg.retry_backoff_ms / 1000.0)
                    continue
                if gen != self._gen:
                    return
                if not self._handle_fetch_response(resp):
                    await asyncio.sleep(self.cfg.retry_backoff_ms / 1000.0)
        finally:
            await client.close()

    def _fetch_body(self) -> dict:
        return {"ReplicaId": self.id, "ReplicaDirectoryId": self.meta.directory_id,
                "ReplicaEpoch": self.epoch, "FetchOffset": self.log.end_offset,
                "LastFetchedEpoch": self.log.last_epoch, "MaxWaitMs": self.cfg.fetch_max_wait_ms,
                "ReadRound": self._echo_round}

    def _handle_fetch_response(self, resp: dict) -> bool:
        """Apply one Fetch response; returns True to fetch again at once."""
        learn_endpoints(self, resp)
        code = resp.get("ErrorCode", errors.UNKNOWN_SERVER_ERROR)
        epoch, leader = resp.get("LeaderEpoch", -1), resp.get("LeaderId", -1)
        if self.observe(epoch, leader):
            return False
        if code != errors.NONE:
            log.debug("Fetch error %s", errors.name(code))
            return False
        if epoch < self.epoch:
            return False
        rr = resp.get("ReadRound")
        if isinstance(rr, int) and not isinstance(rr, bool) and rr > self._echo_round:
            self._echo_round = rr     # echoed in our next Fetch: it confirms the leader's reads
        div = resp.get("DivergingEpoch")
        if div:
            self._truncate_diverging(div["Epoch"], div["EndOffset"])
            self._fetched_ok()
            return True
        recs = [Record.from_wire(r) for r in resp.get("Records", [])]
        for r in recs:
            if r.offset == self.log.end_offset:
                self.log.append(r)
        self.log.flush()      # durable before the next Fetch reports it
        hw = min(resp.get("HighWatermark", 0), self.log.end_offset)
        if hw > self.hw:
            self.hw = hw
            self._apply_committed()
        self._fetched_ok()
        return True

    def _fetched_ok(self) -> None:
        self._has_fetched = True
        self._deadline = self._now() + self.cfg.fetch_timeout_ms / 1000.0

    def _truncate_diverging(self, epoch: int, end_offset: int) -> None:
        """KIP-595: truncate to the end of the diverging epoch (never below the high watermark)."""
        local_epoch, local_end = self.log.end_offset_for_epoch(epoch)
        target = min(local_end, end_offset) if local_epoch == epoch else local_end
        if target < self.hw:
            raise FatalError(f"leader asked for truncation to offset {target} (diverging epoch "
                             f"{epoch} end {end_offset}), below the high watermark {self.hw}")
        removed = self.log.truncate_to(target)
        log.info("DivergingEpoch(epoch=%d, end=%d): truncated %d records to offset %d",
                 epoch, end_offset, removed, target)

    # -- replication: leader side ------------------------------------------------
    def _append(self, r: Record) -> None:
        self.log.append(r)
        self._notify()

    def _flush_now(self) -> None:
        self._flush_handle = None
        self.log.flush()
        if self.kind is StateKind.LEADER:
            self._update_hw()
            if "ack-before-commit" in self.cfg.unsafe:   # the bug: Append acks on local disk
                self._answer_appends(self.log.flushed_end, only=self._plain_appends)

    def _answer_appends(self, below: int, only: set[int] | None = None) -> None:
        """Answer the pending appends at offsets below ``below`` (those in ``only``, if
        given) with (offset, epoch)."""
        for o in sorted(o for o in self._pending_appends if o < below and (only is None or o in only)):
            fut = self._pending_appends.pop(o)
            self._plain_appends.discard(o)
            if not fut.done():
                fut.set_result((o, self.log.records[o].epoch))

    def _schedule_flush(self) -> None:
        if self._flush_handle is None:
            self._flush_handle = asyncio.get_running_loop().call_later(APPEND_LINGER_S, self._flush_now)

    def _update_hw(self) -> None:
        positions = self.replicas.voter_values(self.voters, self.key, self.log.flushed_end, "end_offset", -1)
        if not positions:
            return
        new = next_high_watermark(self.hw, positions, self._epoch_start,
                                  require_epoch_commit="early-high-watermark" not in self.cfg.unsafe,
                                  quorum_off_by_one="commit-minority" in self.cfg.unsafe)
        if new > self.hw:
            self.hw = new
            self._apply_committed()     # before answering appends: a KvWrite needs its result
            self._notify()
            self._answer_appends(new)
            self._complete_reads()

    def _apply_committed(self) -> None:
        """Apply the newly committed records (up to the high watermark) to the kv state
        machine and the metadata image."""
        self.kv.apply_committed(self.log, self.hw)
        self.metadata.apply_committed(self.log, self.hw)

    def _epoch_committed(self) -> bool:
        return self.hw > self._epoch_start or "early-high-watermark" in self.cfg.unsafe

    def leader_epoch_committed(self) -> bool:
        """True iff this node is the leader and the first record of its epoch is committed
        (so every record committed by earlier leaders is below the high watermark, KIP-595)."""
        return self.kind is StateKind.LEADER and self.hw > self._epoch_start

    def _complete_reads(self) -> None:
        """Read-index (Raft §6.4): answer a read of round r once a majority (ourselves
        included) has echoed round r or later in a Fetch.

        A Fetch that echoes r was sent after its replica received a response carrying
        r, so after the read arrived: the replica still followed us then. Counting a
        Fetch by its arrival time instead is unsafe: a Fetch sent before a partition,
        held by TCP and delivered after the heal, would confirm a deposed leader.
        """
        if not self._pending_reads or not self._epoch_committed():
            return
        rounds = self.replicas.voter_values(self.voters, self.key, self._read_round, "read_round", 0)
        confirmed = majority_position(rounds) if rounds else 0
        keep = []
        for r, fut in self._pending_reads:
            if fut.done():
                continue
            if confirmed >= r:
                fut.set_result(self.hw)
            else:
                keep.append((r, fut))
        self._pending_reads = keep

    async def handle_fetch(self, body: dict) -> dict:
        """KIP-595 Fetch handling (leader side), with long polling up to MaxWaitMs."""
        rid = field(body, "ReplicaId", int)
        repoch = field(body, "ReplicaEpoch", int)
        offset = field(body, "FetchOffset", int)
        last_epoch = field(body, "LastFetchedEpoch", int)
        max_wait = min(field(body, "MaxWaitMs", int, optional=True) or 0, 10_000)
        echoed = field(body, "ReadRound", int, optional=True) or 0
        if offset < 0 or last_epoch < 0 or last_epoch > repoch:
            raise InvalidRequest(f"FetchOffset {offset} / LastFetchedEpoch {last_epoch} out of range")
        err = self._epoch_error(repoch)
        if err is not None:
            return {"ErrorCode": err}
        if self.kind is not StateKind.LEADER:
            return {"ErrorCode": errors.NOT_LEADER_OR_FOLLOWER}
        if (offset > 0 or last_epoch > 0) and "no-fetch-validation" not in self.cfg.unsafe:
            e, end = self.log.end_offset_for_epoch(last_epoch)
            if e != last_epoch or end < offset:
                return {"ErrorCode": errors.NONE, "HighWatermark": self.hw, "LogStartOffset": 0,
                        "DivergingEpoch": {"Epoch": e, "EndOffset": end}, "Records": [],
                        "ReadRound": self._read_round}
        now = self._now()
        rdir = body.get("ReplicaDirectoryId")
        self.replicas.on_fetch(self.voters, ReplicaKey(rid, rdir if isinstance(rdir, str) else None), offset,
                               echoed, self._read_round, self.log.end_offset, now, self.wall_ms())
        self._update_hw()          # only voters count (kraft/replicas.py)
        self._complete_reads()
        gen, hw_seen, round_seen = self._gen, self.hw, self._read_round
        deadline = now + max_wait / 1000.0
        while (self._gen == gen and offset >= self.log.end_offset and self.hw == hw_seen
               and self._read_round == round_seen):
            remaining = deadline - self._now()
            if remaining <= 0:
                break
            try:
                await asyncio.wait_for(self._wakeup.wait(), remaining)
            except TimeoutError:
                break
        if self._gen != gen:
            return {"ErrorCode": errors.NOT_LEADER_OR_FOLLOWER}
        recs = self.log.read(offset, self.log.end_offset, self.cfg.fetch_max_records)
        return {"ErrorCode": errors.NONE, "HighWatermark": self.hw, "LogStartOffset": 0,
                "CurrentLeader": {"LeaderId": self.id, "LeaderEpoch": self.epoch},
                "Records": [r.to_wire() for r in recs], "ReadRound": self._read_round}

    def _epoch_error(self, req_epoch: int) -> int | None:
        if req_epoch < self.epoch:
            return errors.FENCED_LEADER_EPOCH
        if req_epoch > self.epoch:
            return errors.UNKNOWN_LEADER_EPOCH
        return None

    # -- election RPCs (receiver side) ---------------------------------------------
    async def handle_vote(self, body: dict) -> dict:
        """KIP-595 Vote / KIP-996 Pre-Vote handling."""
        cepoch = field(body, "CandidateEpoch", int)
        cid = field(body, "CandidateId", int)
        last_epoch = field(body, "LastOffsetEpoch", int)
        last_offset = field(body, "LastOffset", int)
        pre_vote = bool(field(body, "PreVote", bool, optional=True))
        cdir = body.get("CandidateDirectoryId")
        if self.voter_history.kraft_version == 0:       # static voters: both must be voters
            bad = self.voters.get(cid) is None or not self.is_voter
        else:   # KIP-853: addressed to our key; and (ours) no vote for a voter id under another directory
            bad = (not addressed_to(self.key, body.get("VoterId"), body.get("VoterDirectoryId"))
                   or self.voters.conflicts(ReplicaKey(cid, cdir if isinstance(cdir, str) else None)))
        if bad:
            return {"ErrorCode": errors.INVALID_VOTER_KEY, "VoteGranted": False}
        if cepoch < self.epoch:
            return {"ErrorCode": errors.FENCED_LEADER_EPOCH, "VoteGranted": False}
        up = is_up_to_date(last_epoch, last_offset, self.log.last_epoch, self.log.end_offset,
                           compare_offsets="vote-ignores-offset" not in self.cfg.unsafe)
        if pre_vote:
            if cepoch > self.epoch:
                granted = up            # no transition on a pre-vote
            else:
                granted = grant_pre_vote(self.kind, self._has_fetched, up)
            return {"ErrorCode": errors.NONE, "VoteGranted": granted, "PreVote": True}
        if cepoch > self.epoch:
            self.become_unattached(cepoch)
        granted = grant_vote(self.kind, self.election.voted_id, self.leader_id, cid, up)
        if granted and self.election.voted_id != cid:
            self._persist(ElectionState(self.epoch, -1, cid, cdir if isinstance(cdir, str) else None))
            self._deadline = self._now() + self._election_timeout_s()
            log.info("voted for %d in epoch %d", cid, self.epoch)
        return {"ErrorCode": errors.NONE, "VoteGranted": granted, "PreVote": False}

    async def handle_begin_quorum_epoch(self, body: dict) -> dict:
        """KIP-595 BeginQuorumEpoch: a new leader announces itself."""
        lid = field(body, "LeaderId", int)
        lepoch = field(body, "LeaderEpoch", int)
        if lepoch < self.epoch:
            return {"ErrorCode": errors.FENCED_LEADER_EPOCH}
        if self.voter_history.kraft_version == 0 and self.voters.get(lid) is None:
            raise InvalidRequest(f"LeaderId {lid} is not a voter")
        if self.voter_history.kraft_version > 0 and not addressed_to(self.key, body.get("VoterId"),
                                                                     body.get("VoterDirectoryId")):
            return {"ErrorCode": errors.INVALID_VOTER_KEY}
        learn_leader_endpoint(self, lid, body.get("LeaderEndpoint"))
        if lepoch == self.epoch and self.kind is StateKind.LEADER and lid != self.id:
            log.critical("BeginQuorumEpoch from %d for epoch %d, which we lead", lid, lepoch)
            return {"ErrorCode": errors.INVALID_REQUEST}
        if not (lepoch == self.epoch and self.kind is StateKind.FOLLOWER and self.leader_id == lid):
            self.become_follower(lepoch, lid)
        return {"ErrorCode": errors.NONE}

    async def handle_end_quorum_epoch(self, body: dict) -> dict:
        """KIP-595 EndQuorumEpoch: the leader resigned; elect after the successor back-off."""
        lid = field(body, "LeaderId", int)
        lepoch = field(body, "LeaderEpoch", int)
        successors = field(body, "PreferredSuccessors", list)
        if lepoch < self.epoch:
            return {"ErrorCode": errors.FENCED_LEADER_EPOCH}
        if lepoch > self.epoch:
            self.become_unattached(lepoch)
        elif self.leader_id != lid:
            return {"ErrorCode": errors.NONE}   # stale: we already moved on in this epoch
        pos = successors.index(self.id) if self.id in successors else None
        delay = end_quorum_backoff_ms(pos, self.cfg.retry_backoff_ms, self.cfg.election_backoff_max_ms) / 1000.0
        if self.kind is StateKind.FOLLOWER:
            self._has_fetched = False     # our leader is gone: grant pre-votes again
        if self.kind in (StateKind.FOLLOWER, StateKind.UNATTACHED):
            self._deadline = min(self._deadline, self._now() + delay)
        log.info("EndQuorumEpoch from %d (epoch %d): successor position %s, electing in %d ms",
                 lid, lepoch, pos, delay * 1000)
        return {"ErrorCode": errors.NONE}

    def describe_quorum(self) -> dict:
        """KIP-595 DescribeQuorum (leader only)."""
        if self.kind is not StateKind.LEADER:
            return {"ErrorCode": errors.NOT_LEADER_OR_FOLLOWER}
        voters, observers = self.replicas.describe(self.voters, self.key, self.log.end_offset, self.wall_ms())
        return {"ErrorCode": errors.NONE, "HighWatermark": self.hw, "CurrentVoters": voters, "Observers": observers}

    # -- client API -----------------------------------------------------------------
    async def handle_append(self, body: dict) -> dict:
        """Append (client API); see :meth:`kraft.log_service.LogService.handle_append`."""
        return await LogService(self).handle_append(body)

    def append_control(self, rtype: str, payload) -> int:
        """Leader only: append a ``rtype`` record (e.g. KRaftVoters) without waiting; returns
        its offset. Raises :class:`Refused` NOT_LEADER_OR_FOLLOWER."""
        if self.kind is not StateKind.LEADER or self.stopping:
            raise Refused(errors.NOT_LEADER_OR_FOLLOWER)
        self._append(r := Record(self.log.end_offset, self.epoch, rtype, payload))
        self._schedule_flush()
        return r.offset

    async def append_and_commit(self, payload, on_appended=None, rtype: str = DATA,
                                timeout_ms: int | None = None) -> tuple[int, int]:
        """Leader only: append a ``rtype`` record (default data) holding ``payload`` (any JSON
        value) and wait up to ``timeout_ms`` (default request.timeout.ms) until it is
        committed and applied; returns ``(offset, epoch)``.

        ``on_appended(offset)`` is called as soon as the record is in the log,
        before any wait. Raises :class:`Refused` NOT_LEADER_OR_FOLLOWER
        (definite: nothing appended) or REQUEST_TIMED_OUT (appended, commit
        unknown: leadership was lost or ``request.timeout.ms`` passed), and
        InvalidRequest for an oversized payload.
        """
        if self.kind is not StateKind.LEADER or self.stopping:
            raise Refused(errors.NOT_LEADER_OR_FOLLOWER)
        r = Record(self.log.end_offset, self.epoch, rtype, payload)
        timeout_ms = self.cfg.request_timeout_ms if timeout_ms is None else timeout_ms
        try:
            self._append(r)
        except ValueError as e:
            raise InvalidRequest(str(e)) from None
        if on_appended is not None:
            on_appended(r.offset)
        fut = asyncio.get_running_loop().create_future()
        self._pending_appends[r.offset] = fut
        self._schedule_flush()
        try:
            return await asyncio.wait_for(fut, timeout_ms / 1000.0)
        except TimeoutError:
            self._pending_appends.pop(r.offset, None)
            self._plain_appends.discard(r.offset)
            raise Refused(errors.REQUEST_TIMED_OUT, f"offset {r.offset} not committed within "
                          f"{timeout_ms} ms") from None
        except ClientError as e:
            raise Refused(errors.REQUEST_TIMED_OUT, str(e)) from None

    async def read_index(self, timeout_s: float | None = None) -> int:
        """Leader only: the read-index round (Raft §6.4); returns the read index.

        Starts a new read round r, answers the parked Fetches at once with r,
        and waits until this epoch's LeaderChange is committed and a majority
        of voters have echoed r (or later) in a Fetch, confirming leadership in
        the current epoch after the call (:meth:`_complete_reads`); then returns
        the high watermark: every write acknowledged before the call is below it. Raises :class:`Refused`
        NOT_LEADER_OR_FOLLOWER (not the leader, or leadership lost meanwhile)
        or REQUEST_TIMED_OUT (not confirmed within ``timeout_s``, default
        ``request.timeout.ms``).

        The kv state machine is applied up to the high watermark whenever it
        advances, so it has applied every record below the returned index.
        With the ``no-read-index`` unsafe switch any node returns its own high
        watermark at once.
        """
        if "no-read-index" in self.cfg.unsafe:
            return self.hw
        if self.kind is not StateKind.LEADER:
            raise Refused(errors.NOT_LEADER_OR_FOLLOWER)
        if "lease-read" in self.cfg.unsafe:
            return self.hw
        timeout_s = self.cfg.request_timeout_ms / 1000.0 if timeout_s is None else timeout_s
        fut = asyncio.get_running_loop().create_future()
        self._read_round += 1
        self._pending_reads.append((self._read_round, fut))
        self._notify()            # parked fetches answer now with the round, so followers echo it
        self._complete_reads()
        try:
            return await asyncio.wait_for(fut, max(0.0, timeout_s))
        except TimeoutError:
            raise Refused(errors.REQUEST_TIMED_OUT,
                          "read-index: leadership not confirmed by a majority in time") from None
        except ClientError:
            raise Refused(errors.NOT_LEADER_OR_FOLLOWER) from None
