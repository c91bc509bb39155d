"""Lost writes: an acknowledged append missing from its offset in the final committed log."""
from __future__ import annotations

import bisect
from itertools import accumulate

from .node_data import NodeData
from .reads import DATA, acks, final_committed_pages, is_int, read_end, read_records


def check_lost_write(history: list[dict], nodes: dict[str, NodeData] | None = None) -> dict:
    """Find ok appends whose value is not at the acknowledged offset of the final committed log.

    The final committed log is the records of the final committed read's
    pages (``reads.final_committed_pages``: usually one ok read with
    ``final: true`` and ``linearizable: true`` covering ``[from,
    high_watermark)``). An ack ``{"value": V, "offset": O, "epoch": E}`` is
    lost if O is at or past the read's high watermark, or if O is inside a
    page and the record there is not a data record with payload V. Acks
    below the high watermark that no page covers (below ``from``) cannot be
    judged and are counted in ``unjudged``.

    Returns ``{"valid", "anomalies", "acked", "final_read", "final_pages",
    "unjudged"}``; each anomaly is ``{"op", "value", "offset", "epoch",
    "node", "found", "found_at"}`` (``found``: the record at O as
    ``[offset, epoch, type, payload]`` or None; ``found_at``: offsets where
    V is in the final log). ``final_read`` is the index of the last page.
    ``valid`` is "unknown" when there are acks but no final committed read.
    ``nodes`` is unused.
    """
    acked = list(acks(history))
    pages = final_committed_pages(history)
    if not pages:
        return {"valid": True if not acked else "unknown", "anomalies": [], "acked": len(acked),
                "final_read": None, "final_pages": 0, "unjudged": len(acked),
                "note": None if not acked else "no ok read with final and linearizable true"}
    hw = pages[-1]["value"].get("high_watermark")
    ranges = [(p["value"].get("from"), read_end(p["value"])) for p in pages]
    ranges = sorted((a, b) for a, b in ranges if is_int(a) and is_int(b))
    # Pages may overlap: O is covered iff the furthest end among the pages starting at or
    # before O (reach[i - 1], i = how many start there) lies past O.
    starts = [a for a, _b in ranges]
    reach = list(accumulate((b for _a, b in ranges), max))
    by_offset = {}
    where: dict = {}
    for page in pages:
        for rec in read_records(page):
            by_offset[rec[0]] = rec
            if rec[2] == DATA:
                try:
                    where.setdefault(rec[3], []).append(rec[0])
                except TypeError:       # unhashable payload: never an appended value
                    pass
    anomalies, unjudged = [], 0
    for op in acked:
        v = op["value"]
        value, offset = v["value"], v["offset"]
        past_end = is_int(hw) and offset >= hw
        if not past_end:
            i = bisect.bisect_right(starts, offset)
            if not i or offset >= reach[i - 1]:
                unjudged += 1
                continue
        rec = by_offset.get(offset)
        if rec is not None and not past_end and rec[2] == DATA and rec[3] == value:
            continue
        try:
            found_at = sorted(where.get(value, []))
        except TypeError:
            found_at = []
        anomalies.append({"op": op["index"], "value": value, "offset": offset,
                          "epoch": v.get("epoch"), "node": op.get("node"),
                          "found": list(rec) if rec is not None else None,
                          "found_at": found_at})
    return {"valid": not anomalies, "anomalies": anomalies, "acked": len(acked),
            "final_read": pages[-1]["index"], "final_pages": len(pages), "unjudged": unjudged}
