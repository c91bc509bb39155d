"""Anomalies of values: G1a, lost-write, unseen, duplicate, inconsistent-offsets, precommitted-read.

Each follows Jepsen's definition (``jepsen.tests.kafka``: ``g1a-cases``, ``lost-write-cases``,
``unseen``, ``duplicate-cases``, the ``version-orders`` errors, ``precommitted-read-cases``):

- **G1a**: an ok op polled a value that a ``fail`` op sent.
- **lost-write**: per key, the highest index any ok poll read bounds what must have been read;
  every value whose last index is at or below it, sent by an op that must have committed, and
  read by no ok poll, is lost.
- **unseen**: values sent by ok ops that no ok poll read by the end.
- **duplicate**: a value at two or more offsets; **inconsistent-offsets**: two or more values
  at one offset (checkers/kafka_txn/orders.py).
- **precommitted-read**: an op polled a value it sent itself (one per op, as Jepsen).
"""
from __future__ import annotations

from bisect import bisect_left
from typing import Any

from .collect import FAIL, OK, TxnOp
from .explain import anomaly, at, listing, op_name, plural, val
from .orders import KeyOrder, committed, sort_values

#: values an ``unseen`` anomaly lists per key (Jepsen condenses to 32 too)
UNSEEN_LISTED = 32


def writers(ops: list[TxnOp]) -> dict[str, dict[Any, int]]:
    """Key -> value -> the id of the (last) op that sent it (Jepsen's ``writer-of``)."""
    out: dict[str, dict[Any, int]] = {}
    for op in ops:
        for k, v, _o in op.writes:
            d = out.get(k)
            if d is None:
                d = out[k] = {}
            d[v] = op.id
    return out


def witnesses(ops: list[TxnOp], want: dict[str, set], limit: int = 3,
              only_ok_reads: bool = False) -> dict[tuple, list[tuple[TxnOp, int | None, str]]]:
    """``(key, value)`` -> up to ``limit`` ``(op, offset, "sent" | "polled")`` for each value in
    ``want`` (key -> values), in history order; with ``only_ok_reads``, polls of ok ops only
    (and no sends)."""
    out: dict[tuple, list] = {}
    for op in ops:
        if not only_ok_reads:
            for k, v, o in op.writes:
                if v in want.get(k, ()):
                    found = out.setdefault((k, v), [])
                    if len(found) < limit:
                        found.append((op, o, "sent"))
        if only_ok_reads and op.type != OK:
            continue
        for k, (offs, vals) in op.reads.items():
            vs = want.get(k)
            if not vs or vs.isdisjoint(vals):
                continue
            for o, v in zip(offs, vals):
                if v in vs:
                    found = out.setdefault((k, v), [])
                    if len(found) < limit:
                        found.append((op, o, "polled"))
    return out


def g1a(ops: list[TxnOp], okr: dict[str, set]) -> list[dict]:
    """G1a: ok ops that polled a value a ``fail`` op sent (one per reader, key and value;
    ``okr``: what ok ops polled, orders.py's ``ok_reads``)."""
    failed: dict[str, dict[Any, TxnOp]] = {}
    for op in ops:
        if op.type == FAIL:
            for k, v, _o in op.writes:
                failed.setdefault(k, {})[v] = op
    out: list[dict] = []
    if all(okr.get(k, set()).isdisjoint(vs) for k, vs in failed.items()):
        return out                              # no ok poll read a failed send
    for op in ops:
        if op.type != OK or not op.polled:
            continue
        seen = set()
        for k, (offs, vals) in op.reads.items():
            fk = failed.get(k)
            if not fk or fk.keys().isdisjoint(vals):
                continue
            for o, v in zip(offs, vals):
                w = fk.get(v)
                if w is not None and (k, v) not in seen:
                    seen.add((k, v))
                    out.append(anomaly(
                        "G1a", f"{op_name(op)} polled {val(v)} from key {k}{at(o)}, which {op_name(w)} "
                               f"sent: that send certainly failed",
                        key=k, value=v, offset=o, op=op.index, writer=w.index))
    return out


def precommitted_reads(ops: list[TxnOp]) -> list[dict]:
    """precommitted-read: ops that polled a value they sent themselves (the first such per op)."""
    out: list[dict] = []
    for op in ops:
        if not (op.writes and op.polled):
            continue
        sent: dict[str, set] = {}
        for k, v, _o in op.writes:
            sent.setdefault(k, set()).add(v)
        polled = dict(op.values())
        if all(vs.isdisjoint(polled.get(k, ())) for k, vs in sent.items()):
            continue
        hit = None
        reads = op.reads
        for k, vs in sent.items():
            offs, vals = reads.get(k, ((), ()))
            if vs.isdisjoint(vals):
                continue
            hit = next((k, o, v) for o, v in zip(offs, vals) if v in vs)
            break
        if hit:
            k, o, v = hit
            out.append(anomaly(
                "precommitted-read", f"{op_name(op)} polled {val(v)} from key {k}{at(o)}, which it sent "
                                     f"itself: a consumer must not see a transaction's records before it commits",
                key=k, value=v, offset=o, op=op.index))
    return out


