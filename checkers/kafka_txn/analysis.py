"""The whole analysis of a collected history: every anomaly kind, and the verdict.

:func:`analyse` runs the analyses of checkers/kafka_txn (values.py, sequences.py, cycles.py)
over what a :class:`~checkers.kafka_txn.collect.Collector` kept, and judges: **invalid** when a
kind that is not allowed (kinds.py) shows; else **unknown** when the history could not be read
whole (data ops that cannot be read or paired), holds no send, poll or txn op, or polled values
that no op sent (Jepsen's checker stops there); else **valid**. ``server-error`` (server_errors.py)
is allowed only when every one of its anomalies is excused.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any, Iterable

from .collect import Collector
from .cycles import cycle_anomalies
from .explain import at, listing, val
from .kinds import KINDS, allowed_kinds, excused_kinds
from .orders import build_orders, ok_reads
from .sequences import int_polls, int_sends, polls, sends
from .values import (duplicates, g1a, inconsistent_offsets, lost_writes, precommitted_reads, unseen,
                     writers)

#: problems and unattributed values a result lists (the counts are whole)
NOTES_LISTED = 20


@dataclasses.dataclass(frozen=True)
class Options:
    """How to judge. ``ww_deps``: infer write-write dependencies from the version orders
    (Jepsen's ``--ww-deps``; G1c is then allowed, as in Jepsen). ``forbid``: allowed kinds to
    count as errors anyway (kinds.py, :data:`~checkers.kafka_txn.kinds.ALLOWABLE`)."""

    ww_deps: bool = False
    forbid: tuple[str, ...] = ()

    @classmethod
    def from_mapping(cls, m: Any) -> "Options":
        """Options from a mapping with ``ww_deps`` (bool) and ``forbid`` (kinds; a list or a
        comma-separated string); missing keys take the defaults. Raises ValueError naming a
        bad kind."""
        from .kinds import parse_forbid
        if not m:
            return cls()
        forbid = m.get("forbid") or ()
        if isinstance(forbid, str):
            forbid = (forbid,)
        return cls(ww_deps=bool(m.get("ww_deps", False)), forbid=parse_forbid(forbid))


def _unattributed(orders, writer_of) -> list[tuple[str, Any, int]]:
    """``(key, value, offset)`` of values in the version orders that no op sent."""
    out = []
    for k, order in orders.items():
        wk = writer_of.get(k, {})
        for i, v in enumerate(order.by_index):
            if v not in wk:
                out.append((k, v, order.offsets[i]))
        for o, values in order.conflicts.items():
            out.extend((k, v, o) for v in values[1:] if v not in wk)
    return out


def analyse(col: Collector, options: Options = Options()) -> dict:
    """The checker's result for a collected history (``col.finish()`` already called).

    Returns ``{"valid", "anomalies": [] (they are under each kind), "by_kind": {kind:
    {"valid", "allowed", "anomalies": [...]}} for every kind of
    :data:`~checkers.kafka_txn.kinds.KINDS`, "error_kinds": kinds shown and not allowed,
    "allowed": the allowed kinds, "ww_deps", "counts": {"ops", "invoked", "micro_ops", "sends",
    "polled_records", "keys", "processes"}, "ignored": {f: n}, "problems": [{"op", "why"}],
    "unattributed": [{"key", "value", "offset"}], "reason"?: why unknown, "check_s"}``.
    Each anomaly is a dict as checkers/kafka_txn/explain.py describes.
    """
    t0 = time.monotonic()
    ops = col.ops
    okr = ok_reads(ops)
    orders = build_orders(ops, okr)
    writer_of = writers(ops)
    found: dict[str, list[dict]] = {k: [] for k in KINDS}
    found["G1a"] = g1a(ops, okr)
    found["lost-write"] = lost_writes(ops, orders, okr, writer_of)
    found["unseen"] = unseen(ops, okr)
    found["duplicate"] = duplicates(ops, orders)
    found["inconsistent-offsets"] = inconsistent_offsets(ops, orders)
    found["poll-skip"], found["nonmonotonic-poll"] = polls(col.seq, orders)
    found["int-poll-skip"], found["int-nonmonotonic-poll"] = int_polls(ops, orders)
    found["nonmonotonic-send"] = sends(col.seq, orders)
    found["int-send-skip"], found["int-nonmonotonic-send"] = int_sends(ops, orders)
    found["precommitted-read"] = precommitted_reads(ops)
    for a in cycle_anomalies(ops, orders, writer_of, options.ww_deps):
        found[a["kind"]].append(a)
    found["server-error"] = col.server_errors.found
    unattributed = _unattributed(orders, writer_of)

    allowed = allowed_kinds(col.subscribed, options.ww_deps, options.forbid) | excused_kinds(found, options.forbid)
    by_kind = {k: {"valid": not (found[k] and k not in allowed), "allowed": k in allowed, "anomalies": found[k]}
               for k in KINDS}
    errors = [k for k in KINDS if found[k] and k not in allowed]
    reasons = _reasons(col, unattributed)
    valid = False if errors else ("unknown" if reasons else True)
    out = {"valid": valid, "anomalies": [], "by_kind": by_kind, "error_kinds": errors,
           "allowed": [k for k in KINDS if k in allowed], "ww_deps": options.ww_deps,
           "counts": _counts(col, orders), "ignored": dict(col.ignored),
           "problems": [{"op": i, "why": why} for i, why in col.problems[:NOTES_LISTED]],
           "unattributed": [{"key": k, "value": v, "offset": o} for k, v, o in unattributed[:NOTES_LISTED]]}
    if reasons:
        out["reason"] = "; ".join(reasons)
    out["check_s"] = round(time.monotonic() - t0, 3)
    return out


def _reasons(col: Collector, unattributed: list) -> list[str]:
    """Why the history cannot be judged valid, each a sentence naming ops, keys or values."""
    reasons = []
    if col.problems:
        reasons.append(f"{len(col.problems)} op(s) could not be read: "
                       + listing((f"op {i}: {why}" for i, why in col.problems), 3))
    if not col.ops and not col.problems:
        what = (f" (it holds ops of {', '.join(f'{f} ({n})' for f, n in sorted(col.ignored.items()))})"
                if col.ignored else "")
        reasons.append("no send, poll or txn op completed: nothing to check" + what)
    if unattributed:
        reasons.append(f"{len(unattributed)} polled value(s) that no op sent: "
                       + listing((f"{val(v)} of key {k}{at(o)}" for k, v, o in unattributed), 5))
    return reasons


def _counts(col: Collector, orders) -> dict:
    ops = col.ops
    return {"ops": len(ops), "invoked": col.invoked, "micro_ops": sum(op.mops for op in ops),
            "sends": sum(len(op.writes) for op in ops),
            "polled_records": sum(col.records.length(b[i], b[i + 1]) for op in ops
                                  for b in (op.spans[1],) for i in range(0, len(b), 2)),
            "keys": len(orders), "processes": len({op.process for op in ops})}


def check_ops(history: Iterable[dict], options: Options = Options()) -> dict:
    """:func:`analyse` of an op list or iterable (dicts as in history.jsonl)."""
    col = Collector()
    for op in history:
        col.feed(op)
    col.finish()
    return analyse(col, options)
