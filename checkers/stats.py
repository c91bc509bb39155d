"""Run statistics: op counts, availability and latency. Never affects validity."""
from __future__ import annotations

import math

from history import NEMESIS, pair_ops

from .node_data import NodeData
from .reads import is_int

#: ``error`` of a kv cas whose compare failed (workloads/kv.py): a definite fail.
CAS_MISMATCH = "cas-mismatch"
#: Width of an availability window, in ns (1 s).
WINDOW_NS = 1_000_000_000
#: Latency quantiles reported, as (name, q).
QUANTILES = (("p50", 0.50), ("p90", 0.90), ("p99", 0.99), ("max", 1.0))


def quantile(sorted_values: list[float], q: float) -> float | None:
    """Nearest-rank quantile ``q`` (0..1) of an ascending list; None when empty."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def check_stats(history: list[dict], nodes: dict[str, NodeData] | None = None) -> dict:
    """Summarise a run.

    Returns ``{"valid": True, "counts": {f: {"ok", "fail", "info"}},
    "windows": number of 1 s windows, "availability": fraction of windows
    with an ok describe-quorum naming a leader (None if no describe-quorum
    op was invoked), "append_availability": fraction of windows with an ok
    append (only when some append was invoked), "cas_mismatches": cas ops
    that failed their compare (error ``cas-mismatch``; only when some cas was
    invoked), "latency_ms": {f: {"p50", "p90", "p99", "max", "n"}}}``.
    Windows span the first to the last client (non-nemesis) op, by ``time``
    (ns); latency is completion time minus invoke time of ok ops, in ms.
    ``nodes`` is unused.
    """
    counts: dict[str, dict[str, int]] = {}
    invoked = {op["f"] for op in history if op["type"] == "invoke"}
    leaders: set[tuple[int, int]] = set()
    for op in history:
        if op["type"] != "invoke":
            c = counts.setdefault(op["f"], {"ok": 0, "fail": 0, "info": 0})
            c[op["type"]] += 1
    client = [op for op in history if op["process"] != NEMESIS]
    windows = 0
    availability = append_availability = None
    if client:
        t0, t1 = client[0]["time"], client[-1]["time"]
        windows = max(1, math.ceil((t1 - t0) / WINDOW_NS))
        leader_windows, append_windows = set(), set()
        leaders: set[tuple[int, int]] = set()
        dq_invoked = False
        for op in client:
            w = min((op["time"] - t0) // WINDOW_NS, windows - 1)
            if op["f"] == "describe-quorum":
                dq_invoked = True
                v = op.get("value")
                if (op["type"] == "ok" and isinstance(v, dict) and is_int(v.get("LeaderId"))
                        and v["LeaderId"] >= 0):
                    leader_windows.add(w)
                    if is_int(v.get("LeaderEpoch")):
                        leaders.add((v["LeaderEpoch"], v["LeaderId"]))
            elif op["f"] == "append" and op["type"] == "ok":
                append_windows.add(w)
        availability = len(leader_windows) / windows if dq_invoked else None
        append_availability = len(append_windows) / windows
    latencies: dict[str, list[float]] = {}
    for inv, comp in pair_ops(history):
        if comp is not None and comp["type"] == "ok" and inv["process"] != NEMESIS:
            latencies.setdefault(inv["f"], []).append((comp["time"] - inv["time"]) / 1e6)
    latency_ms = {}
    for f, vals in sorted(latencies.items()):
        vals.sort()
        latency_ms[f] = {name: quantile(vals, q) for name, q in QUANTILES}
        latency_ms[f]["n"] = len(vals)
    out = {"valid": True, "counts": counts, "windows": windows, "availability": availability,
           "append_availability": append_availability, "latency_ms": latency_ms,
           "epochs": {"max": max((e for e, _ in leaders), default=None), "leaders": len(leaders)}}
    if "append" not in invoked:
        del out["append_availability"]
    if "cas" in invoked:
        out["cas_mismatches"] = sum(1 for op in history if op["f"] == "cas" and op["type"] == "fail"
                                    and op.get("error") == CAS_MISMATCH)
    return out
