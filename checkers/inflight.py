"""Pairing invokes with completions one op at a time: :func:`history.pair_ops` as a fold.

Only the ops in flight are kept (one per process), and the same
``HistoryError`` s are raised, at the same op, as ``pair_ops`` raises for
the whole list.
"""
from __future__ import annotations

from typing import Any

from history import HistoryError


class InFlight:
    """The open invoke of each process, with whatever the caller keeps for it.

    :meth:`invoke` opens one (``data``: what :meth:`complete` gives back),
    :meth:`complete` closes it. :meth:`feed` does either by the op's type.
    """

    __slots__ = ("_open",)

    def __init__(self) -> None:
        self._open: dict[Any, tuple[int, str, Any]] = {}   # process -> (invoke index, f, data)

    @staticmethod
    def _fail(op: dict, reason: str):
        raise HistoryError(f"op {op['index']}: {reason}", op=op, reason=reason)

    def invoke(self, op: dict, data: Any = None) -> None:
        """Open ``op`` (an invoke). Raises HistoryError when its process has an op in flight."""
        proc = op["process"]
        prev = self._open.get(proc)
        if prev is not None:
            self._fail(op, f"process {proc!r} invokes while op {prev[0]} is still "
                           f"in flight (a process runs one op at a time)")
        self._open[proc] = (op["index"], op["f"], data)

    def complete(self, op: dict) -> Any:
        """Close the invoke ``op`` (a completion) completes; returns its ``data``. Raises
        HistoryError when its process has no invoke in flight or the ``f`` s differ."""
        proc = op["process"]
        entry = self._open.pop(proc, None)
        if entry is None:
            self._fail(op, f"{op['type']} for process {proc!r} with no invoke in flight "
                           f"(no open invoke to complete)")
        if entry[1] != op["f"]:
            self._fail(op, f"completion f {op['f']!r} does not match invoke op {entry[0]} f {entry[1]!r}")
        return entry[2]
