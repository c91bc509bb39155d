"""Non-monotonic reads: a read sees a shorter committed prefix than one observed before it began."""
from __future__ import annotations

from history import pair_ops

from .node_data import NodeData
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
    for i, r in enumerate(recs):
        if not (isinstance(r, list) and len(r) == 4 and r[0] == start + i):
            return f"record {i} is {r!r}, expected offset {start + i}"
    return None


def check_nonmonotonic_read(history: list[dict], nodes: dict[str, NodeData] | None = None) -> dict:
    """Find linearizable reads whose committed prefix is shorter than one seen before they began.

    The prefix end of an ok read is its ``high_watermark``. A linearizable
    read B is non-monotonic if an earlier observation A completed (by history
    index) before B was invoked and saw a longer prefix: another
    linearizable read with a larger high watermark, or an ok append at
    offset O >= B's high watermark (a committed ack shows prefix end O+1).
    Non-linearizable reads (the final per-node reads) are not compared. The
    pages of a paged final committed read (``final`` and ``linearizable``
    true, with ``to``) are one read: only the first non-monotonic page is
    reported.
    Every ok read (either kind) whose records do not densely cover
    ``[from, high_watermark)`` is reported as ``malformed``.

    Sweep: observations sorted by completion index, reads by invoke index;
    O(n log n). Anomalies: ``{"kind": "nonmonotonic", "op", "invoke",
    "node", "high_watermark", "earlier_op", "earlier_f",
    "earlier_high_watermark"}`` and ``{"kind": "malformed", "op", "node",
    "problem"}``. Returns ``{"valid", "anomalies", "reads"}``.
    Raises HistoryError (from pair_ops) if processes overlap their ops.
    """
    anomalies = []
    observations = []     # (completion index, prefix end, completion op)
    reads = []            # (invoke index, completion op, hw)
    for inv, comp in pair_ops(history):
        if comp is None or comp["type"] != "ok" or not isinstance(comp.get("value"), dict):
            continue
        v = comp["value"]
        if comp["f"] == "append":
            if is_int(v.get("offset")):
                observations.append((comp["index"], v["offset"] + 1, comp))
            continue
        if comp["f"] != "read":
            continue
        problem = malformed_read(v)
        if problem:
            anomalies.append({"kind": "malformed", "op": comp["index"], "node": comp.get("node"),
                              "problem": problem})
            continue
        if v.get("linearizable") is not True:
            continue
        observations.append((comp["index"], v["high_watermark"], comp))
        reads.append((inv["index"], comp, v["high_watermark"]))
    observations.sort(key=lambda o: o[0])
    reads.sort(key=lambda r: r[0])
    best, best_op, i = -1, None, 0
    final_reported = False
    for inv_index, comp, hw in reads:
        while i < len(observations) and observations[i][0] < inv_index:
            if observations[i][1] > best:
                best, best_op = observations[i][1], observations[i][2]
            i += 1
        if best_op is not None and hw < best:
            if "to" in comp["value"] and is_final_committed(comp):
                if final_reported:
                    continue
                final_reported = True
            anomalies.append({"kind": "nonmonotonic", "op": comp["index"], "invoke": inv_index,
                              "node": comp.get("node"), "high_watermark": hw,
                              "earlier_op": best_op["index"], "earlier_f": best_op["f"],
                              "earlier_high_watermark": best})
    return {"valid": not anomalies, "anomalies": anomalies, "reads": len(reads)}
