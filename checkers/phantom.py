"""Phantom values: data in the log that no client appended, or whose append failed."""
from __future__ import annotations

from history.node_data import NodeData

from .compact import INT64_MAX, INT64_MIN, IntSet, small_int
from .fold import Checker, check_list
from .reads import DATA, MAX_EXAMPLES, read_records, record_key


class Phantom(Checker):
    """Find data values in any ok read (the final committed log included) that were
    never attempted (no append invoke with that value) or whose append ended in ``fail``
    (``fail`` means the append certainly did not happen).

    Result: ``{"valid", "anomalies"}``; one anomaly per value: ``{"value",
    "reason": "never-attempted" | "append-failed", "append": index of the
    (last) fail op or None, "seen": [{"op", "offset", "node"}, ...] (at
    most MAX_EXAMPLES), "seen_count"}``, in the order first seen. ``nodes``
    is unused.

    Two passes: the first collects the attempted values (int values as a
    sorted int64 array, 8 bytes an append) and the failed ones, the second
    judges each read's records as it comes.
    """

    passes = 2

    def __init__(self) -> None:
        self.attempted = IntSet()           # int values of append invokes
        self.attempted_other: set = set()   # record keys of the other values
        self.failed: dict = {}              # int value -> index of its last fail op
        self.failed_other: dict = {}        # record key -> index of its last fail op
        self.found: dict = {}               # record key -> anomaly

    def begin(self, pass_no: int) -> None:
        super().begin(pass_no)
        if pass_no == 1:
            self.attempted.freeze()
        self.feed = self._collect if pass_no == 0 else self._judge

    def _collect(self, op: dict) -> None:
        if op["f"] != "append":
            return
        t = op["type"]
        if t == "invoke":
            v = op.get("value")
            if type(v) is int:
                self.attempted.add(v)
            else:
                self.attempted_other.add(record_key(DATA, v))
        elif t == "fail":
            v = op.get("value")
            if type(v) is int:
                self.failed[v] = op["index"]
            else:
                self.failed_other[record_key(DATA, v)] = op["index"]

    def _judge(self, op: dict) -> None:
        if op["type"] != "ok" or op["f"] != "read" or not isinstance(op.get("value"), dict):
            return
        recs = [r for r in read_records(op) if r[2] == DATA]
        if not recs:
            return
        small = [p for _o, _e, _t, p in recs if type(p) is int and INT64_MIN <= p <= INT64_MAX]
        if len(small) == len(recs):         # the common case: every payload a 64-bit int
            failed = self.failed
            for (offset, _epoch, _rtype, payload), attempted in zip(recs, self.attempted.contains_many(small)):
                if attempted and payload not in failed:
                    continue
                self._found(op, offset, payload, failed.get(payload))
            return
        hits = iter(self.attempted.contains_many(small)) if small else None
        failed = self.failed
        for offset, _epoch, _rtype, payload in recs:
            if type(payload) is int:
                attempted = next(hits) if small_int(payload) else payload in self.attempted
                if attempted and payload not in failed:
                    continue
                fail_op = failed.get(payload)
            else:
                key = record_key(DATA, payload)
                if key in self.attempted_other and key not in self.failed_other:
                    continue
                fail_op = self.failed_other.get(key)
            self._found(op, offset, payload, fail_op)

    def _found(self, op: dict, offset, payload, fail_op: int | None) -> None:
        key = record_key(DATA, payload)
        a = self.found.get(key)
        if a is None:
            a = self.found[key] = {
                "value": payload, "reason": "append-failed" if fail_op is not None else "never-attempted",
                "append": fail_op, "seen": [], "seen_count": 0}
        a["seen_count"] += 1
        if len(a["seen"]) < MAX_EXAMPLES:
            a["seen"].append({"op": op["index"], "offset": offset, "node": op.get("node")})

    def result(self, nodes) -> dict:
        anomalies = list(self.found.values())
        return {"valid": not anomalies, "anomalies": anomalies}


def check_phantom(history: list[dict], nodes: dict[str, NodeData] | None = None) -> dict:
    """:class:`Phantom` over an op list (see there for what it reports)."""
    return check_list(Phantom(), history, nodes)
