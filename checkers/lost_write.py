"""Lost writes: an acknowledged append missing from its offset in the final committed log."""
from __future__ import annotations

import bisect
from itertools import accumulate

from history.node_data import NodeData

from .final_log import FinalLog
from .fold import Checker, check_list
from .reads import DATA, is_int


def ack_value(op: dict) -> dict | None:
    """The value of an ok append that is ``{"value": V, "offset": int, ...}`` (``reads.acks``), else None."""
    v = offsetless_ack_value(op, any_offset=True)
    if v is not None:
        o = v.get("offset")
        if isinstance(o, int) and o is not True and o is not False:
            return v
    return None


def offsetless_ack_value(op: dict, any_offset: bool = False) -> dict | None:
    """The value of an ok append that is ``{"value": V}`` with no ``offset`` (a system that
    acknowledges without saying where, such as Kafka's CreateTopics), else None.
    ``any_offset``: any ``{"value": V, ...}`` ok append."""
    if op["type"] != "ok" or op["f"] != "append":
        return None
    v = op.get("value")
    if isinstance(v, dict) and "value" in v and (any_offset or "offset" not in v):
        return v
    return None


class LostWrite(Checker):
    """Find ok appends whose value is not at the acknowledged offset of the final committed log.

    The final committed log is the records of the final committed read's
    pages (``reads.final_committed_pages``: usually one ok read with
    ``final: true`` and ``linearizable: true`` covering ``[from,
    high_watermark)``). An ack ``{"value": V, "offset": O, "epoch": E}`` is
    lost if O is at or past the read's high watermark, or if O is inside a
    page and the record there is not a data record with payload V. Acks
    below the high watermark that no page covers (below ``from``) cannot be
    judged and are counted in ``unjudged``.

    Result: ``{"valid", "anomalies", "acked", "final_read", "final_pages",
    "unjudged"}``; each anomaly is ``{"op", "value", "offset", "epoch",
    "node", "found", "found_at"}`` (``found``: the record at O as
    ``[offset, epoch, type, payload]`` or None; ``found_at``: offsets where
    V is in the final log). ``final_read`` is the index of the last page.
    ``valid`` is "unknown" when there are acks but no final committed read.
    ``nodes`` is unused.

    An ack without an offset (``{"value": V}``) is lost if no data record of the final
    log has payload V; it is judged only when the final log starts at offset 0
    (else it counts in ``unjudged``). Its anomaly has ``offset`` None.

    Two passes: the first keeps the final log (its records, compactly), the
    second judges each ack against it as it comes, keeping only the lost ones.
    """

    passes = 2

    def __init__(self) -> None:
        self.final = FinalLog()
        self.log = None
        self.acked = self.unjudged = 0
        self.anomalies: list[dict] = []
        self.offsetless: list[tuple[int, object, str | None]] = []   # (op index, value, node)

    def begin(self, pass_no: int) -> None:
        super().begin(pass_no)
        self.feed = self.final.feed if pass_no == 0 else self._judge
        if pass_no == 1:
            self.log = self.final.select()
            self.final = None           # only the selected log is kept
            if self.log is not None:
                pages = self.log.pages
                hw = pages[-1].hw
                self.end = hw if is_int(hw) else None   # acks at or past it are lost
                ranges = sorted((p.start, p.end) for p in pages if is_int(p.start) and is_int(p.end))
                # Pages may overlap: O is covered iff the furthest end among the pages starting at
                # or before O (reach[i - 1], i = how many start there) lies past O.
                self.starts = [a for a, _b in ranges]
                self.reach = list(accumulate((b for _a, b in ranges), max))

    def _judge(self, op: dict) -> None:
        v = ack_value(op)
        if v is None:
            v = offsetless_ack_value(op)
            if v is not None:
                self.acked += 1
                self.offsetless.append((op["index"], v["value"], op.get("node")))
            return
        self.acked += 1
        if self.log is None:
            return
        value, offset = v["value"], v["offset"]
        past_end = self.end is not None and offset >= self.end
        if not past_end:
            i = bisect.bisect_right(self.starts, offset)
            if not i or offset >= self.reach[i - 1]:
                self.unjudged += 1
                return
        rec = self.log.table.get(offset)
        if rec is not None and not past_end and rec[2] == DATA and rec[3] == value:
            return
        self.anomalies.append({"op": op["index"], "value": value, "offset": offset,
                               "epoch": v.get("epoch"), "node": op.get("node"),
                               "found": list(rec) if rec is not None else None, "found_at": []})

    def _judge_offsetless(self, log) -> None:
        """Acks without an offset: lost when their value is no data record of the final log."""
        if not self.offsetless:
            return
        if min((p.start for p in log.pages if is_int(p.start)), default=None) != 0:
            self.unjudged += len(self.offsetless)
            return
        values = set()
        for _i, value, _n in self.offsetless:
            try:
                values.add(value)
            except TypeError:
                pass
        where = log.table.data_offsets_of(values)
        for index, value, node in self.offsetless:
            try:
                present = value in where
            except TypeError:
                present = False
            if not present:
                self.anomalies.append({"op": index, "value": value, "offset": None, "epoch": None,
                                       "node": node, "found": None, "found_at": []})

    def result(self, nodes) -> dict:
        log, acked = self.log, self.acked
        if log is None:
            return {"valid": True if not acked else "unknown", "anomalies": [], "acked": acked,
                    "final_read": None, "final_pages": 0, "unjudged": acked,
                    "note": None if not acked else "no ok read with final and linearizable true"}
        self._judge_offsetless(log)
        wanted = set()
        for a in self.anomalies:
            try:
                wanted.add(a["value"])
            except TypeError:           # unhashable: never an appended value
                pass
        if wanted:
            where = log.table.data_offsets_of(wanted)
            for off, _epoch, rtype, payload in log.replaced:
                if rtype == DATA:
                    try:
                        if payload in wanted:
                            where.setdefault(payload, []).append(off)
                    except TypeError:
                        pass
            for a in self.anomalies:
                try:
                    a["found_at"] = sorted(where.get(a["value"], []))
                except TypeError:
                    pass
        return {"valid": not self.anomalies, "anomalies": self.anomalies, "acked": acked,
                "final_read": log.pages[-1].index, "final_pages": len(log.pages),
                "unjudged": self.unjudged}


def check_lost_write(history: list[dict], nodes: dict[str, NodeData] | None = None) -> dict:
    """:class:`LostWrite` over an op list (see there for what it reports)."""
    return check_list(LostWrite(), history, nodes)
