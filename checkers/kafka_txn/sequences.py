"""Anomalies of order: how consecutive polls and sends sit in each key's version order.

Jepsen's definitions (``jepsen.tests.kafka``): the *delta* of two values of a key is the
difference of their indexes in the version order (checkers/kafka_txn/orders.py); a pair with
a value of unknown index is not judged.

- **int-poll-skip** / **int-nonmonotonic-poll**: within one op (any outcome), consecutive
  polled values of a key with delta > 1 / delta < 1; keys in the op's rebalance log are exempt.
- **int-send-skip** / **int-nonmonotonic-send**: the same for one op's consecutive sends to a key.
- **poll-skip** / **nonmonotonic-poll**: per process, the first value an op polled of a key
  against the last value the process's previous ok op polled of it (fail and info ops are
  judged but leave the position as it was). An ok or info ``assign`` / ``subscribe`` keeps the
  positions of only the keys it names; an assign that seeks to the beginning keeps none (our
  addition: Jepsen's final phase crashes its clients first, to the same effect).
- **nonmonotonic-send**: per process, over ok and info ops, the first value an op sent to a
  key against the last value the process's previous such op sent to it, delta < 1.
"""
from __future__ import annotations

from typing import Any

from .collect import INFO, OK, Subscription, TxnOp
from .explain import anomaly, listing, op_name, plural, val
from .orders import KeyOrder

_EMPTY: dict = {}


def _skipped(order: KeyOrder, i1: int, i2: int) -> tuple[list, list]:
    """The values and offsets strictly between indexes ``i1`` and ``i2``."""
    return order.by_index[i1 + 1:i2], order.offsets[i1 + 1:i2]


def int_polls(ops: list[TxnOp], orders: dict[str, KeyOrder]) -> tuple[list[dict], list[dict]]:
    """``(int-poll-skip, int-nonmonotonic-poll)`` anomalies."""
    skips: list[dict] = []
    nonmono: list[dict] = []
    for op in ops:
        if not op.polled:
            continue
        for k, vals in op.values():
            if len(vals) < 2 or k in op.rebalanced:
                continue
            order = orders.get(k)
            if order is None:
                continue
            idx = list(map(order.index.get, vals))
            if None not in idx and idx == list(range(idx[0], idx[0] + len(idx))):
                continue                    # one contiguous run: the usual case
            offs = op.reads[k][0]
            for j in range(1, len(idx)):
                i1, i2 = idx[j - 1], idx[j]
                if i1 is not None and i2 is not None and i2 - i1 != 1:
                    _int_poll(op, k, order, (offs[j - 1], vals[j - 1]), (offs[j], vals[j]), i1, i2, skips, nonmono)
    return skips, nonmono


def _judged(kinds: tuple[str, str], order: KeyOrder, i1: int, i2: int, skip_text, back_text,
            out: tuple[list, list], **fields) -> None:
    """A pair of values at indexes ``i1``, ``i2`` of a key, delta != 1: a skip (``kinds[0]``,
    into ``out[0]``, ``skip_text(skipped offsets, skipped values)``) or a step back
    (``kinds[1]``, into ``out[1]``, ``back_text(delta)``)."""
    d = i2 - i1
    if d > 1:
        vals, offs = _skipped(order, i1, i2)
        out[0].append(anomaly(kinds[0], skip_text(offs, vals), **fields, delta=d, skipped=vals[:32]))
    else:
        out[1].append(anomaly(kinds[1], back_text(d), **fields, delta=d))


def _skip_text(head: str, offs: list, vals: list, what: str = "record") -> str:
    return (f"{head}, skipping {plural(len(offs), what)} at offsets {listing(offs)} "
            f"(values {listing(map(val, vals))})")


def _back_text(head: str, d: int) -> str:
    return f"{head}: {'the same record again' if d == 0 else 'backwards'} (delta {d})"


def _int_poll(op, k, order, p1, p2, i1, i2, skips, nonmono) -> None:
    (o1, v1), (o2, v2) = p1, p2
    head = f"{op_name(op)} polled key {k} at offset {o1} ({val(v1)}) then at offset {o2} ({val(v2)})"
    _judged(("int-poll-skip", "int-nonmonotonic-poll"), order, i1, i2,
            lambda offs, vals: _skip_text(head, offs, vals), lambda d: _back_text(head, d), (skips, nonmono),
            key=k, values=[v1, v2], offsets=[o1, o2], op=op.index)


def int_sends(ops: list[TxnOp], orders: dict[str, KeyOrder]) -> tuple[list[dict], list[dict]]:
    """``(int-send-skip, int-nonmonotonic-send)`` anomalies."""
    skips: list[dict] = []
    nonmono: list[dict] = []
    for op in ops:
        if len(op.writes) < 2:
            continue
        last: dict[str, Any] = {}
        for k, v2, _o in op.writes:
            if k in last:
                v1 = last[k]
                order = orders.get(k)
                if order is not None:
                    i1, i2 = order.index.get(v1), order.index.get(v2)
                    if i1 is not None and i2 is not None and i2 - i1 != 1:
                        _int_send(op, k, order, v1, v2, i1, i2, skips, nonmono)
            last[k] = v2
    return skips, nonmono


