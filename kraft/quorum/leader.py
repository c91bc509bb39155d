"""Leader-side replication (KIP-595 Fetch handling, BeginQuorumEpoch, resigning with
EndQuorumEpoch; KIP-996 check quorum); functions over
:class:`kraft.quorum.state.QuorumState`.

A Fetch is validated against the log (DivergingEpoch), counts the replica's position,
and is parked up to its MaxWaitMs when there is nothing new to send: it is answered as
soon as the log grows, the high watermark moves or a read-index round starts, or at its
deadline. The leader's timer (``leader``) checks the quorum, resends BeginQuorumEpoch
to voters that do not fetch, and resigns once the leader's own removal is committed.
"""
from __future__ import annotations

import logging

from ..core import errors
from ..core.events import Send
from ..core.states import StateKind
from ..rules.voter_set import ReplicaKey
from .commit import removed, update_hw
from .messages import BeginQuorumEpochRequest, EndQuorumEpochRequest, FetchRequest, FetchResponse
from .pending import Parked
from .read_index import complete_reads
from .requests import reply
from .state import QuorumState
from .timer_keys import TimerKey
from .transitions import election_timeout, set_kind

log = logging.getLogger("kraft.quorum")

LEADER, RESIGNED = StateKind.LEADER, StateKind.RESIGNED
LEADER_CHECK, PARKED, ELECTION = TimerKey.LEADER_CHECK, TimerKey.PARKED, TimerKey.ELECTION
INF = float("inf")


# -- Fetch ---------------------------------------------------------------------------
def on_fetch(s: QuorumState, token, req: FetchRequest) -> None:
    """KIP-595 Fetch handling (leader side), with long polling up to MaxWaitMs."""
    epoch = s.election.epoch
    if req.replica_epoch != epoch:
        reply(s, token, FetchResponse(errors.FENCED_LEADER_EPOCH if req.replica_epoch < epoch
                                      else errors.UNKNOWN_LEADER_EPOCH))
        return
    if s.kind is not LEADER:
        reply(s, token, FetchResponse(errors.NOT_LEADER_OR_FOLLOWER))
        return
    lg, offset, last_epoch = s.log, req.fetch_offset, req.last_fetched_epoch
    if (offset > 0 or last_epoch > 0) and not s.policy.no_fetch_validation:
        e, end = lg.end_offset_for_epoch(last_epoch)
        if e != last_epoch or end < offset:
            reply(s, token, FetchResponse(errors.NONE, s.hw, [], (e, end), s.read_round))
            return
    s.replicas.on_fetch(s.history.latest, ReplicaKey(req.replica_id, req.replica_directory_id), offset,
                        req.read_round, s.read_round, lg.end_offset, s.now, s.wall_clock())
    update_hw(s)          # only voters count (kraft/rules/replicas.py)
    complete_reads(s)
    if offset >= lg.end_offset and req.max_wait_ms > 0:
        deadline = s.now + req.max_wait_ms
        s.parked.append(Parked(token, req, s.hw, s.read_round, s.gen, deadline))
        wanted = s.deadline(PARKED)
        if wanted is None or deadline < wanted:
            s.set_deadline(PARKED, deadline)
        return
    answer_fetch(s, token, req)


def answer_fetch(s: QuorumState, token, req: FetchRequest) -> None:
    """Answer a Fetch with the records from its offset (at most ``fetch_max_records``)."""
    lg = s.log
    recs = lg.read(req.fetch_offset, lg.end_offset, s.cfg.fetch_max_records)
    reply(s, token, FetchResponse(errors.NONE, s.hw, recs, None, s.read_round))


def wake_parked(s: QuorumState) -> None:
    """Answer every parked Fetch that has news (end of a step that changed something)."""
    if not s.parked:
        return
    keep, end, hw, rnd, gen = [], s.log.end_offset, s.hw, s.read_round, s.gen
    for p in s.parked:
        if p.gen != gen:
            reply(s, p.token, FetchResponse(errors.NOT_LEADER_OR_FOLLOWER))
        elif p.req.fetch_offset < end or p.hw != hw or p.round != rnd:
            answer_fetch(s, p.token, p.req)
        else:
            keep.append(p)
    s.parked = keep


