"""The replicated log: segment files of CRC'd records, with an epoch cache.

KIP-595 log semantics: records are appended at the log end offset (LEO) by
the leader, or copied by a follower; a follower truncates on DivergingEpoch;
a torn tail left by a crash is cut at the last valid record on open. Only
records below :attr:`Log.flushed_end` are known to be on disk (fsynced), and
only those may count toward the high watermark.
"""
from __future__ import annotations

import bisect
import logging
import os
from pathlib import Path

from . import records as rec
from .records import Record
from .segments import list_segments, segment_name
from .durable import fsync_dir, make_dirs

log = logging.getLogger("kraft.log")

#: Roll to a new segment once the active one reaches this size (bytes).
DEFAULT_SEGMENT_BYTES = 1024 * 1024


class LogError(RuntimeError):
    """An illegal log operation, e.g. appending out of sequence, or writing to a log that
    is not open (before :meth:`Log.open` or after :meth:`Log.close`)."""


class Log:
    """The log in ``<data dir>/log``.

    ``fsync=False`` is the ``no-fsync`` unsafe switch (KAFKA-10533): writes
    stay in a process buffer, written out only every so often, so a crash
    loses records the leader had already counted as stored.
    """

    def __init__(self, log_dir: Path, segment_bytes: int = DEFAULT_SEGMENT_BYTES, fsync: bool = True):
        self.dir = Path(log_dir)
        self.segment_bytes = segment_bytes
        self.fsync = fsync
        self.records: list[Record] = []
        self._pos: list[tuple[int, int]] = []          # per record: (segment index, byte position)
        self._segments: list[tuple[int, Path]] = []    # (base offset, path)
        self._fd: int | None = None
        self._active_size = 0
        self._buffer = bytearray()                      # no-fsync mode only
        self.flushed_end = 0
        self._epochs: list[int] = []                   # epoch cache: epochs, ascending
        self._epoch_starts: list[int] = []             # start offset of each epoch
        self.recovered_bytes = 0
        #: Observers of the log's content (e.g. :class:`kraft.voter_set.VoterHistory`):
        #: ``on_append(record)`` for every record loaded or appended, ``on_truncate(offset)``.
        self.listeners: list = []

    # -- opening and recovery ------------------------------------------------
    def open(self) -> None:
        """Load every segment, truncating a torn or corrupt tail (and any later segments).

        Sets :attr:`recovered_bytes` to the number of bytes cut. Raises OSError.
        """
        make_dirs(self.dir)
        segs = list_segments(self.dir)
        expected = 0
        for i, (base, path) in enumerate(segs):
            data = path.read_bytes()
            if base != expected:
                self._drop(segs[i:], f"segment {path.name} does not start at offset {expected}")
                break
            found, valid = rec.scan(data, expected)
            for r, p in found:
                self._remember(r, len(self._segments), p)
            self._segments.append((base, path))
            expected += len(found)
            if valid < len(data):
                self.recovered_bytes += len(data) - valid
                log.warning("truncating torn tail of %s at byte %d (%d bytes cut)", path.name, valid, len(data) - valid)
                with open(path, "r+b") as f:
                    f.truncate(valid)
                    os.fsync(f.fileno())
                self._drop(segs[i + 1:], "after a torn tail")
                break
        if not self._segments:
            self._new_segment(0)
        else:
            self._open_active()
        self.flushed_end = len(self.records)

    def _drop(self, segs: list[tuple[int, Path]], why: str) -> None:
        for _, p in segs:
            self.recovered_bytes += p.stat().st_size
            log.warning("deleting segment %s (%s)", p.name, why)
            p.unlink()
        if segs:
            fsync_dir(self.dir)

    def _open_active(self) -> None:
        if self._fd is not None:
            if self.fsync:
                # a roll: records appended to the old segment since the last flush are in it,
                # and flush() syncs only the active segment
                os.fsync(self._fd)
            os.close(self._fd)
        path = self._segments[-1][1]
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._active_size = os.fstat(self._fd).st_size

    def _new_segment(self, base: int) -> None:
        self._flush_buffer()
        path = self.dir / segment_name(base)
        self._segments.append((base, path))
        self._open_active()
        fsync_dir(self.dir)

    def _require_open(self, what: str) -> None:
        if self._fd is None:
            raise LogError(f"{what} on a log that is not open ({self.dir})")

    def close(self) -> None:
        """Write out any buffer and close the active segment. Later writes raise LogError."""
        if self._fd is not None:
            self._flush_buffer()
            os.close(self._fd)
            self._fd = None

    def _remember(self, r: Record, seg: int, pos: int) -> None:
        self.records.append(r)
        self._pos.append((seg, pos))
        if not self._epochs or r.epoch > self._epochs[-1]:
            self._epochs.append(r.epoch)
            self._epoch_starts.append(r.offset)
        elif r.epoch < self._epochs[-1]:
            raise LogError(f"record at offset {r.offset} has epoch {r.epoch} below {self._epochs[-1]}")
        for listener in self.listeners:
            listener.on_append(r)

    # -- queries --------------------------------------------------------------
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
        end = self._epoch_starts[i + 1] if i + 1 < len(self._epochs) else self.end_offset
        return self._epochs[i], end

    def read(self, start: int, end: int, max_records: int | None = None) -> list[Record]:
        """Records with offsets in [start, end), at most ``max_records``."""
        start, end = max(0, start), min(end, self.end_offset)
        if max_records is not None:
            end = min(end, start + max_records)
        return self.records[start:end] if start < end else []

    # -- writes ---------------------------------------------------------------
    def append(self, r: Record) -> None:
        """Append ``r`` at the LEO (not yet fsynced: call :meth:`flush`).

        Raises LogError if ``r.offset`` != LEO, its epoch is below the last, or
        the log is not open; the log is then unchanged.
        """
        self._require_open("append")
        if r.offset != self.end_offset:
            raise LogError(f"append at offset {r.offset}, log end offset is {self.end_offset}")
        if self._active_size >= self.segment_bytes:
            self._new_segment(r.offset)
        data = rec.encode(r)
        self._remember(r, len(self._segments) - 1, self._active_size)
        self._active_size += len(data)
        if self.fsync:
            self._write(data)
        else:
            self._buffer += data

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]

    def _flush_buffer(self) -> None:
        if self._buffer and self._fd is not None:
            self._write(bytes(self._buffer))
            self._buffer.clear()

    def flush(self) -> None:
        """fsync what was appended; afterwards :attr:`flushed_end` == LEO.

        In no-fsync mode this only marks the records as stored (the bug).
        Raises LogError if the log is not open.
        """
        if self.flushed_end == self.end_offset:
            return
        self._require_open("flush")
        if self.fsync:
            os.fsync(self._fd)
        self.flushed_end = self.end_offset

    def write_out_buffer(self) -> None:
        """No-fsync mode: hand buffered records to the OS (called periodically)."""
        self._flush_buffer()

    def truncate_to(self, offset: int) -> int:
        """Remove every record at ``offset`` and above; returns the number removed.

        Files are truncated and later segments deleted, durably. Raises LogError
        if the log is not open.
        """
        if offset >= self.end_offset:
            return 0
        self._require_open("truncate")
        removed = self.end_offset - offset
        self._flush_buffer()
        seg, pos = self._pos[offset]
        for _, path in self._segments[seg + 1:]:
            path.unlink()
        del self._segments[seg + 1:]
        path = self._segments[seg][1]
        with open(path, "r+b") as f:
            f.truncate(pos)
            os.fsync(f.fileno())
        fsync_dir(self.dir)
        del self.records[offset:]
        del self._pos[offset:]
        while self._epoch_starts and self._epoch_starts[-1] >= offset:
            self._epochs.pop()
            self._epoch_starts.pop()
        self._open_active()
        self.flushed_end = min(self.flushed_end, offset)
        for listener in self.listeners:
            listener.on_truncate(offset)
        return removed
