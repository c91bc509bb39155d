"""``kraft-chaos analyze``, ``export`` and ``synth``: the Spark analysis of many runs and
large histories (checkers/spark), and synthetic histories (harness/analysis/synth.py)."""
from __future__ import annotations

import argparse
import contextlib
import csv
import datetime as _dt
import logging
import sys
import time
from pathlib import Path
from typing import Iterator

from checkers.spark import verdict
from checkers.spark.runs import find_runs
from checkers.spark.session import SparkSetupError, check_master, spark_session
from harness.analysis.synth import SynthOptions, read_sidecar, synth_run
from harness.config.values import number, positive_int, seed_value
from harness.exits import EXIT_BAD_INPUT, EXIT_HARNESS, EXIT_INVALID, EXIT_UNKNOWN, EXIT_VALID
from harness.run.check import run_target
from history import store

log = logging.getLogger("kraft_chaos.analyze")

#: Exit code by the worst verdict over the analysed runs.
VERDICT_EXIT = {"valid": EXIT_VALID, "invalid": EXIT_INVALID, "unknown": EXIT_UNKNOWN}


def _count(name: str):
    return positive_int(name, minimum=0)


def _date(text: str) -> _dt.date:
    try:
        return _dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--date must be YYYY-MM-DD, got {text!r}") from None


def _master(text: str) -> str:
    try:
        return check_master(text)
    except SparkSetupError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_parsers(sub) -> None:
    """Add the ``analyze``, ``export`` and ``synth`` subcommands to ``sub``."""
    a = sub.add_parser("analyze", help="check every run under a store root (or a glob of history "
                                        "files) with Spark; write a summary, anomalies and trend plots")
    a.add_argument("target", metavar="STORE_ROOT", help="a store root, a run directory, or a quoted glob "
                                                         "of history files")
    a.add_argument("--master", type=_master, default="local[*]",
                   help="Spark master: local[*] (default), local[N], spark://HOST:PORT or yarn")
    a.add_argument("--out", default=None, help="output folder (default STORE_ROOT/analysis/<timestamp>)")
    a.add_argument("--lin-timeout", type=number("--lin-timeout"), default=60.0,
                   help="seconds the linearizability search may spend on one (run, key) (default 60)")
    a.add_argument("--cache", default=None,
                   help="the per-run results cache (default STORE_ROOT/analysis/cache): runs whose "
                        "history is unchanged since are not read again")
    a.add_argument("--no-cache", action="store_true", help="analyse every run; neither read nor write the cache")

    e = sub.add_parser("export", help="convert the histories of a store to Parquet")
    e.add_argument("--parquet", action="store_true", required=True, help="write Parquet (the only format)")
    e.add_argument("target", metavar="STORE_ROOT", help="a store root, a run directory, or a quoted glob")
    e.add_argument("--out", default=None, help="output folder (default STORE_ROOT/parquet)")
    e.add_argument("--master", type=_master, default="local[*]", help="Spark master (default local[*])")

    s = sub.add_parser("synth", help="write a synthetic append run with known, injected anomalies")
    s.add_argument("--ops", type=_count("--ops"), required=True, help="history ops (lines), >= 100")
    s.add_argument("--seed", type=seed_value, required=True, help="random seed")
    s.add_argument("--lost", type=_count("--lost"), default=0, help="acknowledged appends lost from the log")
    s.add_argument("--duplicates", type=_count("--duplicates"), default=0, help="values written twice")
    s.add_argument("--inconsistent", type=_count("--inconsistent"), default=0,
                   help="offsets at which a read shows another record")
    s.add_argument("--stale-reads", type=_count("--stale-reads"), default=0,
                   help="reads that go back behind an acknowledged prefix")
    s.add_argument("--concurrency", type=positive_int("--concurrency"), default=10, help="client processes")
    s.add_argument("--page-size", type=positive_int("--page-size"), default=50_000,
                   help="records per page of the final read (default 50000)")
    s.add_argument("--date", type=_date, default=None, help="the day the run is stamped with (UTC)")
    s.add_argument("--store", default="store", help="store root (default ./store)")


