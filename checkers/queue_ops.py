"""Views on the queue workload's ops shared by its checkers (checkers/queue_*.py).

Shapes (docs/data-plane.md, "History ops"; workloads/queue.py):

- ``send``: invoke value ``{"partition": P, "value": V}``; ok value adds ``"offset": O``
  (O is -1 when the producer got no offset, acks=0);
- ``poll``: invoke value ``{"partition": P, "from": O}``; ok value adds
  ``"records": [[offset, value], ...]``; the final drain's polls add ``"final": true``
  and ``"end"`` (the high watermark drained to).

P, O and offsets are ints (not bools). Malformed items are skipped, never raised on:
a checker judges what it can read.
"""
from __future__ import annotations

from typing import Any

from .reads import MAX_EXAMPLES, is_int  # noqa: F401 - re-exported for the queue checkers

SEND, POLL = "send", "poll"


def sent(op: dict) -> tuple[int, Any] | None:
    """``(P, V)`` of a ``send`` op (any type) whose value names an int partition, else None."""
    if op["f"] != SEND:
        return None
    v = op.get("value")
    if isinstance(v, dict) and is_int(v.get("partition")) and "value" in v:
        return v["partition"], v["value"]
    return None


def ack(op: dict) -> tuple[int, Any, int | None] | None:
    """``(P, V, O)`` of an ok ``send``; O is None unless the ack named an offset >= 0."""
    if op["type"] != "ok":
        return None
    s = sent(op)
    if s is None:
        return None
    o = op["value"].get("offset")
    return s[0], s[1], o if is_int(o) and o >= 0 else None


def poll_value(op: dict) -> dict | None:
    """The value of an ok ``poll`` with an int partition, else None."""
    if op["type"] != "ok" or op["f"] != POLL:
        return None
    v = op.get("value")
    return v if isinstance(v, dict) and is_int(v.get("partition")) else None


def poll_records(value: dict) -> list[tuple[int, Any]]:
    """The well-formed ``(offset, value)`` records of an ok poll's value, in the order read."""
    recs = value.get("records")
    if not isinstance(recs, list):
        return []
    out = []
    for r in recs:
        if isinstance(r, (list, tuple)) and len(r) == 2 and is_int(r[0]):
            out.append((r[0], r[1]))
    return out


def is_final(value: dict) -> bool:
    """True for a poll of the final drain (``"final": true``)."""
    return value.get("final") is True


def hashable(x: Any) -> Any:
    """``x`` as a dict key: itself when hashable, else its repr tagged (never equal to an int)."""
    try:
        hash(x)
        return x
    except TypeError:
        return ("unhashable", repr(x))


def add_example(examples: list, item: Any) -> None:
    """Append ``item`` to ``examples`` unless already there or MAX_EXAMPLES are kept."""
    if len(examples) < MAX_EXAMPLES and item not in examples:
        examples.append(item)
