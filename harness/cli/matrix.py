"""``kraft-chaos matrix FILE.toml``: workloads x nemeses x targets x seeds, run back to back.

The file (see ``examples/nightly.toml``)::

    name = "nightly"                   # optional: the JUnit suite's name
    targets = ["kraft", "kafka"]       # default ["kraft"]
    workloads = ["append", "kv"]       # default: each target's default workload
    nemeses = ["partition,kill", "pause", "none"]   # --nemesis values; default: the run's default
    seeds = [1, 2, 3]                  # or a count: seeds = 3 is 0, 1, 2; default [0]
    kafka_versions = ["3.9", "4.4.0"]  # Kafka releases (a line: its newest patch); kafka cells only
    time_limit = 60                    # shared RunConfig settings, top level
    nodes = 5

    [target.kafka]                     # per-target overrides: settings and the axes
    workloads = ["metadata"]
    time_limit = 90

The settings a file may give are ``harness.cli.matrix_file.RUN_FIELDS``. A
workload a target cannot run (workloads/registry.py) is skipped with a
note. An unknown key, target, workload, nemesis or unsafe switch, or a bad
value, is a :class:`MatrixError` naming the file, line and key (exit 3).

Every cell is one :func:`harness.run.runner.run_test` in the store; a cell whose
run fails (cluster or harness error) is recorded and the matrix goes on.
``matrix.json`` and ``matrix.xml`` (JUnit, :mod:`harness.cli.matrix_report`) are
rewritten after every cell into the output folder (``--out``, default
``<store>/matrix/<timestamp>/``). Exit code: 1 if any cell is invalid, else
2 if any is unknown, else 4 if every failed cell was a cluster error, 5 if
another error, else 0; 3 for a bad file; 130 on Ctrl-C (after writing what
ran, the rest as not run).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Callable

from clusters.errors import ClusterError
from harness.cli.args import ipv4_subnet
from harness.cli.matrix_file import Cell, Matrix, MatrixError, load
from harness.cli.matrix_report import VERDICTS, format_table, write_junit
from harness.config.resolved import resolve
from harness.reports.summary import format_results
from harness.run import runner
from harness.run.runner import Interrupted, RunSetupError
from history import store
from targets.errors import TargetError
from targets.kraft_db import DBError

# -- running -----------------------------------------------------------------

def _error_kind(e: BaseException) -> str:
    """``cluster`` (the cluster or engine could not be set up), ``config`` or ``harness``."""
    if isinstance(e, (ClusterError, RunSetupError, DBError)):
        return "cluster"
    if isinstance(e, (TargetError, ValueError)):
        return "config"
    return "harness"


def _record(cell: Cell) -> dict:
    return {"id": cell.id, "db": cell.db, "target": cell.target, "kafka_version": cell.kafka_version,
            "workload": cell.workload,
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


# -- the command ---------------------------------------------------------------

def cmd_matrix(args) -> int:
    """``kraft-chaos matrix FILE.toml``: see the module docstring."""
    overrides = {k: v for k, v in (("store", args.store), ("subnet", args.subnet)) if v is not None}
    try:
        matrix = load(args.file, overrides)
    except (MatrixError, FileNotFoundError, IsADirectoryError) as e:
        print(f"kraft-chaos matrix: {e}", file=sys.stderr)
        return 3
    if args.dry_run:
        for s in matrix.skipped:
            print(f"skipped: {s['reason']}")
        for c in matrix.cells:
            print(f"{c.id}: {c.config.repeat_command()}")
        print(f"{len(matrix.cells)} cell(s)")
        return 0
    root = matrix.cells[0].config.store
    out = Path(args.out) if args.out else Path(root) / "matrix" / store.timestamp()
    try:
        doc = run_matrix(matrix, out)
    except KeyboardInterrupt:          # a second Ctrl-C while writing
        print("interrupted", file=sys.stderr)
        return 130
    print(format_table(doc))
    print(f"matrix.json and matrix.xml in {out}")
    return doc["exit_code"]


def add_parser(sub) -> None:
    """The ``matrix`` subcommand's arguments."""
    m = sub.add_parser("matrix", help="run workloads x nemeses x targets x seeds from a TOML file; "
                                      "summary table, matrix.json, JUnit XML")
    m.add_argument("file", metavar="FILE.toml", help="the matrix (see examples/nightly.toml)")
    m.add_argument("--out", default=None, help="where matrix.json and matrix.xml go "
                                               "(default STORE/matrix/<time>)")
    m.add_argument("--store", default=None, help="store root for the runs (default: the file's, or ./store)")
    m.add_argument("--subnet", type=ipv4_subnet, default=None, help="cluster subnet (default: the file's)")
    m.add_argument("--dry-run", action="store_true", help="list the cells and their commands; run nothing")
