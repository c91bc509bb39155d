"""Phantom values: data in the log that no client appended, or whose append failed."""
from __future__ import annotations

from .node_data import NodeData
from .reads import DATA, MAX_EXAMPLES, ok_reads, read_records, record_key


def check_phantom(history: list[dict], nodes: dict[str, NodeData] | None = None) -> dict:
    """Find data values in any ok read (the final committed log included) that were
    never attempted (no append invoke with that value) or whose append ended in ``fail``
    (``fail`` means the append certainly did not happen).

    Returns ``{"valid", "anomalies"}``; one anomaly per value: ``{"value",
    "reason": "never-attempted" | "append-failed", "append": index of the
    fail op or None, "seen": [{"op", "offset", "node"}, ...] (at most
    MAX_EXAMPLES), "seen_count"}``. ``nodes`` is unused.
    """
    attempted: set = set()
    failed: dict = {}
    for op in history:
        if op["f"] != "append":
            continue
        key = record_key(DATA, op.get("value"))
        if op["type"] == "invoke":
            attempted.add(key)
        elif op["type"] == "fail":
            failed[key] = op["index"]
    found: dict = {}
    for op in ok_reads(history):
        for offset, _epoch, rtype, payload in read_records(op):
            if rtype != DATA:
                continue
            key = record_key(DATA, payload)
            if key in attempted and key not in failed:
                continue
            a = found.get(key)
            if a is None:
                a = found[key] = {
                    "value": payload,
                    "reason": "append-failed" if key in failed else "never-attempted",
                    "append": failed.get(key), "seen": [], "seen_count": 0}
            a["seen_count"] += 1
            if len(a["seen"]) < MAX_EXAMPLES:
                a["seen"].append({"op": op["index"], "offset": offset, "node": op.get("node")})
    anomalies = list(found.values())
    return {"valid": not anomalies, "anomalies": anomalies}
