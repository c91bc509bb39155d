"""Answering requests, for every role of the quorum core: a :class:`kraft.core.events.Reply`
stamped with this replica's leader and epoch, and the deadlines of the client requests
that wait (the ``requests`` timer over :attr:`QuorumState.expiry`; client_api.py expires
them when it fires)."""
from __future__ import annotations

import heapq

from ..core.events import Reply
from .state import QuorumState
from .timer_keys import TimerKey

REQUESTS = TimerKey.REQUESTS


def reply(s: QuorumState, token, msg) -> None:
    """Answer request ``token`` with ``msg``, stamped with our leader and epoch."""
    e = s.election
    msg.leader_id, msg.leader_epoch = e.leader_id, e.epoch
    s.out.append(Reply(token, msg))


def expire_in(s: QuorumState, timeout_ms: float, kind: str, key) -> int:
    """Expire request ``key`` (``kind`` ``"a"``: the write whose last record is at offset
    ``key``; ``"r"``: a read) after ``timeout_ms``; returns its expiry seq."""
    s.expiry_seq += 1
    at = s.now + timeout_ms
    heapq.heappush(s.expiry, (at, s.expiry_seq, kind, key, timeout_ms))
    wanted = s.deadline(REQUESTS)
    if wanted is None or at < wanted:
        s.set_deadline(REQUESTS, at)
    return s.expiry_seq
