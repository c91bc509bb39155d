"""The high watermark (KIP-595 "Fetch"; KAFKA-12619): advancing it, applying what it
commits, and answering the writes waiting for it. A mixin of
:class:`kraft.quorum.core.QuorumCore`; the rule itself is the pure
:func:`kraft.high_watermark.next_high_watermark`.

The leader's high watermark is the majority position of the voters' stored log end
offsets (its own fsynced end included, when it is a voter), once this epoch's first
record is committed; a follower takes ``min(leader's, own log end offset)``. Every
node applies the committed records to the kv state machine and the metadata image as
the high watermark advances. A write waits in :attr:`pending` (by offset) until the
high watermark passes it, its deadline, or the end of the leadership.
"""
from __future__ import annotations

from ..core import errors
from ..core.states import StateKind
from ..rules.high_watermark import next_high_watermark
from ..rules.membership import should_resign
from .client_messages import AppendResponse, KvWriteResponse, VoterChangeResponse

LEADER = StateKind.LEADER
LEADER_CHECK = "leader"
#: What a pending write is: Append (ack-before-commit answers these on the leader's
#: fsync), an in-process proposal, a KvWrite, or a voter change.
PLAIN, PROPOSE, KV, VOTERS = "append", "propose", "kv", "voters"


class PendingWrite:
    """A write waiting for the high watermark to pass ``offset`` (its last record): its
    ``token``, ``kind``, ``first`` offset and ``seq`` (its expiry entry)."""

    __slots__ = ("token", "kind", "first", "offset", "seq")

    def __init__(self, token, kind: str, first: int, offset: int, seq: int):
        self.token, self.kind, self.first, self.offset, self.seq = token, kind, first, offset, seq


class Commit:
    """The high watermark and the writes that wait for it (needs the core's state)."""

    def _init_commit(self) -> None:
        self.pending: dict[int, PendingWrite] = {}    # last offset -> write, in offset order

    def _epoch_committed(self) -> bool:
        return self.hw > self.epoch_start or self.policy.early_high_watermark

    def leader_epoch_committed(self) -> bool:
        """True iff this node is the leader and the first record of its epoch is committed
        (so every record committed by earlier leaders is below the high watermark, KIP-595)."""
        return self.kind is LEADER and self.hw > self.epoch_start

    def _update_hw(self) -> None:
        positions = self.replicas.voter_values(self.voters, self.key, self.durable_end, "end_offset", -1)
        if not positions:
            return
        new = next_high_watermark(self.hw, positions, self.epoch_start,
                                  require_epoch_commit=not self.policy.early_high_watermark,
                                  quorum_off_by_one=self.policy.commit_minority)
        if new > self.hw:
            self.hw = new
            self._apply_committed()     # before answering writes: a KvWrite needs its result
            self._wake = True
            self._answer_appends(new)
            self._complete_reads()
            if self._removed():
                self._set_deadline(LEADER_CHECK, self.now)     # resign there (kraft/quorum/leader.py)

    def _removed(self) -> bool:
        """A leader resigns once a voter set without it is committed (KIP-853)."""
        return should_resign(self.voters, self.key, self.hw, self.history.last_offset)

    def _apply_committed(self) -> None:
        """Apply the newly committed records (up to the high watermark) to the kv state
        machine and the metadata image."""
        self.kv.apply_committed(self.log, self.hw)
        self.metadata.apply_committed(self.log, self.hw)

    # -- pending writes ------------------------------------------------------------------
    def _answer_appends(self, below: int, plain_only: bool = False) -> None:
        """Answer the pending writes whose last offset is below ``below`` (only Appends, with
        ``plain_only``)."""
        pending = self.pending
        for o in list(pending):
            if o >= below:
                break
            w = pending[o]
            if plain_only and w.kind != PLAIN:
                continue
            del pending[o]
            self._reply(w.token, self._write_done(w))

    def _write_done(self, w: PendingWrite):
        epoch = self.log.records[w.first].epoch
        if w.kind == KV:
            result = self.kv.take_result(w.offset)
            return KvWriteResponse(errors.NONE, w.offset, epoch, result is not None and result.succeeded,
                                   result.previous if result is not None else None)
        if w.kind == VOTERS:
            return VoterChangeResponse(errors.NONE)
        return AppendResponse(errors.NONE, w.first, epoch)

    def _write_failed(self, w: PendingWrite, message: str):
        if w.kind == KV:
            self.kv.take_result(w.offset)     # forget a result nobody will collect
            return KvWriteResponse(errors.REQUEST_TIMED_OUT, message=message)
        if w.kind == VOTERS:
            return VoterChangeResponse(errors.REQUEST_TIMED_OUT, message)
        return AppendResponse(errors.REQUEST_TIMED_OUT, message=message)

    def _expire_write(self, offset: int, seq: int, timeout_ms: float) -> None:
        w = self.pending.get(offset)
        if w is not None and w.seq == seq:
            del self.pending[offset]
            self._reply(w.token, self._write_failed(
                w, f"offset {offset} not committed within {timeout_ms:.0f} ms"))

    def _fail_pending(self, why: str) -> None:
        """Leadership is lost: every pending write is indefinite, every pending read refused."""
        pending, self.pending = self.pending, {}
        for w in pending.values():
            self._reply(w.token, self._write_failed(w, f"REQUEST_TIMED_OUT: {why}"))
        self._fail_reads()
