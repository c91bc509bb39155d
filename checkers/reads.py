"""Views on a history shared by the checkers: ok reads, their records, acks.

Op and record shapes are those of DEVELOPERS.md ("Client ops"). A read's
``records`` are ``[offset, epoch, type, payload]`` lists; an ok append's
value is ``{"value": V, "offset": O, "epoch": E}``.
"""
from __future__ import annotations

import functools
import json
import re
from typing import Any, Iterator

#: At most this many example op indices are kept per anomaly detail, so a
#: fault seen by thousands of reads does not blow up results.json.
MAX_EXAMPLES = 10

DATA = "data"
LEADER_CHANGE = "LeaderChange"


def ok_ops(history: list[dict], f: str) -> Iterator[dict]:
    """The ``ok`` completions of ``f`` in history order."""
    for op in history:
        if op["type"] == "ok" and op["f"] == f:
            yield op


def ok_reads(history: list[dict]) -> Iterator[dict]:
    """The ``ok`` read completions whose value is a dict (the others are malformed)."""
    for op in ok_ops(history, "read"):
        if isinstance(op.get("value"), dict):
            yield op


def read_records(op: dict) -> list[tuple[int, int, str, Any]]:
    """The well-formed records of ok read ``op`` as ``(offset, epoch, type, payload)``.

    Items that are not ``[int, int, str, payload]`` are skipped (the
    non-monotonic-read checker reports reads that do not cover their range).
    The answer for the op last asked about is remembered (while that op, its
    value and its records list are the same objects of the same length), as
    every streaming checker asks about each read in turn; do not change a
    record inside an op's list in place between calls.
    """
    recs = op["value"].get("records")
    memo = _memo
    if memo[0] is op and memo[1] is recs and recs is not None and memo[2] == len(recs):
        return memo[3]
    out: list = []
    if not isinstance(recs, list):
        return out
    append = out.append
    for r in recs:
        if type(r) is list and len(r) == 4:     # the common case, decided by exact types
            o, e, t, p = r
            if type(o) is int and type(e) is int and type(t) is str:
                append((o, e, t, p))
                continue
        if isinstance(r, (list, tuple)) and len(r) == 4:
            o, e, t, p = r
            if (isinstance(o, int) and isinstance(e, int) and isinstance(t, str)
                    and o is not True and o is not False and e is not True and e is not False):
                append((o, e, t, p))
    memo[:] = op, recs, len(recs), out
    return out


#: (op, its records list, that list's length, the answer) of the last read_records call
_memo: list = [None, None, 0, None]


def acks(history: list[dict]) -> Iterator[dict]:
    """The ``ok`` appends whose value is ``{"value": V, "offset": int, ...}``."""
    for op in ok_ops(history, "append"):
        v = op.get("value")
        if isinstance(v, dict) and "value" in v and is_int(v.get("offset")):
            yield op


def read_end(value: dict) -> Any:
    """The exclusive end of the offsets a read value's ``records`` cover.

    ``to`` when the read was limited to a page of the log (a final read of a
    large log is taken in pages, like Fetch with a byte limit), else its
    ``high_watermark``.
    """
    return value.get("to", value.get("high_watermark"))


def is_final_committed(op: dict) -> bool:
    """True for an ok read with ``final: true`` and ``linearizable: true``."""
    v = op["value"]
    return v.get("final") is True and v.get("linearizable") is True


def final_committed_pages(history: list[dict]) -> list[dict]:
    """The ok reads that make up the final committed log, in history order; [] if none.

    The final committed read is the last ok read with ``final: true`` and
    ``linearizable: true``; it covers ``[from, high_watermark)``. A large
    log is read in pages instead, like Fetch with a byte limit: each page
    carries ``to`` and covers ``[from, to)``, and the pages of one read
    share its ``high_watermark``. When the last final read is a page, the
    result is every final page with that high watermark. Together they are
    read as one log (see lost_write, duplicate).
    """
    finals = [op for op in ok_reads(history) if is_final_committed(op)]
    if not finals:
        return []
    last = finals[-1]["value"]
    if "to" not in last:
        return finals[-1:]
    hw = last.get("high_watermark")
    return [op for op in finals if "to" in op["value"] and op["value"].get("high_watermark") == hw]


def final_node_reads(history: list[dict]) -> dict[str, dict]:
    """Per node, its last ok read with ``final: true`` and ``linearizable: false``."""
    out: dict[str, dict] = {}
    for op in ok_reads(history):
        v = op["value"]
        if v.get("final") is True and v.get("linearizable") is False and op.get("node"):
            out[op["node"]] = op
    return out


def record_key(rtype: str, payload: Any) -> tuple:
    """A hashable key for a record's (type, payload); equal keys mean equal records.

    Int payloads (the data values) are used as is; other payloads are
    canonicalised as JSON (sorted keys).
    """
    if type(payload) is int:
        return rtype, 0, payload
    return rtype, 1, json.dumps(payload, sort_keys=True, separators=(",", ":"))


def node_id(name: str | None) -> int | None:
    """The numeric node id in a node name (``"n3"`` -> 3, ``"2"`` -> 2), or None."""
    if not isinstance(name, str):
        return None
    return _node_id(name)


@functools.lru_cache(maxsize=4096)
def _node_id(name: str) -> int | None:
    """:func:`node_id` of a str, remembered: a history names a few nodes, thousands of times."""
    m = re.search(r"(\d+)$", name)
    return int(m.group(1)) if m else None


def is_int(x: Any) -> bool:
    """True for an int that is not a bool."""
    return isinstance(x, int) and not isinstance(x, bool)
