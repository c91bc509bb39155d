"""Read-index (Raft §6.4): linearizable reads on the leader. A mixin of
:class:`kraft.quorum.core.QuorumCore`.

Each linearizable read starts a read round r (:attr:`read_round` grows for life). The
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

LEADER = StateKind.LEADER
#: What a pending read answers: the read index itself, a Read, a KvGet.
INDEX, READ, KVGET = "index", "read", "kvget"


class PendingRead:
    """A read waiting for round ``round``: its ``token``, ``purpose`` and request ``req``."""

    __slots__ = ("token", "purpose", "req", "round")

    def __init__(self, token, purpose: str, req, rnd: int):
        self.token, self.purpose, self.req, self.round = token, purpose, req, rnd


class ReadIndex:
    """Read rounds and the reads waiting for them (needs the core's state)."""

    def _init_reads(self) -> None:
        self.read_round = 0                        # Leader: the newest read round (grows for life)
        self.pending_reads: dict[int, PendingRead] = {}    # by expiry seq, in round order

    def _read(self, token, purpose: str, req, timeout_ms: float | None = None) -> None:
        """Start a linearizable read (``purpose`` INDEX, READ or KVGET of ``req``)."""
        if self.policy.no_read_index:
            self._answer_read(token, purpose, req)
            return
        if self.kind is not LEADER:
            self._reply(token, _refusal(purpose, errors.NOT_LEADER_OR_FOLLOWER))
            return
        if self.policy.lease_read:
            self._answer_read(token, purpose, req)
            return
        self.read_round += 1
        seq = self._expire_in(self.cfg.request_timeout_ms if timeout_ms is None else timeout_ms, "r", None)
        self.pending_reads[seq] = PendingRead(token, purpose, req, self.read_round)
        self._wake = True            # parked fetches answer now with the round, so followers echo it
        self._complete_reads()

    def _answer_read(self, token, purpose: str, req) -> None:
        hw = self.hw
        if purpose == READ:
            msg = ReadResponse(errors.NONE, hw, self.log.read(req.from_offset, hw, req.max_records))
        elif purpose == KVGET:
            msg = KvGetResponse(errors.NONE, self.kv.get(req.key), self.kv.applied)
        else:
            msg = ReadIndexResponse(errors.NONE, hw)
        self._reply(token, msg)

    def _complete_reads(self) -> None:
        """Answer the reads whose round a majority (ourselves included) has echoed."""
        if not self.pending_reads or not self._epoch_committed():
            return
        rounds = self.replicas.voter_values(self.voters, self.key, self.read_round, "read_round", 0)
        confirmed = majority_position(rounds) if rounds else 0
        for seq, r in list(self.pending_reads.items()):
            if r.round > confirmed:
                break
            del self.pending_reads[seq]
            self._answer_read(r.token, r.purpose, r.req)

    def _expire_read(self, seq: int) -> None:
        r = self.pending_reads.pop(seq, None)
        if r is not None:
            self._reply(r.token, _refusal(r.purpose, errors.REQUEST_TIMED_OUT,
                                          "read-index: leadership not confirmed by a majority in time"))

    def _fail_reads(self) -> None:
        reads, self.pending_reads = self.pending_reads, {}
        for r in reads.values():
            self._reply(r.token, _refusal(r.purpose, errors.NOT_LEADER_OR_FOLLOWER))


def _refusal(purpose: str, code: int, message: str | None = None):
    if purpose == READ:
        return ReadResponse(code, message=message)
    if purpose == KVGET:
        return KvGetResponse(code, message=message)
    return ReadIndexResponse(code, message=message)
