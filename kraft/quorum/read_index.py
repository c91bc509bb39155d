"""Read-index (Raft §6.4): linearizable reads on the leader; functions over
:class:`kraft.quorum.state.QuorumState`.

Each linearizable read starts a read round r (``read_round`` grows for life). The
leader answers its parked Fetches at once carrying r, and a follower echoes the
newest round it got in its next Fetch (kraft/quorum/messages.py ``read_round``). A read
of round r completes once this epoch's first record is committed and a majority of
voters (the leader included) has echoed r or later: those Fetches were sent after the
read arrived, so the replicas still followed us then. It is answered from the high
watermark at that moment (Read: the records below it; KvGet: the state machine,
applied up to it). Counting a Fetch by its arrival time instead is unsafe: a Fetch
sent before a partition, held by TCP and delivered after the heal, would confirm a
deposed leader (tests/test_kraft_read_index.py).

``no-read-index`` answers any node's reads from its own state at once; ``lease-read``
answers the leader's at once.
"""
from __future__ import annotations

from ..core import errors
from ..core.states import StateKind
from ..rules.high_watermark import majority_position
from .client_messages import KvGetResponse, ReadIndexResponse, ReadResponse
from .pending import KVGET, READ, PendingRead
from .requests import expire_in, reply
from .state import QuorumState

LEADER = StateKind.LEADER


def epoch_committed(s: QuorumState) -> bool:
    """True iff this epoch's first record is committed (or ``early-high-watermark`` says so)."""
    return s.hw > s.epoch_start or s.policy.early_high_watermark


def read(s: QuorumState, token, purpose: str, req, timeout_ms: float | None = None) -> None:
    """Start a linearizable read (``purpose`` INDEX, READ or KVGET of ``req``); ``timeout_ms``
    defaults to the config's request timeout."""
    policy = s.policy
    if policy.no_read_index:
        answer_read(s, token, purpose, req)
        return
    if s.kind is not LEADER:
        reply(s, token, _refusal(purpose, errors.NOT_LEADER_OR_FOLLOWER))
        return
    if policy.lease_read:
        answer_read(s, token, purpose, req)
        return
    s.read_round += 1
    seq = expire_in(s, s.cfg.request_timeout_ms if timeout_ms is None else timeout_ms, "r", None)
    s.pending_reads[seq] = PendingRead(token, purpose, req, s.read_round)
    s.wake = True            # parked fetches answer now with the round, so followers echo it
    complete_reads(s)


def answer_read(s: QuorumState, token, purpose: str, req) -> None:
    """Answer a read from this replica's state now (high watermark, log, kv state machine)."""
    hw = s.hw
    if purpose == READ:
        msg = ReadResponse(errors.NONE, hw, s.log.read(req.from_offset, hw, req.max_records))
    elif purpose == KVGET:
        msg = KvGetResponse(errors.NONE, s.kv.get(req.key), s.kv.applied)
    else:
        msg = ReadIndexResponse(errors.NONE, hw)
    reply(s, token, msg)


def complete_reads(s: QuorumState) -> None:
    """Answer the reads whose round a majority (ourselves included) has echoed."""
    if not s.pending_reads or not epoch_committed(s):
        return
    rounds = s.replicas.voter_values(s.history.latest, s.key, s.read_round, "read_round", 0)
    confirmed = majority_position(rounds) if rounds else 0
    for seq, r in list(s.pending_reads.items()):
        if r.round > confirmed:
            break
        del s.pending_reads[seq]
        answer_read(s, r.token, r.purpose, r.req)


def expire_read(s: QuorumState, seq: int) -> None:
    """The read of expiry ``seq`` timed out: REQUEST_TIMED_OUT (if still waiting)."""
    r = s.pending_reads.pop(seq, None)
    if r is not None:
        reply(s, r.token, _refusal(r.purpose, errors.REQUEST_TIMED_OUT,
                                   "read-index: leadership not confirmed by a majority in time"))


def fail_reads(s: QuorumState) -> None:
    """Leadership is lost: refuse every waiting read (NOT_LEADER_OR_FOLLOWER)."""
    reads, s.pending_reads = s.pending_reads, {}
    for r in reads.values():
        reply(s, r.token, _refusal(r.purpose, errors.NOT_LEADER_OR_FOLLOWER))


def _refusal(purpose: str, code: int, message: str | None = None):
    if purpose == READ:
        return ReadResponse(code, message=message)
    if purpose == KVGET:
        return KvGetResponse(code, message=message)
    return ReadIndexResponse(code, message=message)
