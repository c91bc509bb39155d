"""The replica's log on its way to disk: appending (WriteLog), fsync (SyncLog, the leader's
append linger), what is durable (SyncDone) and truncation (TruncateLog); functions over
:class:`kraft.quorum.state.QuorumState`.

The leader appends records to its log at once and fsyncs them in batches after
``append_linger_ms`` (the ``linger`` timer); its own position counts toward the high
watermark only once the fsync is done (kraft/quorum/commit.py). A follower's next Fetch
waits for the fsync of what it copied (kraft/quorum/fetcher.py). Under ``no-fsync`` what
is written counts as stored at once.
"""
from __future__ import annotations

from ..core.events import SyncDone, SyncLog, TruncateLog, WriteLog
from ..core.records import Record
from ..core.states import StateKind
from .commit import answer_appends, update_hw
from .fetcher import fetch_after_sync
from .state import QuorumState
from .timer_keys import TimerKey

LEADER = StateKind.LEADER
LINGER = TimerKey.LINGER


def append(s: QuorumState, r: Record) -> None:
    """Append ``r`` to the log and write it (not yet fsynced)."""
    s.log.append(r)
    s.out.append(WriteLog([r]))
    s.wake = True


def schedule_flush(s: QuorumState) -> None:
    """fsync after the append linger (unless one is scheduled already)."""
    if s.deadline(LINGER) is None:
        s.set_deadline(LINGER, s.now + s.cfg.append_linger_ms)


def flush_now(s: QuorumState) -> None:
    """fsync everything appended (the linger expired, or at once)."""
    s.clear_deadline(LINGER)
    end = s.log.end_offset
    if end > s.durable.end and not s.durable.pending(end):
        sync(s)


def sync(s: QuorumState) -> None:
    """fsync what was written (SyncLog); under ``no-fsync`` count it as stored at once."""
    end = s.log.end_offset
    if s.policy.no_fsync:
        if s.durable.advance(end):
            on_durable(s)
        return
    s.durable.asked(end)
    s.out.append(SyncLog(end))


def on_sync_done(s: QuorumState, ev: SyncDone) -> None:
    """An fsync finished (the SyncDone event)."""
    if s.durable.done(ev.end, s.log.end_offset):
        on_durable(s)


def on_durable(s: QuorumState) -> None:
    """More of the log is on disk: the leader's position moved; a follower fetches again."""
    if s.kind is LEADER:
        update_hw(s)
        if s.policy.ack_before_commit:       # the bug: Append acks on local disk
            answer_appends(s, s.durable.end, plain_only=True)
    else:
        fetch_after_sync(s)


def truncated(s: QuorumState, offset: int) -> None:
    """The log was truncated to ``offset`` (already in memory): TruncateLog, and what
    was stored above it no longer is."""
    s.out.append(TruncateLog(offset))
    s.durable.truncated(offset)
