"""The human summary of a run's or a check's results (``results.json``): verdict, anomalies,
statistics; what ``kraft-chaos run``, ``check``, ``matrix`` and ``serve`` print."""
from __future__ import annotations

import json
from typing import Any


def anomaly_sentence(a: dict) -> str:
    """One linearizability anomaly (results.json's shape) as a sentence."""
    op = a.get("op") or {}
    where = f"key {a['key']!r}: " if a.get("key") is not None else ""
    return (f"{where}after a linearizable prefix of {a['linearized_prefix']} op(s), "
            f"{op.get('desc')} (process {op.get('process')}, index/line {op.get('index')}) "
            f"cannot be placed: the state is {a.get('state')}, it needs {a.get('needs')}")


def _fmt(x: Any, unit: str = "") -> str:
    if x is None:
        return "n/a"
    if isinstance(x, float):
        return f"{x:.1f}{unit}"
    return f"{x}{unit}"


def format_results(results: dict, max_details: int = 3) -> str:
    """The human summary of ``results`` (results.json): verdict, anomalies, stats."""
    valid = results.get("valid")
    word = {True: "VALID", False: "INVALID"}.get(valid, "UNKNOWN")
    lines = [f"verdict: {word} (valid={json.dumps(valid)})"]
    counts = results.get("anomalies") or {}
    checkers = results.get("checkers") or {}
    found = {k: n for k, n in counts.items() if n}
    if found:
        lines.append("anomalies:")
        for name, n in found.items():
            lines.append(f"  {name}: {n}")
            for a in (checkers.get(name) or {}).get("anomalies", [])[:max_details]:
                if name == "linearizability":
                    lines.append(f"    - {anomaly_sentence(a)}")
                else:
                    lines.append(f"    - {json.dumps(a, default=str)[:300]}")
            if name == "linearizability" and (checkers.get(name) or {}).get("html"):
                lines.append(f"    explained in {checkers[name]['html']}")
    else:
        lines.append("anomalies: none")
    unknown = [k for k, r in checkers.items() if isinstance(r, dict) and r.get("valid") == "unknown"]
    if unknown:
        lines.append(f"undecided checkers: {', '.join(unknown)}")
        for k in unknown:
            if checkers[k].get("error"):
                lines.append(f"  {k}: {checkers[k]['error']}")
    stats = results.get("stats") or {}
    op_counts = stats.get("counts") or {}
    if stats and "append" not in op_counts and any(f in op_counts for f in ("write", "cas")):
        lines.append(_kv_stats_line(stats))
    elif stats and "append" not in op_counts and "send" in op_counts:      # the queue workload
        sd = op_counts["send"]
        lat = (stats.get("latency_ms") or {}).get("send", {})
        avail = stats.get("availability")
        lines.append(
            f"stats: sends ok={sd.get('ok', 0)} fail={sd.get('fail', 0)} info={sd.get('info', 0)}; "
            f"availability {_fmt(avail * 100 if avail is not None else None, '%')}; "
            f"send latency p50 {_fmt(lat.get('p50'), ' ms')} p99 {_fmt(lat.get('p99'), ' ms')}")
    elif stats:
        ap = (stats.get("counts") or {}).get("append", {})
        lat = (stats.get("latency_ms") or {}).get("append", {})
        avail = stats.get("availability")
        app_avail = stats.get("append_availability")
        lines.append(
            f"stats: appends ok={ap.get('ok', 0)} fail={ap.get('fail', 0)} info={ap.get('info', 0)}; "
            f"availability {_fmt(avail * 100 if avail is not None else None, '%')} "
            f"(appends {_fmt(app_avail * 100 if app_avail is not None else None, '%')}); "
            f"append latency p50 {_fmt(lat.get('p50'), ' ms')} p99 {_fmt(lat.get('p99'), ' ms')}")
    epochs = stats.get("epochs") or {}
    if epochs.get("max") is not None:
        lines.append(f"elections: {epochs['leaders']} leader(s) seen, highest epoch {epochs['max']}")
    return "\n".join(lines)


def _kv_stats_line(stats: dict) -> str:
    """The stats line of a kv run: counts and latency per f, availability."""
    counts, lat = stats.get("counts") or {}, stats.get("latency_ms") or {}
    parts = []
    for f in ("read", "write", "cas"):
        c = counts.get(f, {})
        extra = f" (cas-mismatch {stats['cas_mismatches']})" if f == "cas" and "cas_mismatches" in stats else ""
        parts.append(f"{f} ok={c.get('ok', 0)} fail={c.get('fail', 0)}{extra} info={c.get('info', 0)}")
    avail = stats.get("availability")
    latency = ", ".join(f"{f} {_fmt((lat.get(f) or {}).get('p50'))}/{_fmt((lat.get(f) or {}).get('p99'))}"
                        for f in ("read", "write", "cas"))
    return (f"stats: {'; '.join(parts)}; availability "
            f"{_fmt(avail * 100 if avail is not None else None, '%')}; latency p50/p99 ms: {latency}")
