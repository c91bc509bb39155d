"""``make bench``, analyze part: ``kraft-chaos analyze`` on a store of N runs beside
``kraft-chaos check`` run on each of them in turn, all measured in this one process.

The store (default N = 200, ``--runs N`` or ``BENCH_ANALYZE_RUNS``) is made
in a temporary folder by replicating the real runs found under ``store/``
(each completed run with a history, test.json and results.json; bench,
synthetic and bug-catalogue runs left out): copy i is a hard link of the
template's history and node data (a copy where links fail) and a copy of
its test.json, named ``<test>/<timestamp>`` with timestamps spread over
days. With no real run in the store it falls back to synthetic runs
(harness/analysis/synth.py, 16k ops each, no node data). The first line printed
says which.

Every figure is the wall time of a whole command, as a user runs it
(process start, Spark start-up and writing the outputs included):

- the fixed cost: ``analyze`` of a one-run store with no cache (Spark's
  start-up and every job on almost no data), then the same store again
  with its cache (no run changed: Spark never starts);
- the full analysis of the N runs (no cache yet; it writes one);
- the analysis after one new run is added (the cache answers for the N
  others);
- ``check RUN --out DIR`` on each of the N runs in turn, one process each;

then the ratios of the check total to each analysis, and whether both
give every run the same verdict. Nothing is asserted; the machine's load
is printed, since other work on it shows in every figure.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.analysis.synth import SynthOptions, synth_run
from harness.run.code_version import PROJECT_ROOT

CLI = [sys.executable, "-m", "harness"]
#: Test folders under store/ that hold no real runs.
SKIP = ("bench", "bugs", "latest", "analysis", "synth")
DEFAULT_RUNS = 200


def real_runs(root: Path) -> list[Path]:
    """Completed real runs under ``root``: history.jsonl, test.json and results.json present,
    not synthetic, not under a bench/bugs/latest/analysis/synth folder; sorted."""
    out = []
    for h in sorted(root.glob("*/*/history.jsonl")):
        d = h.parent
        if any(d.relative_to(root).parts[0].startswith(s) for s in SKIP):
            continue
        if not ((d / "test.json").is_file() and (d / "results.json").is_file()):
            continue
        try:
            cfg = json.loads((d / "test.json").read_text()).get("config") or {}
        except (OSError, ValueError):
            continue
        if not cfg.get("synthetic"):
            out.append(d)
    return out


def _link_or_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def stamp(i: int) -> str:
    """The timestamp folder of copy ``i``: 20 runs a day from 2026-01-01, a minute apart."""
    day, k = divmod(i, 20)
    return f"2026{1 + day // 28:02d}{1 + day % 28:02d}T{k // 60:02d}{k % 60:02d}00.000Z"


def replicate(templates: list[Path], dest: Path, n: int, start: int = 0) -> list[Path]:
    """Copies ``start .. start+n-1`` of ``templates`` (cyclically) into the store ``dest``:
    history.jsonl and nodes/ hard-linked (copied where links fail), test.json copied.
    Returns the new run folders. Raises ValueError when there is no template."""
    if not templates:
        raise ValueError("no template runs")
    out = []
    for i in range(start, start + n):
        src = templates[i % len(templates)]
        run = dest / src.parent.name / stamp(i)
        run.mkdir(parents=True)
        _link_or_copy(src / "history.jsonl", run / "history.jsonl")
        shutil.copy2(src / "test.json", run / "test.json")
        nodes = src / "nodes"
        if nodes.is_dir():
            for f in nodes.rglob("*"):
                if f.is_file():
                    _link_or_copy(f, run / "nodes" / f.relative_to(nodes))
        out.append(run)
    return out


def synth_runs(dest: Path, n: int, start: int = 0, ops: int = 16_000) -> list[Path]:
    """``n`` synthetic runs of ``ops`` ops (seeds ``start..``) in the store ``dest``."""

    return [synth_run(SynthOptions(ops=ops, seed=i, date=dt.date(2026, 1, 1) + dt.timedelta(days=i // 20)), dest)
            for i in range(start, start + n)]


def make_store(dest: Path, n: int, source: Path) -> tuple[list[Path], str, object]:
    """A store of ``n`` runs at ``dest``; returns (its runs, a sentence saying how it was
    made, a function adding one more run and returning it)."""
    templates = real_runs(source)
    if templates:
        runs = replicate(templates, dest, n)
        ops = sum(sum(1 for _ in open(t / "history.jsonl", "rb")) for t in templates)
        how = (f"{n} runs replicated (hard links) from the {len(templates)} real runs in {source} "
               f"({ops / len(templates):,.0f} ops a run on average)")
        return runs, how, lambda: replicate(templates, dest, 1, start=n)[0]
    runs = synth_runs(dest, n)
    return runs, f"{n} synthetic runs (harness/analysis/synth.py, 16,000 ops each; no real run in {source})", \
        lambda: synth_runs(dest, 1, start=n)[0]


def timed(cmd: list[str]) -> tuple[float, int]:
    """Run ``cmd`` (output discarded); returns (wall seconds, exit code)."""
    t = time.monotonic()
    rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    return time.monotonic() - t, rc


def analyze(store: Path, out: Path, master: str) -> tuple[float, int, dict]:
    """``kraft-chaos analyze STORE --out OUT``: (wall s, exit code, analysis.json)."""
    wall, rc = timed(CLI + ["analyze", str(store), "--master", master, "--out", str(out)])
    try:
        rec = json.loads((out / "analysis.json").read_text())
    except (OSError, ValueError):
        rec = {}
    return wall, rc, rec


def _load() -> str:
    try:
        return " / ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=int(os.environ.get("BENCH_ANALYZE_RUNS", DEFAULT_RUNS)),
                   help=f"runs in the store (default {DEFAULT_RUNS}, or BENCH_ANALYZE_RUNS)")
    p.add_argument("--master", default="local[*]")
    p.add_argument("--source", default=str(PROJECT_ROOT / "store"), help="where the real runs are (default store/)")
    p.add_argument("--keep", action="store_true", help="keep the temporary store and outputs (their path is printed)")
    args = p.parse_args(argv)
    if args.runs < 1:
        p.error("--runs must be >= 1")

    work = Path(tempfile.mkdtemp(prefix="kraft-chaos-bench-analyze-"))
    try:
        return _bench(args, work)
    finally:
        if args.keep:
            print(f"kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def _bench(args: argparse.Namespace, work: Path) -> int:
    cores = os.cpu_count()
    print(f"analyze vs check on a store of {args.runs} runs ({cores} cores; load average {_load()} at the start)")
    t = time.monotonic()
    store = work / "store"
    runs, how, add_one = make_store(store, args.runs, Path(args.source))
    print(f"  store: {how}, made in {time.monotonic() - t:.1f} s")

    one = work / "one"
    replicate([runs[0]], one, 1)
    cold, rc1, _ = analyze(one, work / "out-one-cold", args.master)
    warm, rc2, _ = analyze(one, work / "out-one-warm", args.master)
    print(f"  fixed cost: analyze of a 1-run store {cold:.1f} s (exit {rc1}); again, from its cache "
          f"{warm:.1f} s (exit {rc2}; Spark not started)")

    full, rc, rec = analyze(store, work / "out-full", args.master)
    ops = sum(r.get("stats", {}).get("ops", 0) for r in rec.get("runs", []))
    phases = ", ".join(f"{k} {v:.1f} s" for k, v in (rec.get("seconds") or {}).items())
    print(f"  full analysis, {args.runs} runs, {ops:,} ops: {full:.1f} s (exit {rc}; {phases})")

    add_one()
    inc, rc, rec2 = analyze(store, work / "out-inc", args.master)
    c = rec2.get("cache") or {}
    print(f"  after one new run: {inc:.1f} s (exit {rc}; {c.get('hit', '?')} run(s) from the cache, "
          f"{c.get('analysed', '?')} read)")

    t = time.monotonic()
    checks = []
    for i, run in enumerate(runs):
        wall, code = timed(CLI + ["check", str(run), "--out", str(work / "check" / str(i))])
        checks.append(wall)
    total = time.monotonic() - t
    print(f"  check on each run in turn: {total:.1f} s ({total / len(runs):.2f} s a run, "
          f"min {min(checks):.2f} s, max {max(checks):.2f} s)")
    print(f"  ratio check-in-turn / full analysis: {total / full:.2f}x; "
          f"check-in-turn / analysis after one new run: {total / inc:.1f}x")
    _compare(rec, runs, work / "check", store)
    print(f"  load average at the end {_load()} (other work on this machine shows in every figure)")
    return 0


def _compare(rec: dict, runs: list[Path], check_dir: Path, store: Path) -> None:
    """Print how many runs analyze and check give the same verdict."""
    by_name = {r["name"]: r["verdict"] for r in rec.get("runs", [])}
    word = {True: "valid", False: "invalid"}
    same, differ = 0, []
    for i, run in enumerate(runs):
        try:
            res = json.loads((check_dir / str(i) / "results.json").read_text())
            got = word.get(res.get("valid"), "unknown")
        except (OSError, ValueError):
            got = "no results"
        mine = by_name.get(str(run.relative_to(store)))
        if mine == got:
            same += 1
        else:
            differ.append(f"{run.relative_to(store)}: analyze {mine}, check {got}")
    print(f"  verdicts: analyze and check agree on {same} of {len(runs)} runs"
          + (f"; differ on {', '.join(differ[:5])}" + (" ..." if len(differ) > 5 else "") if differ else ""))


if __name__ == "__main__":
    sys.exit(main())
