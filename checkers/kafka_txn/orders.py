"""Version orders: each key's log as the history shows it, and the anomalies read off it.

Jepsen's ``version-orders``: a key's log maps offsets to the values seen there, from every
poll (ok, info and fail alike: a consumer must never return bad data, whatever becomes of its
transaction) and from the sends of ops that must have committed (ok, or info with some send
that an ok poll read). Offsets with no value are gaps (transaction markers take offsets) and
are skipped: a value's *index* is its position among the occupied offsets. Two values at one
offset are ``inconsistent-offsets``; one value at two offsets is a ``duplicate``.

Where an offset holds several values, the one seen first stands for it in the order
(Jepsen picks one arbitrarily). ``index`` maps each value standing for an offset to its last
such position, as Jepsen's ``by-value`` does; :meth:`KeyOrder.first` and
:meth:`KeyOrder.last` also count the values hidden by a conflict, for ``lost-write``.
"""
from __future__ import annotations

from typing import Any, Iterable

from .collect import INFO, OK, TxnOp


class KeyOrder:
    """One key's version order.

    ``offsets``: index -> offset (ascending). ``by_index``: index -> the value standing for
    that offset. ``index``: value -> its last index in ``by_index`` (Jepsen's ``by-value``).
    ``conflicts``: offset -> every value seen there, first seen first (only offsets with two
    or more). ``multi``: value -> the indexes where it appears (only values at two or more
    offsets, counting conflicts).
    """

    __slots__ = ("offsets", "by_index", "index", "conflicts", "multi", "_first", "_last")

    def __init__(self, log: dict[int, Any], conflicts: dict[int, list] | None):
        self.offsets = sorted(log)
        self.by_index = [log[o] for o in self.offsets]
        self.index = {v: i for i, v in enumerate(self.by_index)}
        self.conflicts = conflicts or {}
        self.multi: dict[Any, list[int]] = {}
        self._first: dict[Any, int] = {}
        self._last: dict[Any, int] = {}
        if len(self.index) != len(self.by_index) or self.conflicts:
            self._irregular()

    def _irregular(self) -> None:
        """Find values at several offsets, and where conflict-hidden values first and last are."""
        seen: dict[Any, int] = {}
        for i, o in enumerate(self.offsets):
            values = self.conflicts.get(o) or (self.by_index[i],)
            for v in values:
                j = seen.get(v)
                if j is None:
                    seen[v] = i
                else:
                    self.multi.setdefault(v, [j]).append(i)
        for v, idx in self.multi.items():
            self._first[v], self._last[v] = idx[0], idx[-1]
        for o, values in self.conflicts.items():
            for v in values:
                if v not in self.multi:
                    self._first[v] = self._last[v] = seen[v]

    def first(self, v: Any) -> int | None:
        """The first index ``v`` appears at (conflicts counted), or None."""
        i = self._first.get(v)
        return i if i is not None else self.index.get(v)

    def last(self, v: Any) -> int | None:
        """The last index ``v`` appears at (conflicts counted), or None."""
        i = self._last.get(v)
        return i if i is not None else self.index.get(v)

    def values_at(self, i: int) -> tuple:
        """Every value seen at index ``i`` (its offset's conflict, or the one value)."""
        return tuple(self.conflicts.get(self.offsets[i]) or (self.by_index[i],))


def ok_reads(ops: Iterable[TxnOp]) -> dict[str, set]:
    """Key -> every value an ok op polled (Jepsen's ``reads-by-type`` ``:ok``)."""
    out: dict[str, set] = {}
    for op in ops:
        if op.type == OK and op.polled:
            for k, vals in op.values():
                s = out.get(k)
                if s is None:
                    s = out[k] = set()
                s.update(vals)
    return out


def committed(op: TxnOp, okr: dict[str, set]) -> bool:
    """Jepsen's ``must-have-committed?``: ``op`` is ok, or info and an ok poll read one of
    its sends."""
    if op.type == OK:
        return True
    if op.type != INFO:
        return False
    for k, v, _o in op.writes:
        s = okr.get(k)
        if s is not None and v in s:
            return True
    return False


def build_orders(ops: list[TxnOp], okr: dict[str, set]) -> dict[str, KeyOrder]:
    """Every key's :class:`KeyOrder` from the polls of all ``ops`` and the offsets of the
    sends of those that :func:`committed` (``okr``: :func:`ok_reads`). Values with no offset
    are left out."""
    seen: dict[str, dict] = {}         # key -> {(offset, value): None}, first seen first
    for op in ops:
        if op.polled:
            for k, (offs, vals) in op.reads.items():
                s = seen.get(k)
                if s is None:
                    s = seen[k] = {}
                if type(offs) is list:          # offsets may be None there: not placed
                    s.update(dict.fromkeys((o, v) for o, v in zip(offs, vals) if o is not None))
                else:
                    s.update(dict.fromkeys(zip(offs, vals)))
        if op.writes and committed(op, okr):
            for k, v, o in op.writes:
                if o is not None:
                    s = seen.get(k)
                    if s is None:
                        s = seen[k] = {}
                    s[(o, v)] = None
    out = {}
    for k in list(seen):
        s = seen.pop(k)
        log = dict(reversed(s))             # offset -> the first value seen there
        conflicts = None
        if len(log) < len(s):               # some offset holds two values
            conflicts = {}
            for o, v in s:
                if log[o] != v:
                    conflicts.setdefault(o, [log[o]]).append(v)
        out[k] = KeyOrder(log, conflicts)
    return out


def sort_values(values: Iterable[Any]) -> list:
    """Values sorted (ints before strings, each in its own order)."""
    return sorted(values, key=lambda v: (type(v) is str, v))
