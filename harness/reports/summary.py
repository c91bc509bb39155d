"""The human summary of a run's or a check's results (``results.json``): verdict, anomalies,
statistics; what ``kraft-chaos run``, ``check``, ``matrix`` and ``serve`` print."""
from __future__ import annotations

import json
from typing import Any

from checkers.kind_names import current_results


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
    """The human summary of ``results`` (results.json): verdict, anomalies, stats, and which
    faults landed (:func:`fault_lines`). An older run's checker names read as today's
    (checkers/kind_names.py)."""
    results = current_results(results)
    valid = results.get("valid")
    word = {True: "VALID", False: "INVALID"}.get(valid, "UNKNOWN")
    lines = [f"verdict: {word} (valid={json.dumps(valid)})"]
    counts = results.get("anomalies") or {}
    checkers = results.get("checkers") or {}
    found = {k: n for k, n in counts.items() if n}
    if found:
        lines.append("anomalies:")
        for name, n in found.items():
            allowed = (checkers.get(name) or {}).get("allowed")      # reported, not an error
            lines.append(f"  {name}: {n}" + (" (allowed)" if allowed else ""))
            for a in (checkers.get(name) or {}).get("anomalies", [])[:max_details]:
                if name == "linearizability":
                    lines.append(f"    - {anomaly_sentence(a)}")
                elif a.get("explanation"):
                    lines.append(f"    - {a['explanation']}")
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
            if checkers[k].get("error") or checkers[k].get("reason"):
                lines.append(f"  {k}: {checkers[k].get('error') or checkers[k]['reason']}")
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
    lines += fault_lines(results.get("faults") or {})
    return "\n".join(lines)


def _counts(e: dict) -> str:
    return f"{e['attempted']}/{e['happened']}/{e['skipped']}/{e['failed']}"


def _reasons(why: dict, limit: int = 3) -> str:
    top = sorted(why.items(), key=lambda kv: (-kv[1], kv[0]))
    text = "; ".join(f"{r} x{n}" for r, n in top[:limit])
    return text + (f"; {len(top) - limit} more" if len(top) > limit else "")


def fault_lines(faults: dict) -> list[str]:
    """The per-kind fault report (results.json's ``faults``, checkers/fault_report.py) as
    summary lines: each family's attempted/happened/skipped/failed, then every kind with
    skips, failures or leader waits and why, the voter changes and the wiped nodes."""
    totals, kinds = faults.get("totals") or {}, faults.get("kinds") or {}
    if not totals:
        return []
    lines = ["faults (attempted/happened/skipped/failed): "
             + ", ".join(f"{fam} {_counts(t)}" for fam, t in totals.items())]
    for fam, by_kind in kinds.items():
        for kind, e in by_kind.items():
            notes = []
            if e.get("skipped_why"):
                notes.append(f"skipped: {_reasons(e['skipped_why'])}")
            if e.get("failed_why"):
                notes.append(f"failed: {_reasons(e['failed_why'])}")
            if e.get("leader_unknown"):
                notes.append(f"no leader found, a random node hit x{e['leader_unknown']}")
            w = e.get("waited")
            if w:
                notes.append(f"waited for a leader x{w['n']} (mean {w['mean_s']:g} s, max {w['max_s']:g} s, "
                             f"none came x{w['no_leader']})")
            if notes:
                lines.append(f"  {fam}:{kind} {_counts(e)}: " + "; ".join(notes))
    changes = faults.get("changes") or {}
    if changes:
        parts = []
        for op, c in changes.items():
            counts = " ".join(f"{k} {c[k]}" for k in ("ok", "confirmed", "fail", "info", "error", "skipped") if c.get(k))
            parts.append(f"{op} {counts or 'none'}")
        lines.append(f"  voter changes: {'; '.join(parts)}")
    wiped = faults.get("wiped_nodes")
    if wiped:
        lines.append(f"  wiped nodes: {wiped['wiped']} wiped, {wiped['skipped']} skipped"
                     + (f" ({_reasons(wiped['skipped_why'], 2)})" if wiped.get("skipped_why") else ""))
    if faults.get("stop_errors"):
        lines.append("  stops that failed: " + ", ".join(f"{f} x{n}" for f, n in faults["stop_errors"].items()))
    return lines


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
