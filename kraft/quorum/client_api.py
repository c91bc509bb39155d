"""The client API on the quorum: Append, Propose (the active controller's writes), KvWrite,
Read, KvGet, ReadIndex and DescribeQuorum (kraft/quorum/client_messages.py), and the
expiry of the requests that wait (the ``requests`` timer); functions over
:class:`kraft.quorum.state.QuorumState`.

A write is appended by the leader at once and answered once committed (and, for a
KvWrite, applied: its answer carries the cas outcome) or REQUEST_TIMED_OUT after its
deadline or when leadership is lost (indefinite: appended, commit unknown); a
non-leader answers NOT_LEADER_OR_FOLLOWER (definite: nothing appended).
"""
from __future__ import annotations

import heapq

from ..core import errors
from ..core.records import DATA, Record
from ..core.states import StateKind
from .client_messages import (AppendRequest, AppendResponse, DescribeQuorumRequest, DescribeQuorumResponse,
                              KvGetRequest, KvWriteRequest, KvWriteResponse, ProposeRequest, ReadIndexRequest,
                              ReadRequest)
from .commit import expire_write
from .disk import append, schedule_flush
from .pending import INDEX, KV, KVGET, PLAIN, PROPOSE, READ, PendingWrite
from .read_index import answer_read, expire_read, read
from .requests import expire_in, reply
from .state import QuorumState
from .timer_keys import TimerKey

LEADER = StateKind.LEADER
REQUESTS = TimerKey.REQUESTS


def on_requests_timer(s: QuorumState) -> None:
    """The ``requests`` timer: expire every waiting request whose deadline passed."""
    heap = s.expiry
    while heap and heap[0][0] <= s.now:
        _, seq, kind, key, timeout_ms = heapq.heappop(heap)
        if kind == "a":
            expire_write(s, key, seq, timeout_ms)
        else:
            expire_read(s, seq)
    if heap:
        s.set_deadline(REQUESTS, heap[0][0])


# -- writes ----------------------------------------------------------------------------
def _can_write(s: QuorumState) -> bool:
    return s.kind is LEADER and not s.stopping


def write(s: QuorumState, token, kind: str, rtype: str, payloads: list, timeout_ms: float | None) -> PendingWrite:
    """Append one record per payload, then wait for the last to commit (``timeout_ms``:
    None for the config's request timeout); returns the pending write."""
    e, lg = s.election, s.log
    first = lg.end_offset
    for p in payloads:
        append(s, Record(lg.end_offset, e.epoch, rtype, p))
    last = lg.end_offset - 1
    if kind == KV:
        s.kv.expect(last, payloads[-1])
    seq = expire_in(s, s.cfg.request_timeout_ms if timeout_ms is None else timeout_ms, "a", last)
    w = s.pending[last] = PendingWrite(token, kind, first, last, seq)
    schedule_flush(s)
    return w


def _write_one(s: QuorumState, token, kind: str, payload, refusal) -> None:
    """Write one data record of ``kind`` on the leader; elsewhere ``refusal`` (the response
    type) NOT_LEADER_OR_FOLLOWER."""
    if not _can_write(s):
        reply(s, token, refusal(errors.NOT_LEADER_OR_FOLLOWER))
        return
    write(s, token, kind, DATA, [payload], None)


def on_append(s: QuorumState, token, req: AppendRequest) -> None:
    """Append: one data record, answered once committed."""
    _write_one(s, token, PLAIN, req.value, AppendResponse)


def on_propose(s: QuorumState, token, req: ProposeRequest) -> None:
    """Propose: records of any type (the controller's Metadata), answered once committed,
    or at once when the proposer does not wait."""
    if not _can_write(s):
        reply(s, token, AppendResponse(errors.NOT_LEADER_OR_FOLLOWER))
        return
    if not req.wait:
        first = s.log.end_offset
        for p in req.payloads:
            append(s, Record(s.log.end_offset, s.election.epoch, req.rtype, p))
        schedule_flush(s)
        reply(s, token, AppendResponse(errors.NONE, first, s.election.epoch))
        return
    write(s, token, PROPOSE, req.rtype, req.payloads, req.timeout_ms)


def on_kv_write(s: QuorumState, token, req: KvWriteRequest) -> None:
    """KvWrite: one kv command, answered with its outcome once committed and applied."""
    _write_one(s, token, KV, req.command, KvWriteResponse)


# -- reads ------------------------------------------------------------------------------
def on_read(s: QuorumState, token, req: ReadRequest) -> None:
    """Read: the committed records from an offset (linearizable through read-index, or not)."""
    if req.linearizable:
        read(s, token, READ, req)
    else:
        answer_read(s, token, READ, req)


def on_kv_get(s: QuorumState, token, req: KvGetRequest) -> None:
    """KvGet: a key's value, linearizable (read-index)."""
    read(s, token, KVGET, req)


def on_read_index(s: QuorumState, token, req: ReadIndexRequest) -> None:
    """ReadIndex: the high watermark once the leadership is confirmed."""
    read(s, token, INDEX, req, req.timeout_ms)


def on_describe_quorum(s: QuorumState, token, req: DescribeQuorumRequest) -> None:
    """KIP-595 DescribeQuorum (leader only)."""
    if s.kind is not LEADER:
        reply(s, token, DescribeQuorumResponse(errors.NOT_LEADER_OR_FOLLOWER))
        return
    voters, observers = s.replicas.describe(s.history.latest, s.key, s.log.end_offset, s.wall_clock())
    reply(s, token, DescribeQuorumResponse(errors.NONE, s.hw, voters, observers))
