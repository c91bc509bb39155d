"""Follower-side replication (KIP-595 Fetch responses, DivergingEpoch truncation) and an
observer's search for the leader (KIP-853); functions over
:class:`kraft.quorum.state.QuorumState`. The Fetches themselves are sent by
kraft/quorum/fetcher.py.

What a response brings is appended (WriteLog) and fsynced (SyncLog) before the next
Fetch reports the new log end offset (the leader counts it as stored); the high
watermark becomes ``min(leader's, own log end offset)``. A failed Fetch is retried after
``retry_backoff_ms``. An observer asks for the leader every ``max(retry_backoff_ms, 50)``
ms; any answer naming a leader makes it a Follower of that leader.
"""
from __future__ import annotations

import logging

from ..core import errors
from ..core.events import FatalError, WriteLog
from ..core.record_log import LogError
from ..core.states import StateKind
from .commit import apply_committed
from .disk import sync, truncated
from .fetcher import discover, send_fetch
from .messages import FetchResponse
from .state import QuorumState
from .timer_keys import TimerKey
from .transitions import observe

log = logging.getLogger("kraft.quorum")

UNATTACHED, FOLLOWER = StateKind.UNATTACHED, StateKind.FOLLOWER
ELECTION, FETCH = TimerKey.ELECTION, TimerKey.FETCH
#: Least back-off between an observer's discovery Fetches (ms).
DISCOVERY_BACKOFF_MIN_MS = 50


def on_fetch_timer(s: QuorumState) -> None:
    """The back-off after a failed Fetch (or between discovery Fetches) is over."""
    if s.kind is FOLLOWER and not s.fetching and s.sync_gen != s.gen:
        send_fetch(s)
    elif s.kind is UNATTACHED and not s.history.latest.is_voter(s.key):
        discover(s)


def on_fetch_reply(s: QuorumState, ev) -> None:
    """The outcome of our Fetch (a Replied event): a follower's or an observer's."""
    if ev.gen != s.gen:
        return
    if s.kind is UNATTACHED:
        _on_discovery_reply(s, ev)
        return
    if s.kind is not FOLLOWER:
        return
    s.fetching = False
    resp = ev.response
    if resp is not None and handle_fetch_response(s, resp):
        if s.log.end_offset > s.durable.end:
            s.sync_gen = s.gen            # durable before the next Fetch reports it
            sync(s)
        else:
            send_fetch(s)
    elif ev.gen == s.gen:
        s.set_deadline(FETCH, s.now + s.cfg.retry_backoff_ms)


def handle_fetch_response(s: QuorumState, resp: FetchResponse) -> bool:
    """Apply one Fetch response; returns True to fetch again at once. Raises FatalError
    when a DivergingEpoch would truncate committed records."""
    if observe(s, resp.leader_epoch, resp.leader_id):
        return False
    if resp.error_code != errors.NONE:
        if log.isEnabledFor(logging.DEBUG):
            log.debug("Fetch error %s", errors.name(resp.error_code))
        return False
    if resp.leader_epoch < s.election.epoch:
        return False
    if resp.read_round > s.echo_round:
        s.echo_round = resp.read_round     # echoed in our next Fetch: it confirms the leader's reads
    if resp.diverging is not None:
        truncate_diverging(s, *resp.diverging)
        _fetched_ok(s)
        return True
    lg = s.log
    end, appended, bad = lg.end_offset, [], False
    for r in resp.records:
        if r.offset != end:
            if r.offset > end:
                break
            continue
        try:
            lg.append(r)
        except LogError as e:          # e.g. an older epoch after ours (no-fetch-validation)
            log.warning("cannot append fetched record at offset %d: %s", r.offset, e)
            bad = True
            break
        appended.append(r)
        end += 1
    if appended:
        s.out.append(WriteLog(appended))
    if bad:
        return False
    hw = min(resp.high_watermark, lg.end_offset)
    if hw > s.hw:
        s.hw = hw
        apply_committed(s)
    _fetched_ok(s)
    return True


def _fetched_ok(s: QuorumState) -> None:
    s.has_fetched = True
    s.set_deadline(ELECTION, s.now + s.cfg.fetch_timeout_ms)


def truncate_diverging(s: QuorumState, epoch: int, end_offset: int) -> None:
    """KIP-595: truncate to the end of the diverging epoch (never below the high watermark).
    Raises FatalError when that would remove committed records."""
    local_epoch, local_end = s.log.end_offset_for_epoch(epoch)
    target = min(local_end, end_offset) if local_epoch == epoch else local_end
    if target < s.hw:
        raise FatalError(f"leader asked for truncation to offset {target} (diverging epoch "
                         f"{epoch} end {end_offset}), below the high watermark {s.hw}")
    removed = s.log.truncate_to(target)
    if removed:
        truncated(s, target)
    log.info("DivergingEpoch(epoch=%d, end=%d): truncated %d records to offset %d",
             epoch, end_offset, removed, target)


def _on_discovery_reply(s: QuorumState, ev) -> None:
    resp = ev.response
    if resp is not None and observe(s, resp.leader_epoch, resp.leader_id):
        log.info("observer found leader %d in epoch %d via %s", s.election.leader_id,
                 s.election.epoch, ev.to)
        return
    if not s.history.latest.is_voter(s.key):
        s.set_deadline(FETCH, s.now + max(s.cfg.retry_backoff_ms, DISCOVERY_BACKOFF_MIN_MS))
