"""Non-monotonic reads: a read sees a shorter committed prefix than one observed before it began."""
from __future__ import annotations

from history.node_data import NodeData

from .fold import Checker, check_list
from .inflight import InFlight
from .reads import is_final_committed, is_int, read_end


def malformed_read(value: dict) -> str | None:
    """Why an ok read value does not densely cover ``[from, end)``, or None.

    ``end`` is ``to`` for a page of a paged read, else ``high_watermark``.
    Checks that ``from`` and ``high_watermark`` (and ``to``, if present) are
    ints with from <= hw (and to <= hw), and that ``records`` holds exactly
    offsets from, from+1, ..., end-1 in order.
    """
    start, hw, recs = value.get("from"), value.get("high_watermark"), value.get("records")
    if not is_int(start) or not is_int(hw):
        return f"from {start!r} and high_watermark {hw!r} must be ints"
    end = read_end(value)
    if "to" in value and (not is_int(end) or end > hw):
        return f"to {end!r} must be an int <= high_watermark {hw}"
    if not isinstance(recs, list):
        return "records is not a list"
    expected = max(end - start, 0)
    if len(recs) != expected:
        return f"{len(recs)} records for range [{start}, {end}) of {expected} offsets"
    offsets = [r[0] for r in recs if type(r) is list and len(r) == 4]
    if len(offsets) == expected and offsets == list(range(start, start + expected)):
        return None                     # the common case, at C speed; else find the first bad one
    for i, r in enumerate(recs):
        if not (isinstance(r, list) and len(r) == 4 and r[0] == start + i):
            return f"record {i} is {r!r}, expected offset {start + i}"
    return None


class NonmonotonicRead(Checker):
    """Find linearizable reads whose committed prefix is shorter than one seen before they began.

    The prefix end of an ok read is its ``high_watermark``. A linearizable
    read B is non-monotonic if an earlier observation A completed (by history
    index) before B was invoked and saw a longer prefix: another
    linearizable read with a larger high watermark, or an ok append at
    offset O >= B's high watermark (a committed ack shows prefix end O+1).
    Non-linearizable reads (the final per-node reads) are not compared. The
    pages of a paged final committed read (``final`` and ``linearizable``
    true, with ``to``) are one read: only the first non-monotonic page (by
    invoke) is reported.
    Every ok read (either kind) whose records do not densely cover
    ``[from, high_watermark)`` is reported as ``malformed``.

    Anomalies: ``{"kind": "malformed", "op", "node", "problem"}`` first,
    then ``{"kind": "nonmonotonic", "op", "invoke", "node",
    "high_watermark", "earlier_op", "earlier_f",
    "earlier_high_watermark"}``, each kind by invoke index. Result:
    ``{"valid", "anomalies", "reads"}`` (``reads``: linearizable ok reads
    compared). Raises HistoryError (as ``history.pair_ops``) if processes
    overlap their ops.

    One pass: a running maximum of the prefixes observed (and the op that
    first showed it), noted at each invoke and compared at its completion;
    only the ops in flight are kept.
    """

    def __init__(self) -> None:
        self.inflight = InFlight()
        self.best, self.best_op = -1, None          # longest prefix end so far, (index, f) showing it
        self.reads = 0
        self.malformed: list[tuple[int, dict]] = []     # (invoke index, anomaly)
        self.stale: list[tuple[int, bool, dict]] = []   # (invoke index, final page, anomaly)

    def feed(self, op: dict) -> None:
        if op["type"] == "invoke":
            self.inflight.invoke(op, (op["index"], self.best, self.best_op))
            return
        inv_index, best, best_op = self.inflight.complete(op)
        v = op.get("value")
        if op["type"] != "ok" or not isinstance(v, dict):
            return
        if op["f"] == "append":
            if is_int(v.get("offset")):
                self._observe(v["offset"] + 1, op)
            return
        if op["f"] != "read":
            return
        problem = malformed_read(v)
        if problem:
            self.malformed.append((inv_index, {"kind": "malformed", "op": op["index"],
                                               "node": op.get("node"), "problem": problem}))
            return
        if v.get("linearizable") is not True:
            return
        hw = v["high_watermark"]
        self.reads += 1
        if best_op is not None and hw < best:
            self.stale.append((inv_index, "to" in v and is_final_committed(op),
                               {"kind": "nonmonotonic", "op": op["index"], "invoke": inv_index,
                                "node": op.get("node"), "high_watermark": hw,
                                "earlier_op": best_op[0], "earlier_f": best_op[1],
                                "earlier_high_watermark": best}))
        self._observe(hw, op)

    def _observe(self, prefix_end: int, op: dict) -> None:
        if prefix_end > self.best:
            self.best, self.best_op = prefix_end, (op["index"], op["f"])

    def result(self, nodes) -> dict:
        anomalies = [a for _i, a in sorted(self.malformed, key=lambda x: x[0])]
        final_reported = False
        for _i, final_page, a in sorted(self.stale, key=lambda x: x[0]):
            if final_page:
                if final_reported:
                    continue
                final_reported = True
            anomalies.append(a)
        return {"valid": not anomalies, "anomalies": anomalies, "reads": self.reads}


def check_nonmonotonic_read(history: list[dict], nodes: dict[str, NodeData] | None = None) -> dict:
    """:class:`NonmonotonicRead` over an op list (see there for what it reports)."""
    return check_list(NonmonotonicRead(), history, nodes)
