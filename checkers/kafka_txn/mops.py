"""Jepsen's Kafka micro-ops: reading an op's value into the sends and polls it holds.

The value of a ``send``, ``poll`` or ``txn`` op is a list of micro-ops (Jepsen's
``jepsen.tests.kafka``; DEVELOPERS.md, "Client ops (Jepsen's Kafka workload)"):

- ``["send", key, value]`` as invoked; ``["send", key, [offset, value]]`` once done (the
  offset may be null when unknown);
- ``["poll"]`` as invoked; ``["poll", {key: [[offset, value], ...]}]`` once done.

Keys are topic-partitions: strings (``"t0-1"``) or Jepsen's ints, kept as strings here (a JSON
object's keys are strings, so a send to ``3`` and a poll of ``"3"`` name one key). Values are
ints or strings; offsets ints or null. Lists may be JSON arrays or EDN vectors (tuples). A
poll's records are kept as two arrays of 64-bit ints where they fit (most do), so that a
history of millions of records stays small.
"""
from __future__ import annotations

from array import array
from operator import itemgetter
from sys import intern
from typing import Any, Iterable, Sequence

#: ``f`` of the ops that carry micro-ops
DATA_FS = frozenset(("send", "poll", "txn"))
#: ``f`` of the ops that replace a consumer's keys (their value: the keys)
SUBSCRIPTION_FS = frozenset(("assign", "subscribe"))

_SEQ = (list, tuple)
_first, _second = itemgetter(0), itemgetter(1)


class MopError(ValueError):
    """An op's value is not a list of micro-ops this checker can read; the message says why."""


def norm_key(k: Any) -> str:
    """A key as this checker names it: a string as is, an int as its decimal string (both
    interned: a history names few keys, many times). Raises :class:`MopError` for anything
    else."""
    if type(k) is str:
        return intern(k)
    if type(k) is int:
        return intern(str(k))
    raise MopError(f"key {k!r} is neither a string nor an int")


def _check_value(v: Any) -> None:
    if type(v) is not int and type(v) is not str:
        raise MopError(f"value {v!r} is neither an int nor a string")


class Records:
    """Every polled record of a history, in two ``array('q')`` (offsets, values: 8 bytes a
    number) where a poll's records are all ints, else kept as lists (offsets may be None,
    values strings). A poll of one key is a *span*: ``(key, start, end)`` into the arrays, or
    ``(key, -1, i)`` for the ``i``-th list pair. An op keeps its spans compactly
    (:meth:`pack`): the tuple of its keys and one array of starts and ends."""

    __slots__ = ("offs", "vals", "lists")

    def __init__(self) -> None:
        self.offs, self.vals = array("q"), array("q")
        self.lists: list[tuple[list, list]] = []

    def get(self, s: int, e: int) -> tuple[Sequence, Sequence]:
        """``(offsets, values)`` of a span's start and end (fresh arrays, or the stored lists)."""
        if s >= 0:
            return self.offs[s:e], self.vals[s:e]
        return self.lists[e]

    def values(self, s: int, e: int) -> Sequence:
        """The values of a span's start and end."""
        return self.vals[s:e] if s >= 0 else self.lists[e][1]

    def first_last(self, s: int, e: int) -> tuple[tuple, tuple]:
        """``((offset, value), (offset, value))`` of a span's first and last record."""
        if s >= 0:
            return (self.offs[s], self.vals[s]), (self.offs[e - 1], self.vals[e - 1])
        offs, vals = self.lists[e]
        return (offs[0], vals[0]), (offs[-1], vals[-1])

    def length(self, s: int, e: int) -> int:
        """How many records a span's start and end hold."""
        return e - s if s >= 0 else len(self.lists[e][1])

    @staticmethod
    def pack(spans: Iterable[tuple]) -> tuple[tuple[str, ...], array]:
        """An op's spans as ``(keys, array of start, end per key)``."""
        spans = list(spans)
        return tuple(k for k, _s, _e in spans), array("q", [x for _k, s, e in spans for x in (s, e)])

    def add(self, k: str, pairs: Any) -> tuple | None:
        """Store a poll's ``[[offset, value], ...]`` of key ``k``; its span, None when empty.
        Raises :class:`MopError` naming what is not a pair of an int-or-null offset and an
        int-or-string value."""
        if not isinstance(pairs, _SEQ):
            raise MopError(f"poll of key {k}: expected a list of [offset, value], got {pairs!r}"[:200])
        if not pairs:
            return None
        start = len(self.vals)
        try:
            if set(map(len, pairs)) == {2}:
                self.offs.extend(map(_first, pairs))
                self.vals.extend(map(_second, pairs))
                return k, start, len(self.vals)
        except (TypeError, OverflowError):
            del self.offs[start:]
            del self.vals[start:]
        self.lists.append(_checked(k, pairs))
        return k, -1, len(self.lists) - 1

    def join(self, a: tuple, b: tuple) -> tuple:
        """One span holding span ``a``'s records then ``b``'s (of one key)."""
        (oa, va), (ob, vb) = self.get(*a[1:]), self.get(*b[1:])
        if type(oa) is array and type(ob) is array:
            start = len(self.vals)
            self.offs.extend(oa + ob)
            self.vals.extend(va + vb)
            return a[0], start, len(self.vals)
        self.lists.append(([*oa, *ob], [*va, *vb]))
        return a[0], -1, len(self.lists) - 1