def on_parked_timer(s: QuorumState) -> None:
    """The ``parked`` timer: answer the parked Fetches whose MaxWaitMs is over."""
    keep, nxt = [], INF
    for p in s.parked:
        if p.deadline <= s.now:
            if p.gen != s.gen:
                reply(s, p.token, FetchResponse(errors.NOT_LEADER_OR_FOLLOWER))
            else:
                answer_fetch(s, p.token, p.req)
        else:
            keep.append(p)
            nxt = min(nxt, p.deadline)
    s.parked = keep
    if keep:
        s.set_deadline(PARKED, nxt)


# -- the leader's timer: check quorum, BeginQuorumEpoch, removal ----------------------------
def on_leader_timer(s: QuorumState) -> None:
    """KIP-996 check quorum; BeginQuorumEpoch to voters that do not fetch (every
    fetch.timeout/2); resign once our own removal is committed (KIP-853)."""
    if s.kind is not LEADER:
        return
    cfg = s.cfg
    now, voters, me = s.now, s.history.latest, s.key
    window = 1.5 * cfg.fetch_timeout_ms
    cq = (cfg.check_quorum and not s.policy.no_check_quorum
          and not (len(voters) == 1 and voters.is_voter(me)))
    nxt = INF
    if cq:
        if now - s.leader_since >= window:
            live = s.replicas.live_voters(voters, me, now, window)
            if live < voters.majority:
                resign(s, f"check quorum: only {live} of {len(voters)} voters fetched "
                          f"in the last {window:.0f} ms")
                return
        nxt = _check_quorum_due(s, window)
    if removed(s):
        resign(s, "removed from the voter set, and the removal is committed")
        return
    resend = cfg.fetch_timeout_ms / 2
    for vid, p in s.replicas.others(voters, me):
        last = max(p.last_fetch if p else -INF, s.begin_sent.get(vid, -INF))
        if now - last > resend:
            send_begin_quorum(s, vid)
            last = now
        nxt = min(nxt, last + resend + 1)
    complete_reads(s)
    if nxt < INF:
        s.set_deadline(LEADER_CHECK, max(nxt, now + 1))


def _check_quorum_due(s: QuorumState, window: float) -> float:
    """When check quorum could first fail: a window after the fetch of the voter that
    completes a majority (the leader counts itself when it is a voter)."""
    voters, me = s.history.latest, s.key
    need = voters.majority - (1 if voters.is_voter(me) else 0)
    if need <= 0:
        return INF
    fetches = sorted((p.last_fetch if p else -INF for _, p in s.replicas.others(voters, me)), reverse=True)
    kth = fetches[need - 1] if need <= len(fetches) else -INF
    return max(s.leader_since + window, kth + window)


def send_begin_quorum(s: QuorumState, vid: int) -> None:
    """BeginQuorumEpoch to voter ``vid``."""
    s.begin_sent[vid] = s.now
    v = s.history.latest.get(vid)
    s.out.append(Send(vid, BeginQuorumEpochRequest(s.id, s.election.epoch, vid,
                                                   v.directory_id if v else None), s.gen))


def resign(s: QuorumState, reason: str) -> None:
    """Leader -> Resigned (not persisted): send EndQuorumEpoch to the voters."""
    if s.kind is not LEADER:
        return
    log.warning("resigning leadership of epoch %d: %s", s.election.epoch, reason)
    successors = s.replicas.successors(s.history.latest, s.key)
    set_kind(s, RESIGNED)
    s.set_deadline(ELECTION, s.now + election_timeout(s))
    e = s.election
    for vid in successors:
        s.out.append(Send(vid, EndQuorumEpochRequest(s.id, s.id, e.epoch, successors), s.gen))
