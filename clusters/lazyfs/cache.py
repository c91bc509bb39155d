"""The lazyfs-style page cache of one file: what a reader sees versus what the disk holds.

Pure data structures, no FUSE and no I/O (the FUSE layer, ``clusters/lazyfs/fs.py``,
passes in a reader for the backing file and applies a :class:`SyncPlan`).

POSIX semantics modelled: a ``write`` is visible to every reader at once but
durable only after an ``fsync``/``fdatasync`` of that file; ``close`` is not a
sync. The backing file holds the durable bytes; the cache holds the dirty byte
ranges written since the last sync (:class:`Extents`), the logical size (after
writes, truncates and extends) and ``hide_from``: backing bytes at or above
that offset were cut by a truncate and read as zeros unless rewritten.
"""
from __future__ import annotations

import bisect
import random
from dataclasses import dataclass, field


class Extents:
    """Sorted, non-overlapping dirty byte ranges of one file.

    ``starts[i]`` is the file offset (bytes) of extent ``i`` and ``datas[i]``
    its bytes (a ``bytearray``); extents never overlap or touch the next one's
    start after a write (touching writes are merged). A sequential writer
    appends to the last extent in place (amortised O(len(buf)) per write, no
    whole-file copies).
    """

    __slots__ = ("starts", "datas")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.datas: list[bytearray] = []

    def __len__(self) -> int:
        return len(self.starts)

    def nbytes(self) -> int:
        """Total dirty bytes held."""
        return sum(len(d) for d in self.datas)

    def items(self) -> list[tuple[int, bytes]]:
        """``[(offset, bytes), ...]`` in offset order (copies)."""
        return [(s, bytes(d)) for s, d in zip(self.starts, self.datas)]

    def end(self) -> int:
        """One past the last dirty byte; 0 when empty."""
        return self.starts[-1] + len(self.datas[-1]) if self.starts else 0

    def write(self, off: int, buf: bytes) -> None:
        """Record ``buf`` at file offset ``off``, overwriting older dirty bytes there.

        Raises ``ValueError`` for a negative offset. An empty ``buf`` is a no-op.
        """
        if off < 0:
            raise ValueError(f"negative offset {off}")
        n = len(buf)
        if n == 0:
            return
        end = off + n
        starts, datas = self.starts, self.datas
        # first extent that overlaps or touches [off, end)
        i = bisect.bisect_right(starts, off) - 1
        if i < 0 or starts[i] + len(datas[i]) < off:
            i += 1
        # last extent that starts at or before end (overlaps or touches)
        j = bisect.bisect_right(starts, end) - 1
        if i > j:
            starts.insert(i, off)
            datas.insert(i, bytearray(buf))
            return
        if i == j and starts[i] <= off:
            data = datas[i]
            rel = off - starts[i]
            if rel + n <= len(data):
                data[rel:rel + n] = buf          # overwrite inside: same length, in place
            else:
                del data[rel:]                   # rel <= len(data) since it touches
                data += buf                      # sequential append: amortised
            return
        s0 = min(off, starts[i])
        merged = bytearray(datas[i][:off - starts[i]]) if starts[i] < off else bytearray()
        merged += buf
        last_end = starts[j] + len(datas[j])
        if last_end > end:
            merged += datas[j][end - starts[j]:]
        starts[i:j + 1] = [s0]
        datas[i:j + 1] = [merged]

    def truncate(self, size: int) -> None:
        """Drop every dirty byte at offset >= ``size`` (bytes)."""
        k = bisect.bisect_left(self.starts, size)
        del self.starts[k:]
        del self.datas[k:]
        if self.starts:
            cut = size - self.starts[-1]
            if cut < len(self.datas[-1]):
                del self.datas[-1][cut:]

    def overlay(self, off: int, out: bytearray) -> None:
        """Copy the dirty bytes that fall in ``[off, off + len(out))`` into ``out`` (in place)."""
        end = off + len(out)
        starts, datas = self.starts, self.datas
        i = max(bisect.bisect_right(starts, off) - 1, 0)
        while i < len(starts) and starts[i] < end:
            s, d = starts[i], datas[i]
            a, b = max(s, off), min(s + len(d), end)
            if a < b:
                out[a - off:b - off] = d[a - s:b - s]
            i += 1


