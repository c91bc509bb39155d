"""The final committed log, found in a stream: :func:`checkers.reads.final_committed_pages`
as a fold.

The final committed read is the last ok read with ``final`` and
``linearizable`` true; when it is a page (it has ``to``), the log is every
such page with its high watermark. Which reads those are is known only at
the end of a pass, so :class:`FinalPages` keeps a few facts per final read
and answers after the pass; :class:`FinalLog` also keeps their records
(compactly), for checkers that judge other ops against the final log in a
second pass.
"""
from __future__ import annotations

from typing import Any

from .compact import RecordTable
from .reads import is_final_committed, read_end, read_records


def final_read_value(op: dict) -> dict | None:
    """The value of ``op`` if it is an ok read with ``final`` and ``linearizable`` true, else None."""
    if op["type"] != "ok" or op["f"] != "read":
        return None
    v = op.get("value")
    if not isinstance(v, dict) or not is_final_committed(op):
        return None
    return v


class FinalPages:
    """Which ops make up the final committed log: feed every op of a pass, then ask
    :meth:`indices`. Keeps (index, paged, high watermark) per final committed read."""

    __slots__ = ("_finals", "_cache")

    def __init__(self) -> None:
        self._finals: list[tuple[int, bool, Any]] = []
        self._cache: list[int] | None = None

    def feed(self, op: dict) -> None:
        v = final_read_value(op)
        if v is not None:
            self._finals.append((op["index"], "to" in v, v.get("high_watermark")))
            self._cache = None

    def indices(self) -> list[int]:
        """The indices of the final committed log's reads, in history order ([] if none)."""
        if self._cache is None:
            if not self._finals:
                self._cache = []
            else:
                index, paged, hw = self._finals[-1]
                self._cache = [index] if not paged else \
                    [i for i, p, h in self._finals if p and h == hw]
        return self._cache


class FinalPage:
    """One read of the final log: its index, ``node``, ``from``, end (``to`` or the high
    watermark) and ``high_watermark``, as found in its value."""

    __slots__ = ("index", "node", "start", "end", "hw")

    def __init__(self, op: dict, v: dict):
        self.index, self.node = op["index"], op.get("node")
        self.start, self.end, self.hw = v.get("from"), read_end(v), v.get("high_watermark")


class _Log:
    """The pages of one candidate final log and their records (a page's record replaces
    an earlier one at its offset; the replaced ones are kept in ``replaced``)."""

    __slots__ = ("hw", "pages", "table", "replaced")

    def __init__(self, hw: Any):
        self.hw = hw
        self.pages: list[FinalPage] = []
        self.table = RecordTable()
        self.replaced: list[tuple] = []

    def add(self, op: dict, v: dict) -> None:
        self.pages.append(FinalPage(op, v))
        put, replaced = self.table.put, self.replaced
        for rec in read_records(op):
            prev = put(rec)
            if prev is not None:
                replaced.append(prev)


class FinalLog:
    """The final committed log with its records, from one pass: feed every op, then ask
    :meth:`select`.

    Keeps the records of the last unpaged final read and of each set of
    final pages sharing a high watermark (normally one read in all).
    """

    __slots__ = ("_single", "_paged", "_last")

    def __init__(self) -> None:
        self._single: _Log | None = None
        self._paged: list[_Log] = []
        self._last: tuple[bool, Any] | None = None

    def feed(self, op: dict) -> None:
        v = final_read_value(op)
        if v is None:
            return
        hw = v.get("high_watermark")
        if "to" not in v:
            self._single = _Log(hw)
            self._single.add(op, v)
            self._last = (False, hw)
            return
        log = next((g for g in self._paged if g.hw == hw), None)
        if log is None:
            log = _Log(hw)
            self._paged.append(log)
        log.add(op, v)
        self._last = (True, hw)

    def select(self) -> _Log | None:
        """The final log (``pages``, ``table``, ``replaced``), or None when there is none."""
        if self._last is None:
            return None
        paged, hw = self._last
        if not paged:
            return self._single
        return next((g for g in self._paged if g.hw == hw), None)
