"""How anomalies name what they show: ops by history index, keys, offsets and values.

Every anomaly is a dict with ``kind`` (a name from :data:`checkers.kafka_txn.kinds.KINDS`),
``explanation`` (one sentence), the fields it is made of (``key``, ``value``, ``offset``...)
and the history indexes of its ops under ``op`` or ``ops`` (the completion's index; the
invoke's for an op that never completed), as the other checkers name them.
"""
from __future__ import annotations

from typing import Any, Iterable

from .collect import TxnOp

#: how many items a sentence lists before saying how many more
LIST_LIMIT = 8


def op_name(op: TxnOp) -> str:
    """``op 57 (ok txn, process 3)``; ``(never completed ...)`` for an open op."""
    state = "never completed" if op.open else op.type
    return f"op {op.index} ({state} {op.f}, process {op.process})"


def val(v: Any) -> str:
    """A value or key as a sentence shows it: ints bare, strings bare unless blank."""
    return str(v) if (type(v) is int or (type(v) is str and v and " " not in v)) else repr(v)


def at(offset: int | None) -> str:
    """`` at offset 12``, or nothing for an unknown offset."""
    return "" if offset is None else f" at offset {offset}"


def listing(items: Iterable[Any], limit: int = LIST_LIMIT) -> str:
    """``a, b, c`` or ``a, b, ... and N more`` (at most ``limit`` items named)."""
    items = list(items)
    shown = ", ".join(str(x) for x in items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def plural(n: int, word: str) -> str:
    """``1 record``, ``3 records``."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def anomaly(kind: str, explanation: str, **fields: Any) -> dict:
    """An anomaly dict: ``kind`` and ``explanation`` first, then ``fields``."""
    return {"kind": kind, "explanation": explanation, **fields}
