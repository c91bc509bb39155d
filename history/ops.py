"""The history's op schema: Jepsen's op fields and what makes an op well formed.

Format (DEVELOPERS.md, "History"): every op has ``index`` (int, dense from
0), ``time`` (ns since the test started), ``type`` (``invoke`` | ``ok`` |
``fail`` | ``info``), ``process`` (int, or ``"nemesis"``), ``f`` (str) and
``value``; optionally ``node`` and ``error``.
"""
from __future__ import annotations

from typing import Any

#: The four op types of a Jepsen history.
OP_TYPES = ("invoke", "ok", "fail", "info")
#: The completion types (everything except ``invoke``).
COMPLETION_TYPES = ("ok", "fail", "info")
#: The process of nemesis ops.
NEMESIS = "nemesis"


class HistoryError(ValueError):
    """A history file or op is malformed.

    The message names the file and 1-based line number where known, e.g.
    ``history.jsonl:57: truncated or invalid JSON: ...``. From
    :func:`pair_ops`, ``op`` is the op at fault and ``reason`` the message
    without the op's name.
    """

    def __init__(self, message: str, op: dict | None = None, reason: str | None = None):
        super().__init__(message)
        self.op, self.reason = op, reason or message


def op_problem(op: Any) -> str | None:
    """What is wrong with ``op`` as a history op, or None if it is well formed."""
    if not isinstance(op, dict):
        return f"expected a JSON object, got {type(op).__name__}"
    for key in ("index", "time", "type", "process", "f"):
        if key not in op:
            return f"missing field {key!r}"
    if not isinstance(op["index"], int) or isinstance(op["index"], bool) or op["index"] < 0:
        return f"'index' must be a non-negative int, got {op['index']!r}"
    if not isinstance(op["time"], int) or isinstance(op["time"], bool):
        return f"'time' must be an int (ns), got {op['time']!r}"
    if op["type"] not in OP_TYPES:
        return f"'type' must be one of {', '.join(OP_TYPES)}, got {op['type']!r}"
    proc = op["process"]
    if not ((isinstance(proc, int) and not isinstance(proc, bool)) or proc == NEMESIS):
        return f"'process' must be an int or {NEMESIS!r}, got {proc!r}"
    if not isinstance(op["f"], str):
        return f"'f' must be a string, got {op['f']!r}"
    if "node" in op and op["node"] is not None and not isinstance(op["node"], str):
        return f"'node' must be a string or null, got {op['node']!r}"
    return None
