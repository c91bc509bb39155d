"""Pairing each invoke with its completion, by process (a process runs one op at a time)."""
from __future__ import annotations

from typing import Callable

from .ops import HistoryError


def pair_ops(history: list[dict], name: Callable[[dict], str] | None = None
             ) -> list[tuple[dict, dict | None]]:
    """Pair each invoke with its completion, by process.

    Returns ``[(invoke, completion or None), ...]`` in invoke order; an
    invoke still in flight at the end of the history pairs with None.
    Raises :class:`HistoryError` naming the op (``name(op)``, default ``op
    <index>``) when a process invokes while it already has an op in flight,
    a completion has no invoke in flight, or a completion's ``f`` differs
    from its invoke's.
    """
    name = name or (lambda op: f"op {op['index']}")

    def fail(op: dict, reason: str):
        raise HistoryError(f"{name(op)}: {reason}", op=op, reason=reason)

    pairs: list[list] = []
    in_flight: dict[int | str, int] = {}   # process -> position in pairs
    for op in history:
        proc = op["process"]
        if op["type"] == "invoke":
            if proc in in_flight:
                fail(op, f"process {proc!r} invokes while {name(pairs[in_flight[proc]][0])} is still "
                         f"in flight (a process runs one op at a time)")
            in_flight[proc] = len(pairs)
            pairs.append([op, None])
        else:
            pos = in_flight.pop(proc, None)
            if pos is None:
                fail(op, f"{op['type']} for process {proc!r} with no invoke in flight "
                         f"(no open invoke to complete)")
            inv = pairs[pos][0]
            if inv["f"] != op["f"]:
                fail(op, f"completion f {op['f']!r} does not match invoke {name(inv)} f {inv['f']!r}")
            pairs[pos][1] = op
    return [(inv, comp) for inv, comp in pairs]