def _int_send(op, k, order, v1, v2, i1, i2, skips, nonmono) -> None:
    o1, o2 = order.offsets[i1], order.offsets[i2]
    head = f"{op_name(op)} sent {val(v1)} then {val(v2)} to key {k}"
    _judged(("int-send-skip", "int-nonmonotonic-send"), order, i1, i2,
            lambda offs, vals: (f"{head}, and {plural(len(offs), 'other record')} landed between them "
                                f"(offsets {o1} and {o2}): values {listing(map(val, vals))}"),
            lambda d: f"{head}, but {val(v2)} landed at offset {o2}, {'at' if d == 0 else 'before'} {val(v1)}'s offset {o1}",
            (skips, nonmono), key=k, values=[v1, v2], offsets=[o1, o2], op=op.index)


def _keep(positions: dict, sub: Subscription) -> dict:
    """A process's positions after an ok or info assign / subscribe."""
    if sub.seek:
        return {}
    return {k: x for k, x in positions.items() if k in sub.keys}


def polls(seq: list, orders: dict[str, KeyOrder]) -> tuple[list[dict], list[dict]]:
    """``(poll-skip, nonmonotonic-poll)`` anomalies, per process over ``seq`` (ops and
    subscriptions in completion order)."""
    skips: list[dict] = []
    nonmono: list[dict] = []
    last: dict[Any, dict[str, tuple]] = {}     # process -> key -> (op, value, offset) last polled
    for e in seq:
        if type(e) is Subscription:
            if e.process in last:
                last[e.process] = _keep(last[e.process], e)
            continue
        if not e.polled:
            continue
        pos = last.get(e.process, _EMPTY)
        ends = e.ends()
        for k, (o2, v2), _last in ends:
            prev = pos.get(k)
            if prev is None or prev[1] is None:
                continue
            order = orders.get(k)
            if order is None:
                continue
            before, v1, o1 = prev
            i1, i2 = order.index.get(v1), order.index.get(v2)
            if i1 is None or i2 is None or i2 - i1 == 1:
                continue
            head = (f"process {e.process} polled key {k} up to offset {o1} ({val(v1)}) in op {before.index}, "
                    f"then {op_name(e)} polled from offset {o2} ({val(v2)})")
            _judged(("poll-skip", "nonmonotonic-poll"), order, i1, i2,
                    lambda offs, vals: _skip_text(head, offs, vals), lambda d: _back_text(head, d), (skips, nonmono),
                    key=k, values=[v1, v2], offsets=[o1, o2], ops=[before.index, e.index])
        if e.type == OK:
            pos = last.setdefault(e.process, {})
            for k, _first, (o, v) in ends:
                pos[k] = (e, v, o)
    return skips, nonmono


def sends(seq: list, orders: dict[str, KeyOrder]) -> list[dict]:
    """nonmonotonic-send anomalies, per process over the ok and info ops of ``seq``."""
    out: list[dict] = []
    last: dict[Any, dict[str, tuple]] = {}     # process -> key -> (op, value) last sent
    for e in seq:
        if type(e) is Subscription:
            if e.process in last:
                last[e.process] = {k: x for k, x in last[e.process].items() if k in e.keys}
            continue
        if not e.writes or (e.type != OK and e.type != INFO):
            continue
        firsts: dict[str, Any] = {}
        lasts: dict[str, Any] = {}
        for k, v, _o in e.writes:
            if k not in firsts:
                firsts[k] = v
            lasts[k] = v
        pos = last.get(e.process)
        if pos:
            for k, v2 in firsts.items():
                prev = pos.get(k)
                order = orders.get(k)
                if prev is None or order is None:
                    continue
                before, v1 = prev
                i1, i2 = order.index.get(v1), order.index.get(v2)
                if i1 is not None and i2 is not None and i2 - i1 < 1:
                    o1, o2 = order.offsets[i1], order.offsets[i2]
                    out.append(anomaly(
                        "nonmonotonic-send",
                        f"process {e.process} sent {val(v1)} to key {k} (offset {o1}) in op {before.index}, then "
                        f"{op_name(e)} sent {val(v2)}, which landed {'at' if i1 == i2 else 'before'} it, at offset {o2}",
                        key=k, values=[v1, v2], offsets=[o1, o2], delta=i2 - i1, ops=[before.index, e.index]))
        pos = last.setdefault(e.process, {})
        for k, v in lasts.items():
            pos[k] = (e, v)
    return out
