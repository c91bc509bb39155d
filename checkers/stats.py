"""Run statistics: op counts, availability and latency. Never affects validity."""
from __future__ import annotations

import math
from array import array

from history import NEMESIS
from history.node_data import NodeData

from .fold import Checker, check_list
from .inflight import InFlight
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


class Stats(Checker):
    """Summarise a run (never a verdict: ``valid`` is always True).

    Result: ``{"valid": True, "counts": {f: {"ok", "fail", "info"}},
    "windows": number of 1 s windows, "availability": fraction of windows
    with an ok describe-quorum naming a leader (None if no describe-quorum
    op was invoked), "append_availability": fraction of windows with an ok
    append (only when some append was invoked), "latency_ms": {f: {"p50",
    "p90", "p99", "max", "n"}}, "epochs": {"max", "leaders"} (the (epoch,
    leader) pairs describe-quorum answers named), "cas_mismatches": cas ops
    that failed their compare (error ``cas-mismatch``; only when some cas was
    invoked)}``. Windows span the first to the last client (non-nemesis) op,
    by ``time`` (ns); latency is completion time minus invoke time of ok
    client ops, in ms. ``nodes`` is unused. Raises HistoryError (as
    ``history.pair_ops``) if processes overlap their ops.

    One pass: counts, the windows that saw a leader or an ok append (by
    second), and each f's latencies as an array of doubles (8 bytes an ok
    op), sorted at the end for exact quantiles.
    """

    def __init__(self) -> None:
        self.inflight = InFlight()
        self.counts: dict[str, dict[str, int]] = {}
        self.invoked: set[str] = set()
        self.t0 = self.t1 = None            # time of the first and last client op
        self.dq_invoked = False
        self.leader_ticks: set[int] = set()  # (time - t0) // WINDOW_NS of ok dq naming a leader
        self.append_ticks: set[int] = set()  # ... of ok appends
        self.leaders: set[tuple[int, int]] = set()
        self.latencies: dict[str, array] = {}
        self.cas_mismatches = 0

    def feed(self, op: dict) -> None:
        t, f = op["type"], op["f"]
        if t == "invoke":
            self.invoked.add(f)
            self.inflight.invoke(op, op["time"])
        else:
            self.counts.setdefault(f, {"ok": 0, "fail": 0, "info": 0})[t] += 1
            start = self.inflight.complete(op)
            if t == "ok" and op["process"] != NEMESIS:
                lat = self.latencies.get(f)
                if lat is None:
                    lat = self.latencies[f] = array("d")
                lat.append((op["time"] - start) / 1e6)
            elif t == "fail" and f == "cas" and op.get("error") == CAS_MISMATCH:
                self.cas_mismatches += 1
        if op["process"] == NEMESIS:
            return
        if self.t0 is None:
            self.t0 = op["time"]
        self.t1 = op["time"]
        if f == "describe-quorum":
            self.dq_invoked = True
            v = op.get("value")
            if t == "ok" and isinstance(v, dict) and is_int(v.get("LeaderId")) and v["LeaderId"] >= 0:
                self.leader_ticks.add((op["time"] - self.t0) // WINDOW_NS)
                if is_int(v.get("LeaderEpoch")):
                    self.leaders.add((v["LeaderEpoch"], v["LeaderId"]))
        elif f == "append" and t == "ok":
            self.append_ticks.add((op["time"] - self.t0) // WINDOW_NS)

    def result(self, nodes) -> dict:
        windows = 0
        availability = append_availability = None
        if self.t0 is not None:
            windows = max(1, math.ceil((self.t1 - self.t0) / WINDOW_NS))
            last = windows - 1
            leader_windows = {min(k, last) for k in self.leader_ticks}
            availability = len(leader_windows) / windows if self.dq_invoked else None
            append_availability = len({min(k, last) for k in self.append_ticks}) / windows
        latency_ms = {}
        for f, vals in sorted(self.latencies.items()):
            latency_ms[f] = quantiles(vals)
        leaders = self.leaders
        out = {"valid": True, "counts": self.counts, "windows": windows, "availability": availability,
               "append_availability": append_availability, "latency_ms": latency_ms,
               "epochs": {"max": max((e for e, _ in leaders), default=None), "leaders": len(leaders)}}
        if "append" not in self.invoked:
            del out["append_availability"]
        if "cas" in self.invoked:
            out["cas_mismatches"] = self.cas_mismatches
        return out


def quantiles(vals: array) -> dict:
    """``{"p50", "p90", "p99", "max", "n"}`` (:data:`QUANTILES`, nearest rank) of an array of doubles."""
    import numpy as np
    s = np.sort(np.frombuffer(vals, dtype=np.float64))
    n = len(s)
    out = {}
    for name, q in QUANTILES:
        rank = max(1, math.ceil(q * n))
        out[name] = float(s[min(rank, n) - 1])
    out["n"] = n
    return out


def check_stats(history: list[dict], nodes: dict[str, NodeData] | None = None) -> dict:
    """:class:`Stats` over an op list (see there for what it reports)."""
    return check_list(Stats(), history, nodes)
