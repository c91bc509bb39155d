"""Duplicates: one data value at more than one offset of a single read."""
from __future__ import annotations

from array import array

from history.node_data import NodeData

from .compact import small_int
from .final_log import FinalPages
from .fold import Checker, check_list
from .reads import DATA, MAX_EXAMPLES, read_records, record_key


class Duplicate(Checker):
    """Find data values that appear at two or more different offsets within one ok
    read. The final committed log is one such read, even when it was taken in
    several pages (``reads.final_committed_pages``).

    The same duplication repeats in every later read of that prefix, so it
    is reported once per (value, offsets): ``{"value", "offsets": [...],
    "ops": [read indices, at most MAX_EXAMPLES], "op_count", "nodes":
    [nodes that served those reads]}``. Result: ``{"valid", "anomalies"}``,
    in the order found: reads in history order, the final log last (a read
    of it counts as its first page), each read's values in the order first
    seen. ``nodes`` is unused.

    Two passes: the first finds the final log's pages; the second checks
    every other read as it comes and keeps the final log's (value, offset)
    pairs as two int64 arrays, grouped by value at the end.
    """

    passes = 2

    def __init__(self) -> None:
        self.pages = FinalPages()
        self.page_set: frozenset = frozenset()
        self.first_page: tuple | None = None   # (index, node) of the final log's first page
        self.found: dict = {}
        # the final log's data records: int payloads as parallel arrays, in log order ...
        self.values, self.offsets = array("q"), array("q")
        # ... and the others: record key -> [payload, {offsets}, (ints kept before it, seq)]
        self.other: dict = {}

    def begin(self, pass_no: int) -> None:
        super().begin(pass_no)
        if pass_no == 0:
            self.feed = self.pages.feed
        else:
            self.page_set = frozenset(self.pages.indices())
            self.feed = self._read

    def _read(self, op: dict) -> None:
        if op["type"] != "ok" or op["f"] != "read" or not isinstance(op.get("value"), dict):
            return
        if op["index"] in self.page_set:
            self._page(op)
            return
        recs = [r for r in read_records(op) if r[2] == DATA]
        payloads = {r[3] for r in recs if type(r[3]) is int}
        if len(payloads) == len(recs):
            return              # distinct int values (the common case): no duplicate
        seen: dict = {}
        for offset, _epoch, _rtype, payload in recs:
            seen.setdefault(record_key(DATA, payload), (payload, set()))[1].add(offset)
        for key, (payload, offsets) in seen.items():
            if len(offsets) >= 2:
                self._report(key, payload, offsets, op["index"], op.get("node"))

    def _page(self, op: dict) -> None:
        if self.first_page is None:
            self.first_page = (op["index"], op.get("node"))
        values, offsets, other = self.values, self.offsets, self.other
        for offset, _epoch, rtype, payload in read_records(op):
            if rtype != DATA:
                continue
            if small_int(payload) and small_int(offset):
                values.append(payload)
                offsets.append(offset)
                continue
            key = record_key(DATA, payload)
            entry = other.get(key)
            if entry is None:
                entry = other[key] = [payload, set(), (len(values), len(other))]
            entry[1].add(offset)

    def _report(self, key, payload, offsets: set, index: int, node) -> None:
        offs = tuple(sorted(offsets))
        a = self.found.get((key, offs))
        if a is None:
            a = self.found[(key, offs)] = {"value": payload, "offsets": list(offs), "ops": [],
                                           "op_count": 0, "nodes": []}
        a["op_count"] += 1
        if len(a["ops"]) < MAX_EXAMPLES:
            a["ops"].append(index)
        if node is not None and node not in a["nodes"]:
            a["nodes"].append(node)

    def _final_log_duplicates(self) -> list[tuple]:
        """(order, key, payload, offsets) of the final log's values at two or more offsets,
        ordered as first seen in the log."""
        groups: dict = {}       # record key -> [order, payload, offsets]
        for key, (payload, offsets, order) in self.other.items():
            groups[key] = [(order[0], 0, order[1]), payload, offsets]
        if self.values:
            import numpy as np
            vals = np.frombuffer(self.values, dtype=np.int64)
            offs = np.frombuffer(self.offsets, dtype=np.int64)
            order = np.argsort(vals, kind="stable")
            sv, so = vals[order], offs[order]
            starts = np.flatnonzero(np.r_[True, sv[1:] != sv[:-1]])
            ends = np.r_[starts[1:], len(sv)]
            lo, hi = np.minimum.reduceat(so, starts), np.maximum.reduceat(so, starts)
            # the values at two offsets, and those also kept among the others (an odd offset)
            odd = np.array([k[2] for k in self.other if k[1] == 0 and small_int(k[2])], dtype=np.int64)
            pick = (hi > lo) | np.isin(sv[starts], odd)
            for g in np.flatnonzero(pick).tolist():
                s, e = int(starts[g]), int(ends[g])
                value = int(sv[s])
                key = record_key(DATA, value)
                first = (int(order[s]), 1, 0)       # stable sort: the first of its group
                offsets = set(so[s:e].tolist())
                prev = groups.get(key)
                if prev is None:
                    groups[key] = [first, value, offsets]
                else:
                    prev[2] |= offsets
                    if first < prev[0]:
                        prev[0], prev[1] = first, value
        out = [(order, key, payload, offsets) for key, (order, payload, offsets) in groups.items()
               if len(offsets) >= 2]
        out.sort(key=lambda x: x[0])
        return out

    def result(self, nodes) -> dict:
        if self.first_page is not None:
            for _order, key, payload, offsets in self._final_log_duplicates():
                self._report(key, payload, offsets, *self.first_page)
        anomalies = list(self.found.values())
        return {"valid": not anomalies, "anomalies": anomalies}


def check_duplicate(history: list[dict], nodes: dict[str, NodeData] | None = None) -> dict:
    """:class:`Duplicate` over an op list (see there for what it reports)."""
    return check_list(Duplicate(), history, nodes)
