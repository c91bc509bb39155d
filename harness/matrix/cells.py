"""The cells of a matrix run back to back (``kraft-chaos matrix FILE.toml``; the file:
harness/matrix/file.py).

Every cell is one :func:`harness.run.runner.run_test` in the store; a cell whose
run fails (cluster or harness error) is recorded and the matrix goes on.
``matrix.json`` and ``matrix.xml`` (JUnit, :mod:`harness.matrix.report`) are
rewritten after every cell into the output folder. Exit code (:func:`exit_code`): 1 if any
cell is invalid, else 2 if any is unknown, else 4 if every failed cell was a cluster error, 5
if another error, else 0; 130 on Ctrl-C (after writing what ran, the rest as not run).
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from clusters.errors import ClusterError
from harness.config.resolved import resolve
from harness.matrix.file import Cell, Matrix
from harness.matrix.report import VERDICTS, write_junit
from harness.reports.summary import format_results
from harness.run import runner
from harness.run.runner import Interrupted, RunSetupError
from history import store
from targets.errors import TargetError
from targets.kraft_db import DBError

def _error_kind(e: BaseException) -> str:
    """``cluster`` (the cluster or engine could not be set up), ``config`` or ``harness``."""
    if isinstance(e, (ClusterError, RunSetupError, DBError)):
        return "cluster"
    if isinstance(e, (TargetError, ValueError)):
        return "config"
    return "harness"


def _record(cell: Cell) -> dict:
    return {"id": cell.id, "db": cell.db, "target": cell.target, "kafka_version": cell.kafka_version,
            "workload": cell.workload, "client": cell.client, "transaction_version": cell.transaction_version,
            "nemesis": ",".join(cell.nemesis) or "none", "seed": cell.seed,
            "config": cell.config.to_dict(), "repeat": cell.config.repeat_command(),
            "verdict": "not-run", "valid": None, "anomalies": {}, "store": None, "wall_s": None,
            "error": None}


def run_cell(cell: Cell, run: Callable[[Any, Path], tuple[dict, Path]] | None = None) -> dict:
    """Run one cell; returns its ``matrix.json`` record (verdict, anomalies, store, wall_s,
    error, summary). A failed run is a record with verdict ``error`` and ``error_kind``.
    Raises ``harness.run.runner.Interrupted`` or KeyboardInterrupt on Ctrl-C (the record so far
    is attached to the exception as ``record``)."""
    rec = _record(cell)
    t0 = time.monotonic()
    try:
        config, run_dir = runner.prepare_run(cell.resolved or resolve(cell.config))
        rec["store"] = str(run_dir)
        results, run_dir = (run or (lambda c, d: runner.run_test(c, d, progress=False)))(config, run_dir)
    except (runner.Interrupted, KeyboardInterrupt) as e:
        rec.update(verdict="interrupted", wall_s=round(time.monotonic() - t0, 1))
        e.record = rec   # type: ignore[attr-defined]
        raise
    except Exception as e:  # noqa: BLE001 - recorded; the matrix goes on
        rec.update(verdict="error", error=f"{type(e).__name__}: {e}", error_kind=_error_kind(e),
                   wall_s=round(time.monotonic() - t0, 1))
        return rec
    valid = results.get("valid")
    rec.update(valid=valid, verdict={True: "valid", False: "invalid"}.get(valid, "unknown"),
               anomalies={k: n for k, n in (results.get("anomalies") or {}).items() if n},
               store=str(run_dir), wall_s=round(time.monotonic() - t0, 1), summary=format_results(results))
    return rec


def exit_code(records: list[dict], interrupted: bool = False) -> int:
    """130 when interrupted; else 1 if any cell is invalid, 2 if any unknown, 4 if every failed
    cell was a cluster error, 5 for any other error, 0 when all are valid."""
    verdicts = [r["verdict"] for r in records]
    if interrupted:
        return 130
    if "invalid" in verdicts:
        return 1
    if "unknown" in verdicts:
        return 2
    kinds = {r.get("error_kind") for r in records if r["verdict"] == "error"}
    if kinds:
        return 4 if kinds == {"cluster"} else 5
    return 0


def run_matrix(matrix: Matrix, out: Path, run: Callable | None = None,
               echo: Callable[[str], None] = print) -> dict:
    """Run every cell in turn, rewriting ``out/matrix.json`` and ``out/matrix.xml`` after each;
    returns the ``matrix.json`` document (``cells``, ``skipped``, ``counts``, ``exit_code``,
    ``interrupted``, times in s). Ctrl-C stops it: the cell in progress is ``interrupted``,
    the rest ``not-run``."""
    out.mkdir(parents=True, exist_ok=True)
    records = [_record(c) for c in matrix.cells]
    doc = {"name": matrix.name, "file": str(matrix.path), "started": store.timestamp(), "finished": None,
           "wall_s": 0.0, "interrupted": False, "skipped": matrix.skipped, "cells": records}
    for s in matrix.skipped:
        echo(f"skipped: {s['reason']}")
    t0 = time.monotonic()
    try:
        for i, cell in enumerate(matrix.cells):
            echo(f"[{i + 1}/{len(matrix.cells)}] {cell.id} ...")
            try:
                records[i] = run_cell(cell, run)
            except (Interrupted, KeyboardInterrupt) as e:
                records[i] = getattr(e, "record", records[i])
                raise
            finally:
                _write(doc, records, out, t0)
            r = records[i]
            found = ", ".join(f"{k} {n}" for k, n in r["anomalies"].items())
            echo(f"[{i + 1}/{len(matrix.cells)}] {cell.id}: {r['verdict'].upper()}"
                 f"{' ' + found if found else ''} ({r['wall_s']:.0f} s) {r['store'] or ''}"
                 f"{' ' + r['error'] if r['error'] else ''}")
    except (Interrupted, KeyboardInterrupt):
        doc["interrupted"] = True
        echo("interrupted: writing what ran; the rest is not run")
    doc["finished"] = store.timestamp()
    _write(doc, records, out, t0)
    return doc


def _write(doc: dict, records: list[dict], out: Path, t0: float) -> None:
    doc["cells"] = records
    doc["wall_s"] = round(time.monotonic() - t0, 1)
    doc["counts"] = {v: sum(1 for r in records if r["verdict"] == v) for v in VERDICTS}
    doc["exit_code"] = exit_code(records, doc["interrupted"])
    store.write_json(out / "matrix.json", doc)
    write_junit(doc, out / "matrix.xml")