def _checked(k: str, pairs: Any) -> tuple[list, list]:
    offs, vals = [], []
    for p in pairs:
        if not isinstance(p, _SEQ) or len(p) != 2:
            raise MopError(f"poll of key {k}: expected [offset, value], got {p!r}"[:200])
        o, v = p
        if o is not None and type(o) is not int:
            raise MopError(f"poll of key {k}: offset {o!r} is not an int")
        if type(v) is not int and type(v) is not str:
            raise MopError(f"poll of key {k}: value {v!r} is neither an int nor a string")
        offs.append(o)
        vals.append(v)
    return offs, vals


def parse_mops(value: Any, store: Records) -> tuple[list[tuple[str, Any, int | None]], tuple, int]:
    """``(writes, spans, n)`` of an op's micro-op list ``value``.

    ``writes``: ``(key, value, offset or None)`` per send, in order. ``spans``: per key its
    polls returned records for, the span of those records in ``store`` (several polls of one
    key are joined, in order), packed (:meth:`Records.pack`). ``n``: the number of micro-ops. A ``["poll"]`` without results
    reads nothing. Raises :class:`MopError` naming what cannot be read (not a list, an unknown
    micro-op, a bad key, offset or value); ``store`` may then hold records of no op.
    """
    if not isinstance(value, _SEQ):
        raise MopError(f"expected a list of micro-ops, got {value!r}"[:200])
    writes: list[tuple[str, Any, int | None]] = []
    reads: dict[str, tuple] = {}
    for mop in value:
        if not isinstance(mop, _SEQ) or not mop:
            raise MopError(f"expected a micro-op [send key value] or [poll ...], got {mop!r}"[:200])
        f = mop[0]
        if f == "send":
            if len(mop) != 3:
                raise MopError(f"expected [send key value], got {mop!r}"[:200])
            k, v = norm_key(mop[1]), mop[2]
            o = None
            if isinstance(v, _SEQ):
                if len(v) != 2:
                    raise MopError(f"send to {k}: expected [offset, value], got {v!r}"[:200])
                o, v = v
                if o is not None and type(o) is not int:
                    raise MopError(f"send to {k}: offset {o!r} is not an int")
            _check_value(v)
            writes.append((k, v, o))
        elif f == "poll":
            if len(mop) == 1 or (len(mop) == 2 and mop[1] is None):
                continue
            if len(mop) != 2 or not isinstance(mop[1], dict):
                raise MopError(f"expected [poll] or [poll {{key [[offset value] ...]}}], got {mop!r}"[:200])
            for k, pairs in mop[1].items():
                k = norm_key(k)
                got = store.add(k, pairs)
                if got is not None:
                    prev = reads.get(k)
                    reads[k] = got if prev is None else store.join(prev, got)
        else:
            raise MopError(f"unknown micro-op {f!r}: expected send or poll")
    return writes, Records.pack(reads.values()), len(value)


def is_mop_list(value: Any) -> bool:
    """Does ``value`` look like a micro-op list (a list whose items are lists starting with
    ``send`` or ``poll``)? Used to tell a Kafka-workload history from others; it does not
    validate the rest (:func:`parse_mops` does)."""
    return (isinstance(value, _SEQ) and len(value) > 0
            and all(isinstance(m, _SEQ) and len(m) > 0 and m[0] in ("send", "poll") for m in value))


def subscription_keys(value: Any) -> frozenset[str]:
    """The keys of an ``assign`` / ``subscribe`` op's value (a list of keys). Raises
    :class:`MopError` when it is not one."""
    if not isinstance(value, _SEQ):
        raise MopError(f"expected a list of keys, got {value!r}"[:200])
    return frozenset(norm_key(k) for k in value)
