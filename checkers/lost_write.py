"""Lost writes: an acknowledged append missing from its offset in the final committed log."""
from __future__ import annotations

from .node_data import NodeData
from .reads import DATA, acks, final_committed_read, read_records


def check_lost_write(history: list[dict], nodes: dict[str, NodeData] | None = None) -> dict:
    """Find ok appends whose value is not at the acknowledged offset of the final committed log.

    The final committed log is the records of the last ok read with
    ``final: true`` and ``linearizable: true``. An ack ``{"value": V,
    "offset": O, "epoch": E}`` is lost if the record at O is not a data record
    with payload V, or if O is at or past the read's high watermark. Acks
    below the read's ``from`` cannot be judged and are counted in
    ``unjudged``.

    Returns ``{"valid", "anomalies", "acked", "final_read", "unjudged"}``;
    each anomaly is ``{"op", "value", "offset", "epoch", "node", "found",
    "found_at"}`` (``found``: the record at O as ``[offset, epoch, type,
    payload]`` or None; ``found_at``: offsets where V is in the final log).
    ``valid`` is "unknown" when there are acks but no final committed read.
    ``nodes`` is unused.
    """
    acked = list(acks(history))
    final = final_committed_read(history)
    if final is None:
        return {"valid": True if not acked else "unknown", "anomalies": [], "acked": len(acked),
                "final_read": None, "unjudged": len(acked),
                "note": None if not acked else "no ok read with final and linearizable true"}
    fv = final["value"]
    hw = fv.get("high_watermark")
    start = fv.get("from", 0)
    by_offset = {}
    where: dict = {}
    for rec in read_records(final):
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
        if isinstance(start, int) and offset < start:
            unjudged += 1
            continue
        rec = by_offset.get(offset)
        past_end = isinstance(hw, int) and offset >= hw
        if rec is not None and not past_end and rec[2] == DATA and rec[3] == value:
            continue
        try:
            found_at = where.get(value, [])
        except TypeError:
            found_at = []
        anomalies.append({"op": op["index"], "value": value, "offset": offset,
                          "epoch": v.get("epoch"), "node": op.get("node"),
                          "found": list(rec) if rec is not None else None,
                          "found_at": found_at})
    return {"valid": not anomalies, "anomalies": anomalies, "acked": len(acked),
            "final_read": final["index"], "unjudged": unjudged}
