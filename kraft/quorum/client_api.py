"""The client API on the quorum: Append, Propose (the active controller's writes), KvWrite,
Read, KvGet, ReadIndex and DescribeQuorum (kraft/quorum/client_messages.py), and the
deadlines of the requests that wait. A mixin of :class:`kraft.quorum.core.QuorumCore`.

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
from .commit import KV, PLAIN, PROPOSE, PendingWrite
from .read_index import INDEX, KVGET, READ

LEADER = StateKind.LEADER
REQUESTS = "requests"


class ClientApi:
    """Handlers of the client requests, and their deadlines (needs the core's state)."""

    # -- deadlines ---------------------------------------------------------------------
    def _init_requests(self) -> None:
        self._expiry: list[tuple] = []       # heap of (deadline ms, seq, kind, key, timeout ms)
        self._expiry_seq = 0

    def _expire_in(self, timeout_ms: float, kind: str, key) -> int:
        """Expire request ``key`` (``"a"``: a write at that offset; ``"r"``: a read) after
        ``timeout_ms``; returns its expiry seq."""
        self._expiry_seq += 1
        at = self.now + timeout_ms
        heapq.heappush(self._expiry, (at, self._expiry_seq, kind, key, timeout_ms))
        if at < self._want.get(REQUESTS, float("inf")):
            self._set_deadline(REQUESTS, at)
        return self._expiry_seq

    def _on_requests_timer(self) -> None:
        heap = self._expiry
        while heap and heap[0][0] <= self.now:
            _, seq, kind, key, timeout_ms = heapq.heappop(heap)
            if kind == "a":
                self._expire_write(key, seq, timeout_ms)
            else:
                self._expire_read(seq)
        if heap:
            self._set_deadline(REQUESTS, heap[0][0])

    # -- writes ----------------------------------------------------------------------------
    def _can_write(self) -> bool:
        return self.kind is LEADER and not self.stopping

    def _write(self, token, kind: str, rtype: str, payloads: list, timeout_ms: float | None) -> PendingWrite:
        """Append one record per payload, then wait for the last to commit."""
        e, lg = self.election, self.log
        first = lg.end_offset
        for p in payloads:
            self._append(Record(lg.end_offset, e.epoch, rtype, p))
        last = lg.end_offset - 1
        if kind == KV:
            self.kv.expect(last)
        seq = self._expire_in(self.cfg.request_timeout_ms if timeout_ms is None else timeout_ms, "a", last)
        w = self.pending[last] = PendingWrite(token, kind, first, last, seq)
        self._schedule_flush()
        return w

    def _on_append(self, token, req: AppendRequest) -> None:
        if not self._can_write():
            self._reply(token, AppendResponse(errors.NOT_LEADER_OR_FOLLOWER))
            return
        self._write(token, PLAIN, DATA, [req.value], None)

    def _on_propose(self, token, req: ProposeRequest) -> None:
        if not self._can_write():
            self._reply(token, AppendResponse(errors.NOT_LEADER_OR_FOLLOWER))
            return
        if not req.wait:
            first = self.log.end_offset
            for p in req.payloads:
                self._append(Record(self.log.end_offset, self.election.epoch, req.rtype, p))
            self._schedule_flush()
            self._reply(token, AppendResponse(errors.NONE, first, self.election.epoch))
            return
        self._write(token, PROPOSE, req.rtype, req.payloads, req.timeout_ms)

    def _on_kv_write(self, token, req: KvWriteRequest) -> None:
        if not self._can_write():
            self._reply(token, KvWriteResponse(errors.NOT_LEADER_OR_FOLLOWER))
            return
        self._write(token, KV, DATA, [req.command], None)

    # -- reads ------------------------------------------------------------------------------
    def _on_read(self, token, req: ReadRequest) -> None:
        if req.linearizable:
            self._read(token, READ, req)
        else:
            self._answer_read(token, READ, req)

    def _on_kv_get(self, token, req: KvGetRequest) -> None:
        self._read(token, KVGET, req)

    def _on_read_index(self, token, req: ReadIndexRequest) -> None:
        self._read(token, INDEX, req, req.timeout_ms)

    def _on_describe_quorum(self, token, req: DescribeQuorumRequest) -> None:
        """KIP-595 DescribeQuorum (leader only)."""
        if self.kind is not LEADER:
            self._reply(token, DescribeQuorumResponse(errors.NOT_LEADER_OR_FOLLOWER))
            return
        voters, observers = self.replicas.describe(self.voters, self.key, self.log.end_offset, self.wall_clock())
        self._reply(token, DescribeQuorumResponse(errors.NONE, self.hw, voters, observers))
