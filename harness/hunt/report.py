"""A hunt's report: ``hunt.json``, the table (``hunt.txt``), the JUnit XML (``hunt.xml``, and
``--junit FILE``) and the exit code, rewritten after every row so that an interrupted or killed
hunt leaves the report of what ran; and a row's progress line (:func:`row_line`).

``hunt.json``::

    {"command", "db", "seed", "minutes", "workloads", "unsafe", "stop_at_first",
     "started", "finished", "wall_s", "lock_wait_s", "interrupted",
     "sim": {"status": "ran" | "off" | "unavailable" | "not-for-target", "reason"},
     "rows": [{"n", "phase": "sim" | "real" | "replay", "schedule", "workload",
               "kraft_version", "seed", "verdict", "anomalies": {kind: n}, "detect_s",
               "started_s", "wall_s", "lock_wait_s", "store", "repeat", "error", "error_kind", ...}],
     "first_failure": {"row", "phase", "elapsed_s", "lock_wait_s", "detect_s", "what", "scenario",
                       "scenario_full", "shrink", "replay"} | null,
     "notes": [...], "counts": {verdict: n}, "exit_code"}

A row's ``verdict`` is ``valid``, ``invalid`` (a failure: an anomaly, or a violated
invariant in the simulator), ``unknown``, ``error`` (the run could not be made),
``interrupted`` or ``skipped`` (with its ``reason``). The JUnit XML is the matrix's
(harness/matrix/report.py): one testcase per row, class
``kraft-chaos.matrix.hunt-<phase>.<workload>``, name ``<schedule> kv<N> seed <S>``; a skipped
row is a skipped testcase naming why.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from harness.exits import EXIT_HARNESS
from harness.matrix.cells import exit_code as matrix_exit_code
from harness.matrix.report import VERDICTS, anomaly_text, write_junit
from history import store

#: the verdicts of a row, in the counts' order
ROW_VERDICTS = (*VERDICTS, "skipped")


def _anomalies(row: dict) -> str:
    text = anomaly_text(row.get("anomalies") or {})
    known = row.get("known") or {}
    if known:
        text += " (known: " + ", ".join(sorted({j for js in known.values() for j in js})) + ")"
    return text


def _seconds(x) -> str:
    return f"{x:.0f}" if isinstance(x, (int, float)) else "-"


def format_table(doc: dict) -> str:
    """The hunt's table: one line per row (n, phase, schedule or simulator config, workload,
    kraft.version, seed, verdict, anomalies, wall s, store or error), then the simulation
    phase's status when it did not run, the first failure (when, what, its scenario) and the
    counts."""
    head = ("#", "phase", "schedule / config", "workload", "kv", "seed", "verdict", "anomalies", "s",
            "store / error")
    rows = [(str(r["n"]), r["phase"], r["schedule"], r["workload"], str(r["kraft_version"]), str(r["seed"]),
             r["verdict"].upper(), _anomalies(r) if r["verdict"] != "skipped" else r.get("reason") or "-",
             _seconds(r.get("wall_s")), r.get("error") or r.get("store") or "-") for r in doc["rows"]]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head) - 1)]
    lines = ["  ".join(x.ljust(w) for x, w in zip(r, widths)) + "  " + r[-1] for r in [head, *rows]]
    sim = doc.get("sim") or {}
    if sim.get("status") not in (None, "ran"):
        lines.append(f"simulation: {sim['status']}: {sim.get('reason')}")
    lines.extend(f"note: {n}" for n in doc.get("notes", []))
    ff = doc.get("first_failure")
    if ff:
        at = f"; its first anomalous op {ff['detect_s']:.1f} s into the run" if ff.get("detect_s") is not None else ""
        waited = f" (of which {ff['lock_wait_s']:.0f} s waiting for the lock)" if ff.get("lock_wait_s") else ""
        lines.append(f"first failure: {ff['elapsed_s']:.0f} s into the hunt{waited}: {ff['what']}{at}")
        shrink = ff.get("shrink") or {}
        if shrink.get("faults_before") is not None:
            lines.append(f"shrunk: {shrink['faults_before']} fault(s) -> {shrink['faults_after']} in "
                         f"{shrink['attempts']} run(s)")
        if ff.get("scenario"):
            lines.append(f"scenario: {ff['scenario']}")
            lines.append(f"replay with: {ff.get('replay') or 'kraft-chaos scenario run ' + ff['scenario']}")
    else:
        lines.append("first failure: none")
    counts = doc.get("counts") or {}
    tally = ", ".join(f"{counts[v]} {v}" for v in ROW_VERDICTS if counts.get(v))
    lines.append(f"{len(doc['rows'])} row(s)" + (f": {tally}" if tally else "")
                 + (" (interrupted)" if doc.get("interrupted") else "")
                 + f"; {doc.get('wall_s', 0):.0f} s of {doc['minutes'] * 60:.0f}"
                 + (f", {doc['lock_wait_s']:.0f} s of it waiting for the lock" if doc.get("lock_wait_s") else ""))
    lines.append(f"repeat with: {doc['command']}")
    return "\n".join(lines)


def junit_doc(doc: dict) -> dict:
    """The hunt as the matrix's JUnit writer reads it (harness/matrix/report.py): a cell per
    row that ran, a skipped entry per skipped row."""
    cells, skipped = [], []
    for r in doc["rows"]:
        target = f"hunt-{r['phase']}"
        if r["verdict"] == "skipped":
            skipped.append({"db": target, "workload": r["workload"], "reason": r.get("reason") or "skipped"})
            continue
        cells.append({"id": f"{r['phase']}/{r['n']}", "db": doc["db"], "target": target, "workload": r["workload"],
                      "nemesis": f"{r['schedule']} kv{r['kraft_version']}", "seed": r["seed"],
                      "verdict": r["verdict"], "valid": r.get("valid"), "anomalies": r.get("anomalies") or {},
                      "store": r.get("store"), "wall_s": r.get("wall_s"), "error": r.get("error"),
                      "error_kind": r.get("error_kind"), "repeat": r.get("repeat") or "",
                      "summary": r.get("summary") or r.get("detail"),
                      **({"kafka_version": r["kafka_version"]} if r.get("kafka_version") else {})})
    return {"name": f"hunt {doc['db']} seed {doc['seed']}", "file": doc["command"], "started": doc.get("started"),
            "wall_s": doc.get("wall_s"), "interrupted": doc.get("interrupted"), "cells": cells, "skipped": skipped}


def exit_code(doc: dict) -> int:
    """0 nothing found, 1 a failure found, 2 only unknowns, 4 every run that could not be made
    was a cluster error, 5 another harness error (or nothing ran at all), 130 interrupted."""
    ran = [r for r in doc["rows"] if r["verdict"] != "skipped"]
    code = matrix_exit_code(ran, bool(doc.get("interrupted")))
    if code == 0 and not any(r["verdict"] in ("valid", "invalid", "unknown") for r in ran):
        return EXIT_HARNESS
    return code


class HuntReport:
    """The report being written into ``out`` (a folder, created) as the hunt goes; ``doc`` is
    ``hunt.json`` (module docstring; the caller fills in the hunt's fields), ``junit`` an
    extra path for the JUnit XML."""

    def __init__(self, out: Path, doc: dict, junit: str | None = None):
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.doc = {"rows": [], "notes": [], "first_failure": None, "interrupted": False, "started": store.timestamp(),
                    "finished": None, **doc}
        self.junit = junit

    @property
    def rows(self) -> list[dict]:
        return self.doc["rows"]

    def add(self, row: dict) -> dict:
        """Append ``row`` (numbered here, ``n`` from 1) and save; returns it."""
        row["n"] = len(self.rows) + 1
        self.rows.append(row)
        self.save()
        return row

    def note(self, text: str) -> None:
        """A line of the report that is no row (e.g. why a run was not started)."""
        self.doc["notes"].append(text)
        self.save()

    def save(self, wall_s: float | None = None) -> None:
        """Rewrite hunt.json, hunt.txt and hunt.xml (and the ``--junit`` copy)."""
        if wall_s is not None:
            self.doc["wall_s"] = round(wall_s, 1)
        self.doc.setdefault("wall_s", 0.0)
        self.doc["counts"] = {v: sum(1 for r in self.rows if r["verdict"] == v) for v in ROW_VERDICTS}
        self.doc["exit_code"] = exit_code(self.doc)
        store.write_json(self.out / "hunt.json", self.doc)
        tmp = self.out / ".hunt.txt.tmp"
        tmp.write_text(format_table(self.doc) + "\n", encoding="utf-8")
        os.replace(tmp, self.out / "hunt.txt")
        write_junit(junit_doc(self.doc), self.out / "hunt.xml")
        if self.junit:
            Path(self.junit).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(self.out / "hunt.xml", self.junit)


def row_line(row: dict) -> str:
    """One progress line: ``[n] phase schedule workload kvN seed S: VERDICT anomalies (W s) store``."""
    found = ", ".join(f"{k} {n}" for k, n in (row.get("anomalies") or {}).items())
    at = f" at {row['detect_s']:.1f} s" if row.get("detect_s") is not None else ""
    wall = f" ({row['wall_s']:.0f} s)" if isinstance(row.get("wall_s"), (int, float)) else ""
    return (f"[{row['n']}] {row['phase']} {row['schedule']} {row['workload']} kv{row['kraft_version']} "
            f"seed {row['seed']}: {row['verdict'].upper()}{' ' + found if found else ''}{at}{wall} "
            f"{row.get('error') or row.get('store') or row.get('detail') or ''}".rstrip())
