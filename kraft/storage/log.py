"""The replicated log: segment files of CRC'd records, with an epoch cache.

KIP-595 log semantics: records are appended at the log end offset (LEO) by
the leader, or copied by a follower; a follower truncates on DivergingEpoch;
a torn tail left by a crash is cut at the last valid record on open. Only
records below :attr:`Log.flushed_end` are known to be on disk (fsynced), and
only those may count toward the high watermark.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path

from ..core import records as rec
from ..core.record_log import LogError, RecordLog
from ..core.records import Record
from .durable import fsync_dir, make_dirs
from .segments import list_segments, segment_name

log = logging.getLogger("kraft.log")

#: Roll to a new segment once the active one reaches this size (bytes).
DEFAULT_SEGMENT_BYTES = 1024 * 1024


class Log:
    """The log in ``<data dir>/log``: segment files, and the records in memory in
    :attr:`index` (a :class:`kraft.core.record_log.RecordLog`, which a core may share).

    Two ways to write: :meth:`append` puts a record in the index and the files;
    :meth:`write` puts records the index already holds (a core appended them) into
    the files. :meth:`truncate_to` truncates both (the index only if it still holds
    more). ``fsync=False`` is the ``no-fsync`` unsafe switch (KAFKA-10533): writes
    stay in a process buffer, written out only every so often, so a crash loses
    records the leader had already counted as stored.
    """

    def __init__(self, log_dir: Path, segment_bytes: int = DEFAULT_SEGMENT_BYTES, fsync: bool = True,
                 index: RecordLog | None = None):
        self.dir = Path(log_dir)
        self.segment_bytes = segment_bytes
        self.fsync = fsync
        self.index = index if index is not None else RecordLog()
        self._pos: list[tuple[int, int]] = []          # per record in the files: (segment index, byte position)
        self._segments: list[tuple[int, Path]] = []    # (base offset, path)
        self._fd: int | None = None
        self._active_size = 0
        self._buffer = bytearray()                      # no-fsync mode only
        self.flushed_end = 0
        self.recovered_bytes = 0

    @property
    def records(self) -> list[Record]:
        """Every record, in offset order (the index's list)."""
        return self.index.records

    @property
    def listeners(self) -> list:
        """The index's listeners (see :class:`kraft.core.record_log.RecordLog`)."""
        return self.index.listeners

    @property
    def end_offset(self) -> int:
        """The log end offset (LEO): the offset the next record gets."""
        return self.index.end_offset

    @property
    def last_epoch(self) -> int:
        """Epoch of the last record, or 0 for an empty log."""
        return self.index.last_epoch

    def epoch_start(self, epoch: int) -> int | None:
        """See :meth:`kraft.core.record_log.RecordLog.epoch_start`."""
        return self.index.epoch_start(epoch)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """See :meth:`kraft.core.record_log.RecordLog.end_offset_for_epoch`."""
        return self.index.end_offset_for_epoch(epoch)

    def read(self, start: int, end: int, max_records: int | None = None) -> list[Record]:
        """Records with offsets in [start, end), at most ``max_records``."""
        return self.index.read(start, end, max_records)

    # -- opening and recovery ------------------------------------------------
    def scan(self) -> "LogScan":
        """Read the segment files without changing them (:func:`scan_log`). Raises OSError."""
        return scan_log(self.dir)

    def open(self, scan: "LogScan | None" = None, cut_torn_tail: bool = True) -> None:
        """Load the valid records of ``scan`` (default: a fresh :meth:`scan`) into the (empty)
        index and open the last valid segment for appends. With ``cut_torn_tail`` (what
        kraft/storage/recovery.py decides) a torn or corrupt tail is truncated and any later
        segment deleted, durably; without, the files are left as they are and new records
        follow the tail.

        Sets :attr:`recovered_bytes` to the number of bytes cut. Raises OSError.
        """
        make_dirs(self.dir)
        if scan is None:
            scan = self.scan()
        for r, p in zip(scan.records, scan.positions):
            self.index.append(r)
            self._pos.append(p)
        self._segments = list(scan.segments)
        if cut_torn_tail:
            if scan.torn_segment is not None:
                path = scan.segments[scan.torn_segment][1]
                cut = path.stat().st_size - scan.valid_bytes
                self.recovered_bytes += cut
                log.warning("truncating torn tail of %s at byte %d (%d bytes cut)", path.name, scan.valid_bytes, cut)
                with open(path, "r+b") as f:
                    f.truncate(scan.valid_bytes)
                    os.fsync(f.fileno())
            self._drop(scan.dropped, scan.why_dropped)
        if not self._segments:
            self._new_segment(0)
        else:
            self._open_active()
        self.flushed_end = len(self._pos)

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

    # -- writes ---------------------------------------------------------------
    @property
    def written_end(self) -> int:
        """The end of what is in the files (or, under no-fsync, in the process buffer)."""
        return len(self._pos)

    def append(self, r: Record) -> None:
        """Append ``r`` at the LEO, to the index and the files (not yet fsynced: call
        :meth:`flush`).

        Raises LogError if ``r.offset`` != LEO, its epoch is below the last, or
        the log is not open; the log is then unchanged. Raises ValueError for an
        oversized payload (unchanged too).
        """
        self._require_open("append")
        if r.offset != self.index.end_offset:
            raise LogError(f"append at offset {r.offset}, log end offset is {self.index.end_offset}")
        data = rec.encode(r)
        self.index.append(r)
        self._write_one(r, data)

    def write(self, records: list[Record]) -> None:
        """Write ``records`` (which the shared index already holds, at offsets from
        :attr:`written_end` on) to the files; records already written are skipped.
        Raises LogError if the log is not open or a record would leave a gap."""
        self._require_open("write")
        for r in records:
            if r.offset < len(self._pos):
                continue
            if r.offset != len(self._pos):
                raise LogError(f"write at offset {r.offset}, the files end at {len(self._pos)}")
            self._write_one(r, rec.encode(r))

    def _write_one(self, r: Record, data: bytes) -> None:
        if self._active_size >= self.segment_bytes:
            self._new_segment(r.offset)
        self._pos.append((len(self._segments) - 1, self._active_size))
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
        """fsync what was written; afterwards :attr:`flushed_end` == :attr:`written_end`.

        In no-fsync mode this only marks the records as stored (the bug).
        Raises LogError if the log is not open.
        """
        if self.flushed_end == len(self._pos):
            return
        self._require_open("flush")
        if self.fsync:
            os.fsync(self._fd)
        self.flushed_end = len(self._pos)

    def write_out_buffer(self) -> None:
        """No-fsync mode: hand buffered records to the OS (called periodically)."""
        self._flush_buffer()

    def truncate_to(self, offset: int) -> int:
        """Remove every record at ``offset`` and above, from the index (if it still holds
        them) and the files; returns the number removed from the index.

        Files are truncated and later segments deleted, durably. Raises LogError
        if the log is not open.
        """
        if offset >= len(self._pos):
            return self.index.truncate_to(offset)
        self._require_open("truncate")
        removed = self.index.truncate_to(offset)
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
        del self._pos[offset:]
        self._open_active()
        self.flushed_end = min(self.flushed_end, offset)
        return removed


class LogScan:
    """What :func:`scan_log` read: ``records`` (the valid ones, offsets 0.. in order) and
    their ``positions`` ((segment index, byte position)), ``segments`` (the segments they are
    in, as (base offset, path)), ``torn_segment`` (index in ``segments`` of the one with a
    torn or corrupt tail, or None) and its ``valid_bytes``, ``dropped`` (segments after the
    tail or out of place, unreadable) and why, and ``torn_bytes`` (every byte after the last
    valid record)."""

    __slots__ = ("records", "positions", "segments", "torn_segment", "valid_bytes", "dropped", "why_dropped",
                 "torn_bytes")

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.positions: list[tuple[int, int]] = []
        self.segments: list[tuple[int, Path]] = []
        self.torn_segment: int | None = None
        self.valid_bytes = 0
        self.dropped: list[tuple[int, Path]] = []
        self.why_dropped = ""
        self.torn_bytes = 0


def scan_log(log_dir: Path) -> LogScan:
    """Read the segments in ``log_dir`` up to the first invalid byte (a torn or corrupt
    record, or a segment that does not start where the previous one ended), without changing
    anything. Raises OSError."""
    out = LogScan()
    segs = list_segments(Path(log_dir))
    for i, (base, path) in enumerate(segs):
        data = path.read_bytes()
        expected = len(out.records)
        if base != expected:
            out.dropped, out.why_dropped = segs[i:], f"segment {path.name} does not start at offset {expected}"
            break
        found, valid = rec.scan(data, expected)
        for r, p in found:
            out.records.append(r)
            out.positions.append((len(out.segments), p))
        out.segments.append((base, path))
        if valid < len(data):
            out.torn_segment, out.valid_bytes = len(out.segments) - 1, valid
            out.torn_bytes += len(data) - valid
            out.dropped, out.why_dropped = segs[i + 1:], "after a torn tail"
            break
    out.torn_bytes += sum(p.stat().st_size for _, p in out.dropped)
    return out
