"""Compact containers for the streaming checkers, so memory follows the log, not the history.

A Python dict of millions of records costs ~150 bytes a record; these keep
the common case (a data record with an int payload and an int epoch) in
arrays at ~17 bytes, and anything else in a plain dict beside them, so
every record comes back exactly as it was put.
"""
from __future__ import annotations

from array import array
from typing import Any, Iterable

DATA = "data"
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
_BITS = 10
_CHUNK = 1 << _BITS
_MASK = _CHUNK - 1


def small_int(x: Any) -> bool:
    """True for an int (not a bool) that fits in 64 bits."""
    return type(x) is int and INT64_MIN <= x <= INT64_MAX


class RecordTable:
    """offset -> record ``(offset, epoch, type, payload)``, as a dict would keep them.

    Data records whose epoch and payload are 64-bit ints live in chunks of
    1024 offsets (a kind byte and two int64 slots each); other records, and
    records whose chunk would be mostly empty (offsets spread thin), live in
    a dict. Chunks are created only while their capacity stays within a
    few times the records held, so scattered offsets cannot blow it up.
    """

    __slots__ = ("_chunks", "_other", "_compact")

    def __init__(self) -> None:
        self._chunks: dict[int, tuple[bytearray, array, array]] = {}
        self._other: dict[int, tuple] = {}
        self._compact = 0

    def __len__(self) -> int:
        return self._compact + len(self._other)

    def get(self, offset: int) -> tuple | None:
        """The record at ``offset`` (an int), or None."""
        c = self._chunks.get(offset >> _BITS)
        if c is not None:
            i = offset & _MASK
            if c[0][i]:
                return offset, c[1][i], DATA, c[2][i]
        return self._other.get(offset) if self._other else None

    def _slot(self, offset: int, create: bool):
        c = self._chunks.get(offset >> _BITS)
        if c is None and create and (len(self._chunks) + 1) * _CHUNK <= 4 * (self._compact + _CHUNK):
            z = bytes(8 * _CHUNK)
            c = self._chunks[offset >> _BITS] = (bytearray(_CHUNK), array("q", z), array("q", z))
        return c

    def put(self, rec: tuple) -> tuple | None:
        """Store ``rec`` at its offset (``rec[0]``, an int); returns the record it replaced, or None."""
        offset, epoch, rtype, payload = rec
        compact = rtype == DATA and small_int(payload) and small_int(epoch)
        c = self._chunks.get(offset >> _BITS)
        i = offset & _MASK
        if c is not None and c[0][i]:
            prev = offset, c[1][i], DATA, c[2][i]
        else:
            prev = self._other.get(offset) if self._other else None
            if c is None and compact:
                c = self._slot(offset, True)
        if compact and c is not None:
            if not c[0][i]:
                self._compact += 1
                if prev is not None:
                    del self._other[offset]
            c[0][i], c[1][i], c[2][i] = 1, epoch, payload
            return prev
        if c is not None and c[0][i]:
            c[0][i] = 0
            self._compact -= 1
        self._other[offset] = (offset, epoch, rtype, payload)
        return prev

    def first_or_same(self, offset: int, rtype: str, payload) -> bool:
        """Keep ``(offset, 0, rtype, payload)`` if ``offset`` holds no record and return True;
        else whether the record there is the same by (type, payload) (``reads.record_key``)."""
        c = self._chunks.get(offset >> _BITS)
        if c is not None:
            i = offset & _MASK
            if c[0][i]:
                return rtype == DATA and type(payload) is int and c[2][i] == payload
        prev = self._other.get(offset) if self._other else None
        if prev is None:
            self.put((offset, 0, rtype, payload))
            return True
        if type(payload) is int and type(prev[3]) is int:
            return rtype == prev[2] and payload == prev[3]
        if payload is prev[3]:          # the very object seen before (a simulated read shares it): same key
            return rtype == prev[2]
        from .reads import record_key
        return record_key(rtype, payload) == record_key(prev[2], prev[3])

    def differing(self, records: Iterable[tuple]) -> list[int]:
        """:meth:`first_or_same` for each ``(offset, epoch, type, payload)`` of ``records`` in
        turn (offsets are ints); returns the offsets where it was False, in order. One call
        for a read's records: the common case (the same data record seen before) is a
        lookup here, with no call per record."""
        out: list[int] = []
        chunks, same = self._chunks, self.first_or_same
        for offset, _epoch, rtype, payload in records:
            c = chunks.get(offset >> _BITS)
            if c is not None:
                i = offset & _MASK
                if c[0][i]:
                    if not (rtype == DATA and type(payload) is int and c[2][i] == payload):
                        out.append(offset)
                    continue
            if not same(offset, rtype, payload):
                out.append(offset)
        return out

    def data_offsets_of(self, wanted: set) -> dict:
        """``{payload: [offsets]}`` of the data records whose payload is in ``wanted``
        (hashable payloads only; a dict keyed by payload would hold the same lists)."""
        out: dict = {}
        ints = set()
        for w in wanted:
            if type(w) in (int, bool) or (type(w) is float and w.is_integer()):
                ints.add(int(w))
        if ints and self._chunks:
            import numpy as np
            want = np.fromiter((w for w in ints if INT64_MIN <= w <= INT64_MAX), dtype=np.int64)
            for base, (kind, _epochs, payloads) in self._chunks.items():
                pay = np.frombuffer(payloads, dtype=np.int64)
                hit = np.flatnonzero(np.isin(pay, want) & (np.frombuffer(kind, dtype=np.uint8) != 0))
                for i in hit.tolist():
                    out.setdefault(int(pay[i]), []).append((base << _BITS) + i)
        for off, _epoch, rtype, payload in self._other.values():
            if rtype == DATA:
                try:
                    if payload in wanted:
                        out.setdefault(payload, []).append(off)
                except TypeError:       # unhashable payload: never an appended value
                    pass
        return out


class IntSet:
    """A set of ints built once, then only asked: ``add`` while building, ``freeze``, then
    ``in`` or :meth:`contains_many`. 8 bytes an added int (duplicates included until
    frozen); ints beyond 64 bits go to a plain set."""

    __slots__ = ("_buf", "_big", "_sorted")

    def __init__(self) -> None:
        self._buf = array("q")
        self._big: set[int] = set()
        self._sorted = None

    def add(self, x: int) -> None:
        if INT64_MIN <= x <= INT64_MAX:
            self._buf.append(x)
        else:
            self._big.add(x)

    def freeze(self) -> None:
        import numpy as np
        self._sorted = np.unique(np.frombuffer(self._buf, dtype=np.int64)) if self._buf \
            else np.empty(0, dtype=np.int64)
        self._buf = array("q")

    def __contains__(self, x: int) -> bool:
        if not INT64_MIN <= x <= INT64_MAX:
            return x in self._big
        s = self._sorted
        i = int(s.searchsorted(x))
        return i < len(s) and int(s[i]) == x

    def contains_many(self, xs: Iterable[int]) -> list[bool]:
        """Membership of each int in ``xs`` (64-bit ints), as a list."""
        import numpy as np
        q = np.fromiter(xs, dtype=np.int64)
        s = self._sorted
        if not len(s) or not len(q):
            return [False] * len(q)
        i = np.minimum(s.searchsorted(q), len(s) - 1)
        return (s[i] == q).tolist()
