"""When a run first showed an anomaly: the earliest op any anomaly names, and its time.

Checkers name the ops that show an anomaly by history ``index`` under keys
such as ``op``, ``ops``, ``invoke``, ``earlier_op``, ``first_op`` (nested
evidence too, e.g. election safety's). The time to detect is the ``time`` of
the earliest such op, in seconds since the history began; an anomaly seen
only in the copied node data names no op and counts as the end of the run.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from checkers.kind_names import current_counts, current_name, current_results
from history import iter_history
from history.store import history_path

#: keys whose int (or list of int) values are history indexes
OP_KEYS = ("op", "ops", "invoke", "earlier_op", "first_op", "final_read")


def anomaly_ops(obj: Any) -> set[int]:
    """Every history index named under :data:`OP_KEYS` anywhere in ``obj`` (an anomaly)."""
    found: set[int] = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in OP_KEYS:
                if isinstance(v, int) and not isinstance(v, bool):
                    found.add(v)
                elif isinstance(v, list):
                    found.update(x for x in v if isinstance(x, int) and not isinstance(x, bool))
            else:
                found |= anomaly_ops(v)
    elif isinstance(obj, list):
        for v in obj:
            found |= anomaly_ops(v)
    return found


def anomaly_kinds(results: dict, among: Iterable[str] | None = None) -> list[str]:
    """The checkers with at least one anomaly, in results order (only those in ``among``,
    when given: the kinds a catalogue entry is scored on), by today's names: the results
    and ``among`` may use older runs' names (checkers/kind_names.py)."""
    wanted = None if among is None else {current_name(k) for k in among}
    return [name for name, n in current_counts(results.get("anomalies") or {}).items()
            if n and (wanted is None or name in wanted)]


def first_anomaly_s(results: dict, history: Iterable[dict], among: Iterable[str] | None = None) -> float | None:
    """Seconds from the history's first op to the earliest op an anomaly names (of the kinds
    ``among``, when given); the history's length when the anomalies name no op; None when
    there is no such anomaly."""
    kinds = anomaly_kinds(results, among)
    if not kinds:
        return None
    wanted: set[int] = set()
    checkers = current_results(results).get("checkers") or {}
    for name in kinds:
        wanted |= anomaly_ops(checkers.get(name, {}).get("anomalies", []))
    t_first = t_last = None
    best = None
    for op in history:
        if t_first is None:
            t_first = op["time"]
        t_last = op["time"]
        if op["index"] in wanted and (best is None or op["time"] < best):
            best = op["time"]
    if t_first is None:
        return None
    return ((best if best is not None else t_last) - t_first) / 1e9


def first_anomaly_in_run(results: dict, run_dir: Path, among: Iterable[str] | None = None) -> float | None:
    """:func:`first_anomaly_s` of a stored run (its history streamed)."""
    if not anomaly_kinds(results, among):
        return None
    return first_anomaly_s(results, iter_history(history_path(run_dir)), among)