class _Exit(Exception):
    """Ends a command early with exit code ``code`` (the message is already printed)."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


@contextlib.contextmanager
def _spark_job(command: str, args: argparse.Namespace, sub: str) -> Iterator[tuple[list, Path, object]]:
    """The runs of ``args.target``, the output folder and a SparkSession on ``args.master``.

    Raises :class:`_Exit` (3) when no run matches, (5) when Spark cannot
    start; each after printing why (see :func:`_session`).
    """

    try:
        runs = find_runs(args.target, run_target)
    except FileNotFoundError as e:
        print(f"kraft-chaos {command}: {e}", file=sys.stderr)
        raise _Exit(EXIT_BAD_INPUT) from None
    with _session(args.master, runs) as spark:
        yield runs, _out_dir(args.target, args.out, sub), spark


def _out_dir(target: str, out: str | None, sub: str) -> Path:
    if out:
        return Path(out)
    base = Path(target) if Path(target).is_dir() else store.DEFAULT_ROOT
    return base / sub / store.timestamp()


def cmd_analyze(args: argparse.Namespace) -> int:
    """Run the analysis; print one line per non-valid run and the totals; exit with the
    worst verdict (0 valid, 1 invalid, 2 unknown), or 3 when no run is invalid but some
    run's history is not a well-formed history (bad input, as ``check`` exits for it;
    also for no runs or bad options), 5 when Spark cannot start.

    Runs whose entry in the cache (checkers/spark/cache.py) is current are not read
    again; Spark starts only when some run must be (re)analysed.
    """

    started = time.monotonic()      # the figures count Spark's start-up too
    try:
        runs = find_runs(args.target, run_target)
    except FileNotFoundError as e:
        print(f"kraft-chaos analyze: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        return _analyze(args, runs, _out_dir(args.target, args.out, "analysis"), started)
    except _Exit as e:
        return e.code


def cache_dir(target: str, cache: str | None) -> Path:
    """Where ``analyze`` keeps its per-run cache: ``cache`` if given, else
    ``<STORE_ROOT>/analysis/cache``. STORE_ROOT: the target folder; for one run's folder
    (``<root>/<test>/<timestamp>``) its ``<root>``, so the run folder is only read;
    ./store for a glob."""
    if cache:
        return Path(cache)
    p = Path(target)
    if p.is_dir() and (p / store.HISTORY).is_file():
        base = p.resolve().parent.parent
    else:
        base = p if p.is_dir() else store.DEFAULT_ROOT
    return base / "analysis" / "cache"


def _analyze(args: argparse.Namespace, runs: list, out: Path, started: float) -> int:
    """The body of :func:`cmd_analyze` once the runs are found (``started``: monotonic s at
    the command's start)."""
    from checkers.spark.results import assemble      # deferred: PySpark and pyarrow
    from checkers.spark.summary import ANOMALY_COLUMNS, anomaly_types_table, runs_table, write_tables      # deferred: PySpark and pyarrow
    from harness.reports.trends import write_trends      # deferred: matplotlib

    cache = None
    if not args.no_cache:
        from checkers.spark.cache import RunCache      # deferred: PySpark and pyarrow
        cache = RunCache(cache_dir(args.target, args.cache), args.lin_timeout)
    entries = {r.run_id: cache.load(r) for r in runs} if cache else {}
    todo = [r for r in runs if entries.get(r.run_id) is None]
    print(f"analyzing {len(runs)} run(s) on {args.master}"
          + (f"; {len(runs) - len(todo)} from the cache ({cache.root})" if cache else ""))
    spark_up, analysis = 0.0, None
    if todo:
        with _session(args.master, runs=todo) as spark:
            spark_up = time.monotonic() - started
            from checkers.spark import analyze as A      # deferred: PySpark and pyarrow
            analysis = A.analyze(spark, todo, lin_timeout_s=args.lin_timeout)
    result = assemble(runs, entries, analysis, cache)
    out.mkdir(parents=True, exist_ok=True)
    result.write_anomalies(out)
    table = runs_table(result.summary_rows())
    types = anomaly_types_table(table)
    write_tables(table, types, out)
    malformed = [m for r in result.runs for m in r["malformed"]]
    if malformed:
        with open(out / "malformed.csv", "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=["file", "line", "reason"])
            w.writeheader()
            w.writerows(malformed)
    try:
        write_trends(table, types, out, ANOMALY_COLUMNS, malformed)
    except Exception as e:   # a plot must never cost the verdicts
        log.exception("trend plots failed")
        print(f"warning: trend plots failed: {e}", file=sys.stderr)
    total = time.monotonic() - started
    record = result.analysis_json()
    record["seconds"].update({"spark_start": spark_up, "total": total})
    record["master"] = args.master
    record["cache"] = ({"dir": str(cache.root), **cache.stats, "analysed": len(todo)} if cache
                       else {"analysed": len(todo)})
    store.write_json(out / "analysis.json", record)
    for m in malformed[:20]:
        print(f"malformed: {m['file']}:{m['line']}: {m['reason']}")
    if len(malformed) > 20:
        print(f"malformed: ... {len(malformed) - 20} more in {out / 'malformed.csv'}")
    verdicts = [r["verdict"] for r in result.runs]
    for r in result.runs:
        if r["verdict"] != "valid":
            counts = ", ".join(f"{k} {v}" for k, v in r["anomalies"].items() if v)
            print(f"{r['verdict']:8} {r['name']}" + (f"  [{counts}]" if counts else "")
                  + (f"  ({r['error']})" if r["error"] else ""))
    ops = int(table["ops"].sum()) if len(table) else 0
    if cache:
        st = cache.stats
        print(f"cache: {st['hit']} run(s) reused, {len(todo)} analysed ({st['missing']} new, {st['stale']} "
              f"changed, {st['corrupt']} unusable entries rebuilt)")
    print(f"{len(runs)} run(s): {verdicts.count('valid')} valid, {verdicts.count('invalid')} invalid, "
          f"{verdicts.count('unknown')} unknown; {ops:,} ops in {total:.1f} s "
          f"({ops / total:,.0f} ops/s, Spark start {spark_up:.1f} s)")
    print(f"summary: {out / 'runs.csv'}  plots: {out / 'index.html'}")
    worst = verdict.worst(verdicts)
    bad = result.bad_input()
    if bad and worst != "invalid":
        print(f"bad input: {len(bad)} run(s) whose history is not a well-formed history, first {bad[0]}",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    return VERDICT_EXIT[worst]


@contextlib.contextmanager
def _session(master: str, runs: list | None = None) -> Iterator[object]:
    """A SparkSession on ``master`` sized to ``runs``' histories (their bytes); raises
    :class:`_Exit` (5) when Spark cannot start. Stops it on the way out unless this
    process had one already (the tests' shared session)."""
    from pyspark.sql import SparkSession      # deferred: PySpark

    ours = SparkSession.getActiveSession() is None
    size = None
    if runs is not None:
        size = sum(r.history.stat().st_size for r in runs if r.history.is_file())
    try:
        spark = spark_session(master, input_bytes=size)
    except SparkSetupError as e:
        print(f"kraft-chaos: {e}", file=sys.stderr)
        raise _Exit(EXIT_HARNESS) from None
    try:
        yield spark
    finally:
        if ours:
            spark.stop()


def cmd_export(args: argparse.Namespace) -> int:
    """Write every run's history as Parquet (checkers/spark/export.py)."""
    from checkers.spark.export import export_parquet      # deferred: PySpark and pyarrow

    try:
        with _spark_job("export", args, "parquet") as (runs, out, spark):
            res = export_parquet(spark, runs, out)
    except _Exit as e:
        return e.code
    print(f"exported {res['ops']:,} ops of {len(runs)} run(s) to {out}")
    if res["malformed"]:
        print(f"{res['malformed']} malformed line(s) kept with their raw text in column _corrupt")
    return 0


def cmd_synth(args: argparse.Namespace) -> int:
    """Write one synthetic run; print its directory and the anomalies it holds."""

    opts = SynthOptions(ops=args.ops, seed=args.seed, lost=args.lost, duplicates=args.duplicates,
                        inconsistent=args.inconsistent, stale_reads=args.stale_reads,
                        concurrency=args.concurrency, page_size=args.page_size, date=args.date)
    try:
        run_dir = synth_run(opts, args.store)
    except ValueError as e:
        print(f"kraft-chaos synth: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    side = read_sidecar(run_dir)
    counts = ", ".join(f"{k} {v}" for k, v in side["counts"].items())
    print(f"wrote {side['ops']:,} ops to {run_dir}")
    print(f"injected: {counts}  (listed in {run_dir / 'anomalies.json'})")
    return 0
