"""The records of a log in memory, with its epoch cache (KIP-595 log semantics; no I/O).

The cores (kraft/quorum/, kraft/replication/) read and change a :class:`RecordLog`
and tell their runtime, with effects, what to write, fsync or truncate on disk. The
disk log (:class:`kraft.storage.log.Log`) keeps its records in a RecordLog too, and can share
it with a core: the asyncio adapter does, so the core sees what the disk log loaded.
"""
from __future__ import annotations

import bisect

from .records import Record


class LogError(RuntimeError):
    """An illegal log operation, e.g. appending out of sequence, or writing to a log that
    is not open (before :meth:`Log.open` or after :meth:`Log.close`)."""


class RecordLog:
    """Records at offsets 0.. in order, with the start offset of every epoch.

    ``listeners`` observe the content (e.g. :class:`kraft.rules.voter_set.VoterHistory`):
    ``on_append(record)`` for every record appended, ``on_truncate(offset)`` for
    every truncation that removed something.
    """

    __slots__ = ("records", "_epochs", "_epoch_starts", "listeners")

    def __init__(self, records: list[Record] | None = None) -> None:
        self.records: list[Record] = []
        self._epochs: list[int] = []          # epoch cache: epochs, ascending
        self._epoch_starts: list[int] = []    # start offset of each epoch
        self.listeners: list = []
        for r in records or ():
            self.append(r)

    @property
    def end_offset(self) -> int:
        """The log end offset (LEO): the offset the next record gets."""
        return len(self.records)

    @property
    def last_epoch(self) -> int:
        """Epoch of the last record, or 0 for an empty log."""
        return self.records[-1].epoch if self.records else 0

    def epoch_start(self, epoch: int) -> int | None:
        """First offset of ``epoch`` in this log, or None if it has no records."""
        i = bisect.bisect_left(self._epochs, epoch)
        return self._epoch_starts[i] if i < len(self._epochs) and self._epochs[i] == epoch else None

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(e, end): the largest epoch e <= ``epoch`` in the log and its end offset.

        The end offset is the first offset of the next higher epoch, or the
        LEO. With no epoch <= ``epoch``, returns (0, 0). KIP-595, Fetch
        validation (OffsetsForLeaderEpoch semantics).
        """
        i = bisect.bisect_right(self._epochs, epoch) - 1
        if i < 0:
            return 0, 0
        end = self._epoch_starts[i + 1] if i + 1 < len(self._epochs) else len(self.records)
        return self._epochs[i], end

    def read(self, start: int, end: int, max_records: int | None = None) -> list[Record]:
        """Records with offsets in [start, end), at most ``max_records``."""
        start, end = max(0, start), min(end, len(self.records))
        if max_records is not None:
            end = min(end, start + max_records)
        return self.records[start:end] if start < end else []

    def append(self, r: Record) -> None:
        """Append ``r`` at the LEO. Raises LogError if ``r.offset`` != LEO or its epoch is
        below the last; the log is then unchanged."""
        if r.offset != len(self.records):
            raise LogError(f"append at offset {r.offset}, log end offset is {len(self.records)}")
        epochs = self._epochs
        if not epochs or r.epoch > epochs[-1]:
            epochs.append(r.epoch)
            self._epoch_starts.append(r.offset)
        elif r.epoch < epochs[-1]:
            raise LogError(f"record at offset {r.offset} has epoch {r.epoch} below {epochs[-1]}")
        self.records.append(r)
        for listener in self.listeners:
            listener.on_append(r)

    def truncate_to(self, offset: int) -> int:
        """Remove every record at ``offset`` and above; returns the number removed."""
        if offset >= len(self.records):
            return 0
        offset = max(0, offset)
        removed = len(self.records) - offset
        del self.records[offset:]
        while self._epoch_starts and self._epoch_starts[-1] >= offset:
            self._epochs.pop()
            self._epoch_starts.pop()
        for listener in self.listeners:
            listener.on_truncate(offset)
        return removed


class DurableEnd:
    """How much of a log is on disk, as a core knows it from its SyncLog / SyncDone
    effects and events: ``end`` (records below it are fsynced).

    Syncs finish in the order they were asked for; a truncation while one is in flight
    caps what it can make durable (records written after the truncation are not covered
    by an fsync asked for before it).
    """

    __slots__ = ("end", "_syncs")

    def __init__(self, end: int = 0) -> None:
        self.end = end
        self._syncs: list[list[int]] = []      # in flight: [end asked for, cap]

    def asked(self, end: int) -> None:
        """An fsync up to ``end`` was asked for."""
        self._syncs.append([end, end])

    def pending(self, end: int) -> bool:
        """True iff an fsync in flight covers ``end``."""
        return bool(self._syncs) and self._syncs[-1][0] >= end

    def done(self, end: int, log_end: int) -> bool:
        """The fsync up to ``end`` finished (the log now ends at ``log_end``); True if
        :attr:`end` advanced."""
        cap = min(end, log_end)
        while self._syncs:
            asked, c = self._syncs.pop(0)
            if asked >= end:
                cap = min(cap, c)
                break
        return self.advance(cap)

    def advance(self, end: int) -> bool:
        """Count the log as stored up to ``end`` (e.g. under ``no-fsync``); True if it moved."""
        if end > self.end:
            self.end = end
            return True
        return False

    def truncated(self, offset: int) -> None:
        """The log was truncated to ``offset``."""
        if self.end > offset:
            self.end = offset
        for s in self._syncs:
            if s[1] > offset:
                s[1] = offset
