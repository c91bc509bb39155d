"""Leader-side replication (KIP-595 Fetch handling, BeginQuorumEpoch; KIP-996 check quorum):
a mixin of :class:`kraft.quorum.core.QuorumCore`.

The leader appends records to its log at once (WriteLog) and fsyncs them in batches
after ``append_linger_ms`` (SyncLog); its own position counts toward the high
watermark only once the fsync is done (kraft/quorum/commit.py). A Fetch is validated
against the log (DivergingEpoch), counts the replica's position, and is parked up to
its MaxWaitMs when there is nothing new to send: it is answered as soon as the log
grows, the high watermark moves or a read-index round starts, or at its deadline.
"""
from __future__ import annotations

import logging

from ..core import errors
from ..core.events import Send, WriteLog
from ..core.records import Record
from ..core.states import StateKind
from ..rules.replicas import ReplicaTracker
from ..rules.voter_set import ReplicaKey
from .messages import BeginQuorumEpochRequest, FetchRequest, FetchResponse

log = logging.getLogger("kraft.quorum")

LEADER = StateKind.LEADER
LINGER, LEADER_CHECK, PARKED, ELECTION = "linger", "leader", "parked", "election"
INF = float("inf")


class Parked:
    """A Fetch waiting for news: its ``token`` and ``req``, and what it saw (``hw``,
    ``round``, ``gen``) and its ``deadline`` (ms)."""

    __slots__ = ("token", "req", "hw", "round", "gen", "deadline")

    def __init__(self, token, req: FetchRequest, hw: int, rnd: int, gen: int, deadline: float):
        self.token, self.req, self.hw, self.round, self.gen, self.deadline = token, req, hw, rnd, gen, deadline