def lost_writes(ops: list[TxnOp], orders: dict[str, KeyOrder], okr: dict[str, set],
                writer_of: dict[str, dict[Any, int]]) -> list[dict]:
    """lost-write anomalies (values no op sent cannot be lost: the analysis reports those)."""
    found: list[tuple[str, Any, int, TxnOp, int, Any]] = []   # key, value, index, writer, bound, bound value
    for k, vs in okr.items():
        order = orders.get(k)
        if order is None:
            continue
        if order.multi or order.conflicts:
            firsts = [(order.first(v), v) for v in vs]
            bound, bound_v = max(((i, v) for i, v in firsts if i is not None), default=(-1, None),
                                 key=lambda t: t[0])
            missing = [(w, i) for i in range(bound + 1) for w in order.values_at(i)
                       if order.last(w) == i and w not in vs]
        else:                               # each value at one index: its first is its last
            known = [i for i in map(order.index.get, vs) if i is not None]
            bound = max(known, default=-1)
            bound_v = order.by_index[bound] if bound >= 0 else None
            head = order.by_index[:bound + 1]
            missing = [] if vs.issuperset(head) else [(w, i) for i, w in enumerate(head) if w not in vs]
        if bound < 0:
            continue
        wk = writer_of.get(k, {})
        for w, i in missing:
            wid = wk.get(w)
            if wid is not None and committed(ops[wid], okr):
                found.append((k, w, i, ops[wid], bound, bound_v))
    if not found:
        return []
    readers = witnesses(ops, _want((k, bv) for k, *_r, bv in found), 1, only_ok_reads=True)
    out = []
    for k, w, i, writer, bound, bv in found:
        order = orders[k]
        r = readers.get((k, bv))
        reader = r[0][0] if r else None
        by = f"{op_name(reader)} read {val(bv)} at offset {order.offsets[bound]}" if reader else \
            f"an ok poll read {val(bv)} at offset {order.offsets[bound]}"
        out.append(anomaly(
            "lost-write", f"{op_name(writer)} sent {val(w)} to key {k} at offset {order.offsets[i]}, and no ok "
                          f"poll read it, though {by}, which is later",
            key=k, value=w, offset=order.offsets[i], op=writer.index,
            max_read=reader.index if reader else None, max_read_offset=order.offsets[bound], max_read_value=bv))
    return out


def _want(pairs) -> dict[str, set]:
    want: dict[str, set] = {}
    for k, v in pairs:
        want.setdefault(k, set()).add(v)
    return want


def unseen(ops: list[TxnOp], okr: dict[str, set]) -> list[dict]:
    """unseen: per key, the values ok ops sent that no ok poll read (one anomaly per key,
    listing up to :data:`UNSEEN_LISTED` by offset)."""
    sent: dict[str, dict[Any, tuple[TxnOp, int | None]]] = {}
    for op in ops:
        if op.type == OK:
            for k, v, o in op.writes:
                d = sent.get(k)
                if d is None:
                    d = sent[k] = {}
                d[v] = (op, o)
    out = []
    for k in sorted(sent):
        read = okr.get(k, ())
        miss = [(o, v, op) for v, (op, o) in sent[k].items() if v not in read]
        if not miss:
            continue
        miss.sort(key=lambda t: (t[0] is None, t[0] if t[0] is not None else 0))
        shown = miss[:UNSEEN_LISTED]
        out.append(anomaly(
            "unseen", f"{plural(len(miss), 'acknowledged send')} to key {k} never polled by an ok poll: "
                      + listing((f"{val(v)} (op {op.index}{at(o)})" for o, v, op in miss)),
            key=k, count=len(miss), values=[v for _o, v, _op in shown], offsets=[o for o, _v, _op in shown],
            ops=[op.index for _o, _v, op in shown]))
    return out


def duplicates(ops: list[TxnOp], orders: dict[str, KeyOrder]) -> list[dict]:
    """duplicate: values at two or more offsets of a key, with the ops that put them there."""
    cases = [(k, v, idx) for k in sorted(orders) for v, idx in orders[k].multi.items()]
    if not cases:
        return []
    seen = witnesses(ops, _want((k, v) for k, v, _i in cases), limit=4)
    out = []
    for k, v, idx in cases:
        offsets = [orders[k].offsets[i] for i in idx]
        who = seen.get((k, v), [])
        out.append(anomaly(
            "duplicate", f"value {val(v)} of key {k} is at {len(offsets)} offsets, {listing(offsets)}: "
                         + listing(f"op {op.index} {how} it{at(o)}" for op, o, how in who),
            key=k, value=v, count=len(offsets), offsets=offsets, ops=sorted({op.index for op, _o, _h in who})))
    return out


def inconsistent_offsets(ops: list[TxnOp], orders: dict[str, KeyOrder]) -> list[dict]:
    """inconsistent-offsets: offsets of a key holding two or more values, with who saw each."""
    cases = [(k, o, vals) for k in sorted(orders) for o, vals in sorted(orders[k].conflicts.items())]
    if not cases:
        return []
    seen = witnesses(ops, _want((k, v) for k, _o, vals in cases for v in vals), limit=8)
    out = []
    for k, o, vals in cases:
        parts, opids = [], set()
        for v in sort_values(vals):
            who = [(op, how) for op, oo, how in seen.get((k, v), []) if oo == o][:3]
            opids.update(op.index for op, _h in who)
            parts.append(f"{val(v)} ({', '.join(f'{how} by op {op.index}' for op, how in who) or 'seen'})")
        out.append(anomaly(
            "inconsistent-offsets", f"offset {o} of key {k} holds {len(vals)} values: {listing(parts)}",
            key=k, offset=o, index=bisect_left(orders[k].offsets, o), values=sort_values(vals), ops=sorted(opids)))
    return out
