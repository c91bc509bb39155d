"""The high watermark (KIP-595 "Fetch"; KAFKA-12619): advancing it, applying what it
commits, and answering the writes waiting for it; functions over
:class:`kraft.quorum.state.QuorumState`. The rule itself is the pure
:func:`kraft.rules.high_watermark.next_high_watermark`.

The leader's high watermark is the majority position of the voters' stored log end
offsets (its own fsynced end included, when it is a voter), once this epoch's first
record is committed; a follower takes ``min(leader's, own log end offset)``. Every
node applies the committed records to the kv state machine and the metadata image as
the high watermark advances. A write waits in ``pending`` (by offset) until the
high watermark passes it, its deadline, or the end of the leadership.
"""
from __future__ import annotations

from ..core import errors
from ..core.states import StateKind
from ..rules.high_watermark import next_high_watermark
from ..rules.membership import should_resign
from .client_messages import AppendResponse, KvWriteResponse, VoterChangeResponse
from .pending import KV, PLAIN, VOTERS, PendingWrite
from .read_index import complete_reads, fail_reads
from .requests import reply
from .state import QuorumState
from .timer_keys import TimerKey

LEADER = StateKind.LEADER
LEADER_CHECK = TimerKey.LEADER_CHECK


def leader_epoch_committed(s: QuorumState) -> bool:
    """True iff this node is the leader and the first record of its epoch is committed
    (so every record committed by earlier leaders is below the high watermark, KIP-595)."""
    return s.kind is LEADER and s.hw > s.epoch_start


def update_hw(s: QuorumState) -> None:
    """The leader's high watermark from the voters' stored positions; on a move, apply the
    newly committed records and answer the writes and reads it completes."""
    policy = s.policy
    positions = s.replicas.voter_values(s.history.latest, s.key, s.durable.end, "end_offset", -1)
    if not positions:
        return
    new = next_high_watermark(s.hw, positions, s.epoch_start,
                              require_epoch_commit=not policy.early_high_watermark,
                              quorum_off_by_one=policy.commit_minority)
    if new > s.hw:
        s.hw = new
        apply_committed(s)     # before answering writes: a KvWrite needs its result
        s.wake = True
        answer_appends(s, new)
        complete_reads(s)
        if removed(s):
            s.set_deadline(LEADER_CHECK, s.now)     # resign there (kraft/quorum/leader.py)


def removed(s: QuorumState) -> bool:
    """A leader resigns once a voter set without it is committed (KIP-853)."""
    return should_resign(s.history.latest, s.key, s.hw, s.history.last_offset)


def apply_committed(s: QuorumState) -> None:
    """Apply the newly committed records (up to the high watermark) to the kv state
    machine and the metadata image."""
    s.kv.apply_committed(s.log, s.hw)
    s.metadata.apply_committed(s.log, s.hw)


# -- pending writes ------------------------------------------------------------------
def answer_appends(s: QuorumState, below: int, plain_only: bool = False) -> None:
    """Answer the pending writes whose last offset is below ``below`` (only Appends, with
    ``plain_only``)."""
    pending = s.pending
    for o in list(pending):
        if o >= below:
            break
        w = pending[o]
        if plain_only and w.kind != PLAIN:
            continue
        del pending[o]
        reply(s, w.token, _write_done(s, w))


def _write_done(s: QuorumState, w: PendingWrite):
    epoch = s.log.records[w.first].epoch
    if w.kind == KV:
        result = s.kv.take_result(w.offset)
        return KvWriteResponse(errors.NONE, w.offset, epoch, result is not None and result.succeeded,
                               result.previous if result is not None else None)
    if w.kind == VOTERS:
        return VoterChangeResponse(errors.NONE)
    return AppendResponse(errors.NONE, w.first, epoch)


def _write_failed(s: QuorumState, w: PendingWrite, message: str):
    if w.kind == KV:
        s.kv.take_result(w.offset)     # forget a result nobody will collect
        return KvWriteResponse(errors.REQUEST_TIMED_OUT, message=message)
    if w.kind == VOTERS:
        return VoterChangeResponse(errors.REQUEST_TIMED_OUT, message)
    return AppendResponse(errors.REQUEST_TIMED_OUT, message=message)


def expire_write(s: QuorumState, offset: int, seq: int, timeout_ms: float) -> None:
    """The write ending at ``offset`` (expiry ``seq``) timed out: REQUEST_TIMED_OUT."""
    w = s.pending.get(offset)
    if w is not None and w.seq == seq:
        del s.pending[offset]
        reply(s, w.token, _write_failed(s, w, f"offset {offset} not committed within {timeout_ms:.0f} ms"))


def fail_pending(s: QuorumState, why: str) -> None:
    """Leadership is lost: every pending write is indefinite, every pending read refused."""
    pending, s.pending = s.pending, {}
    for w in pending.values():
        reply(s, w.token, _write_failed(s, w, f"REQUEST_TIMED_OUT: {why}"))
    fail_reads(s)