class LeaderReplication:
    """The leader's side of replication (needs the core's state)."""

    def _init_leader(self) -> None:
        self.replicas = ReplicaTracker()     # Leader: every fetching replica's progress
        self.epoch_start = 0                 # Leader: offset of this epoch's first record
        self.leader_since = 0.0
        self.begin_sent: dict[int, float] = {}
        self.parked: list[Parked] = []

    def _become_leader_state(self) -> None:
        self._set_kind(LEADER)
        self._clear_deadline(ELECTION)
        self.replicas.reset()
        self.epoch_start = self.log.end_offset
        self.leader_since = self.now
        self.begin_sent = {}

    def _abandon_leadership(self) -> None:
        self._clear_deadline(LINGER)
        self._clear_deadline(LEADER_CHECK)
        self._flush_now()
        self._fail_pending("leadership lost before commit")

    # -- appending ---------------------------------------------------------------------
    def _append(self, r: Record) -> None:
        """Append ``r`` to the log and write it (not yet fsynced)."""
        self.log.append(r)
        self.out.append(WriteLog([r]))
        self._wake = True

    def _schedule_flush(self) -> None:
        if LINGER not in self._want:
            self._set_deadline(LINGER, self.now + self.cfg.append_linger_ms)

    def _flush_now(self) -> None:
        """fsync everything appended (the linger expired, or at once)."""
        self._clear_deadline(LINGER)
        end = self.log.end_offset
        if end > self.durable.end and not self.durable.pending(end):
            self._sync()

    def _on_durable(self) -> None:
        """More of the log is on disk: the leader's position moved; a follower fetches again."""
        if self.kind is LEADER:
            self._update_hw()
            if self.policy.ack_before_commit:       # the bug: Append acks on local disk
                self._answer_appends(self.durable_end, plain_only=True)
        else:
            self._fetch_after_sync()

    # -- Fetch ---------------------------------------------------------------------------
    def _on_fetch(self, token, req: FetchRequest) -> None:
        """KIP-595 Fetch handling (leader side), with long polling up to MaxWaitMs."""
        epoch = self.election.epoch
        if req.replica_epoch != epoch:
            self._reply(token, FetchResponse(errors.FENCED_LEADER_EPOCH if req.replica_epoch < epoch
                                             else errors.UNKNOWN_LEADER_EPOCH))
            return
        if self.kind is not LEADER:
            self._reply(token, FetchResponse(errors.NOT_LEADER_OR_FOLLOWER))
            return
        lg, offset, last_epoch = self.log, req.fetch_offset, req.last_fetched_epoch
        if (offset > 0 or last_epoch > 0) and not self.policy.no_fetch_validation:
            e, end = lg.end_offset_for_epoch(last_epoch)
            if e != last_epoch or end < offset:
                self._reply(token, FetchResponse(errors.NONE, self.hw, [], (e, end), self.read_round))
                return
        self.replicas.on_fetch(self.voters, ReplicaKey(req.replica_id, req.replica_directory_id), offset,
                               req.read_round, self.read_round, lg.end_offset, self.now, self.wall_clock())
        self._update_hw()          # only voters count (kraft/replicas.py)
        self._complete_reads()
        if offset >= lg.end_offset and req.max_wait_ms > 0:
            deadline = self.now + req.max_wait_ms
            self.parked.append(Parked(token, req, self.hw, self.read_round, self.gen, deadline))
            if deadline < self._want.get(PARKED, INF):
                self._set_deadline(PARKED, deadline)
            return
        self._answer_fetch(token, req)

    def _answer_fetch(self, token, req: FetchRequest) -> None:
        lg = self.log
        recs = lg.read(req.fetch_offset, lg.end_offset, self.cfg.fetch_max_records)
        self._reply(token, FetchResponse(errors.NONE, self.hw, recs, None, self.read_round))

    def _wake_parked(self) -> None:
        """Answer every parked Fetch that has news (end of a step that changed something)."""
        if not self.parked:
            return
        keep, end, hw, rnd, gen = [], self.log.end_offset, self.hw, self.read_round, self.gen
        for p in self.parked:
            if p.gen != gen:
                self._reply(p.token, FetchResponse(errors.NOT_LEADER_OR_FOLLOWER))
            elif p.req.fetch_offset < end or p.hw != hw or p.round != rnd:
                self._answer_fetch(p.token, p.req)
            else:
                keep.append(p)
        self.parked = keep

    def _on_parked_timer(self) -> None:
        keep, nxt = [], INF
        for p in self.parked:
            if p.deadline <= self.now:
                if p.gen != self.gen:
                    self._reply(p.token, FetchResponse(errors.NOT_LEADER_OR_FOLLOWER))
                else:
                    self._answer_fetch(p.token, p.req)
            else:
                keep.append(p)
                nxt = min(nxt, p.deadline)
        self.parked = keep
        if keep:
            self._set_deadline(PARKED, nxt)

    # -- the leader's timer: check quorum, BeginQuorumEpoch, removal ----------------------------
    def _on_leader_timer(self) -> None:
        """KIP-996 check quorum; BeginQuorumEpoch to voters that do not fetch (every
        fetch.timeout/2); resign once our own removal is committed (KIP-853)."""
        if self.kind is not LEADER:
            return
        now, voters, me = self.now, self.voters, self.key
        window = 1.5 * self.cfg.fetch_timeout_ms
        cq = (self.cfg.check_quorum and not self.policy.no_check_quorum
              and not (len(voters) == 1 and voters.is_voter(me)))
        nxt = INF
        if cq:
            if now - self.leader_since >= window:
                live = self.replicas.live_voters(voters, me, now, window)
                if live < voters.majority:
                    self.resign(f"check quorum: only {live} of {len(voters)} voters fetched "
                                f"in the last {window:.0f} ms")
                    return
            nxt = self._check_quorum_due(window)
        if self._removed():
            self.resign("removed from the voter set, and the removal is committed")
            return
        resend = self.cfg.fetch_timeout_ms / 2
        for vid, p in self.replicas.others(voters, me):
            last = max(p.last_fetch if p else -INF, self.begin_sent.get(vid, -INF))
            if now - last > resend:
                self._send_begin_quorum(vid)
                last = now
            nxt = min(nxt, last + resend + 1)
        self._complete_reads()
        if nxt < INF:
            self._set_deadline(LEADER_CHECK, max(nxt, now + 1))

    def _check_quorum_due(self, window: float) -> float:
        """When check quorum could first fail: a window after the fetch of the voter that
        completes a majority (the leader counts itself when it is a voter)."""
        voters, me = self.voters, self.key
        need = voters.majority - (1 if voters.is_voter(me) else 0)
        if need <= 0:
            return INF
        fetches = sorted((p.last_fetch if p else -INF for _, p in self.replicas.others(voters, me)), reverse=True)
        kth = fetches[need - 1] if need <= len(fetches) else -INF
        return max(self.leader_since + window, kth + window)

    def _send_begin_quorum(self, vid: int) -> None:
        self.begin_sent[vid] = self.now
        v = self.voters.get(vid)
        self.out.append(Send(vid, BeginQuorumEpochRequest(self.id, self.election.epoch, vid,
                                                          v.directory_id if v else None), self.gen))
