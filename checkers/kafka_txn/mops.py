"""Jepsen's Kafka micro-ops: reading an op's value into the sends and polls it holds.

The value of a ``send``, ``poll`` or ``txn`` op is a list of micro-ops (Jepsen's
``jepsen.tests.kafka``; DEVELOPERS.md, "Client ops (Jepsen's Kafka workload)"):

- ``["send", key, value]`` as invoked; ``["send", key, [offset, value]]`` once done (the
  offset may be null when unknown);
- ``["poll"]`` as invoked; ``["poll", {key: [[offset, value], ...]}]`` once done.

Keys are topic-partitions: strings (``"t0-1"``) or Jepsen's ints, kept as strings here (a JSON
object's keys are strings, so a send to ``3`` and a poll of ``"3"`` name one key). Values are
ints or strings; offsets ints or null. Lists may be JSON arrays or EDN vectors (tuples).
"""
from __future__ import annotations

from typing import Any

#: ``f`` of the ops that carry micro-ops
DATA_FS = frozenset(("send", "poll", "txn"))
#: ``f`` of the ops that replace a consumer's keys (their value: the keys)
SUBSCRIPTION_FS = frozenset(("assign", "subscribe"))

_SEQ = (list, tuple)


class MopError(ValueError):
    """An op's value is not a list of micro-ops this checker can read; the message says why."""


def norm_key(k: Any) -> str:
    """A key as this checker names it: a string as is, an int as its decimal string.
    Raises :class:`MopError` for anything else."""
    if type(k) is str:
        return k
    if type(k) is int:
        return str(k)
    raise MopError(f"key {k!r} is neither a string nor an int")


def _check_value(v: Any) -> None:
    if type(v) is not int and type(v) is not str:
        raise MopError(f"value {v!r} is neither an int nor a string")


def _check_pairs(k: str, pairs: Any) -> None:
    if not isinstance(pairs, _SEQ):
        raise MopError(f"poll of key {k}: expected a list of [offset, value], got {pairs!r}"[:200])
    for p in pairs:
        if not isinstance(p, _SEQ) or len(p) != 2:
            raise MopError(f"poll of key {k}: expected [offset, value], got {p!r}"[:200])
        o, v = p
        if o is not None and type(o) is not int:
            raise MopError(f"poll of key {k}: offset {o!r} is not an int")
        if type(v) is not int and type(v) is not str:
            raise MopError(f"poll of key {k}: value {v!r} is neither an int nor a string")


def parse_mops(value: Any) -> tuple[list[tuple[str, Any, int | None]], dict[str, list], int]:
    """``(writes, reads, n)`` of an op's micro-op list ``value``.

    ``writes``: ``(key, value, offset or None)`` per send, in order. ``reads``: key -> the
    ``[offset, value]`` pairs its polls returned, in order (several polls of one key are
    joined; the pairs are the history's own lists, not copies). ``n``: the number of
    micro-ops. A ``["poll"]`` without results reads nothing. Raises :class:`MopError` naming
    what cannot be read (not a list, an unknown micro-op, a bad key, offset or value).
    """
    if not isinstance(value, _SEQ):
        raise MopError(f"expected a list of micro-ops, got {value!r}"[:200])
    writes: list[tuple[str, Any, int | None]] = []
    reads: dict[str, list] = {}
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
                _check_pairs(k, pairs)
                prev = reads.get(k)
                reads[k] = pairs if prev is None else [*prev, *pairs]
        else:
            raise MopError(f"unknown micro-op {f!r}: expected send or poll")
    return writes, reads, len(value)


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