@dataclass
class SyncPlan:
    """What an fsync must do to the backing file, in this order (offsets and sizes in bytes).

    ``cut_to``: ``ftruncate`` to this size first (a truncate below the durable
    size), or None. ``writes``: ``(offset, bytes)`` to ``pwrite``. ``size``:
    ``ftruncate`` to this final size when the file does not already have it.
    """
    cut_to: int | None
    writes: list[tuple[int, bytes]]
    size: int


@dataclass
class TornWrite:
    """The prefix of the most recent unsynced write that a crash persists.

    ``offset`` and ``length`` (bytes) are the whole write's; ``kept`` the
    number of its first bytes that reach the disk; ``data`` those bytes.
    """
    offset: int
    length: int
    kept: int
    data: bytes


@dataclass
class FileCache:
    """lazyfs-style page cache of one inode: dirty extents over a durable backing file.

    ``durable_size``: the backing file's size (bytes). ``size``: the logical
    size readers see. ``hide_from``: backing bytes at offsets >= this read as
    zeros (a truncate cut them). ``last_write``: ``(seq, offset, bytes)`` of the
    newest unsynced write, for torn writes. All offsets are bytes.
    """
    durable_size: int
    size: int = -1
    hide_from: int = -1
    extents: Extents = field(default_factory=Extents)
    last_write: tuple[int, int, bytes] | None = None
    truncated: bool = False

    def __post_init__(self) -> None:
        if self.size < 0:
            self.size = self.durable_size
        if self.hide_from < 0:
            self.hide_from = self.durable_size

    @property
    def dirty(self) -> bool:
        """True when the logical file differs (or may differ) from the backing file."""
        return bool(self.extents) or self.truncated or self.size != self.durable_size

    def dirty_bytes(self) -> int:
        """Bytes a crash would lose: dirty extent bytes (size-only changes count 0)."""
        return self.extents.nbytes()

    def write(self, off: int, buf: bytes, seq: int) -> None:
        """A write(2) at ``off``: visible now, durable at the next sync. ``seq`` orders writes globally."""
        self.extents.write(off, buf)
        if buf:
            self.last_write = (seq, off, buf)
            self.size = max(self.size, off + len(buf))

    def truncate(self, size: int) -> None:
        """ftruncate(2) to ``size`` bytes (shrink or extend with zeros). Raises ``ValueError`` if negative."""
        if size < 0:
            raise ValueError(f"negative size {size}")
        self.extents.truncate(size)
        self.hide_from = min(self.hide_from, size)
        self.size = size
        self.truncated = True

    def read(self, off: int, n: int, pread) -> bytes:
        """Up to ``n`` bytes at ``off`` as a reader sees them.

        ``pread(off, n) -> bytes`` reads the backing file (it may return fewer
        bytes at its end). Bytes past ``size`` are not returned; backing bytes at
        or above ``hide_from`` and holes read as zeros; dirty extents win.
        """
        n = max(0, min(n, self.size - off))
        if n == 0:
            return b""
        out = bytearray(n)
        visible = min(off + n, self.hide_from, self.durable_size) - off
        if visible > 0:
            got = pread(off, visible)
            out[:len(got)] = got
        if self.extents:
            self.extents.overlay(off, out)
        return bytes(out)

    def sync_plan(self) -> SyncPlan:
        """The backing-file changes that make the logical file durable (see :class:`SyncPlan`)."""
        cut = self.hide_from if self.hide_from < self.durable_size else None
        return SyncPlan(cut_to=cut, writes=self.extents.items(), size=self.size)

    def mark_synced(self) -> None:
        """After the :meth:`sync_plan` was applied and fsynced: nothing is dirty any more."""
        self.extents = Extents()
        self.durable_size = self.hide_from = self.size
        self.last_write = None
        self.truncated = False

    def torn(self, rng: random.Random) -> TornWrite | None:
        """The torn form of the newest unsynced write: a seeded random strict prefix.

        Byte granularity: ``kept`` is drawn uniformly from ``1..length-1``; a
        1-byte write has no strict non-empty prefix and gives None, as does a
        file with no unsynced write.
        """
        if self.last_write is None:
            return None
        _, off, buf = self.last_write
        if len(buf) < 2:
            return None
        kept = rng.randint(1, len(buf) - 1)
        return TornWrite(offset=off, length=len(buf), kept=kept, data=bytes(buf[:kept]))
