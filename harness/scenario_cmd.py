"""``kraft-chaos scenario run FILE`` and ``kraft-chaos shrink STORE`` (harness/scenario.py,
harness/shrink.py)."""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from . import store

EXIT_BAD_INPUT = 3


def scenario_config(doc: dict, path: Path, overrides: dict | None = None):
    """The RunConfig that runs scenario ``doc`` (from :func:`harness.scenario.load`)."""
    from .runner import RunConfig
    run = {**doc["run"], **(overrides or {})}
    run.setdefault("seed", 0)
    if "unsafe" in run:
        from kraft import unsafe
        unsafe.parse(",".join(run["unsafe"]))       # ValueError naming a bad switch
    return RunConfig(**run, nemesis=[], scenario=doc["steps"], scenario_file=str(path))


def cmd_scenario(args: argparse.Namespace) -> int:
    """``kraft-chaos scenario run FILE``: run the scenario's steps against a fresh cluster."""
    from .cli import run_and_report
    from .scenario import ScenarioError, load
    try:
        doc = load(args.file)
        overrides = {k: v for k, v in (("store", args.store), ("keep_cluster", args.keep_cluster or None))
                     if v is not None}
        config = scenario_config(doc, Path(args.file), overrides)
    except (ScenarioError, ValueError, TypeError) as e:
        print(f"kraft-chaos scenario: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except FileNotFoundError as e:
        print(f"kraft-chaos scenario: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return run_and_report(config, args.no_progress)


def cmd_shrink(args: argparse.Namespace) -> int:
    """``kraft-chaos shrink STORE``: the smallest fault schedule that still fails, as a scenario."""
    from history import iter_history
    from .check_run import run_config
    from .detection import anomaly_kinds
    from .runner import RunConfig, Interrupted, run_test
    from .scenario import dumps, run_table
    from .shrink import fault_units, shrink, units_to_steps

    try:
        run_dir = store.resolve_run_dir(args.store_dir)
    except store.StoreError as e:
        print(f"kraft-chaos shrink: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    results = store.read_json(store.results_path(run_dir)) if store.results_path(run_dir).is_file() else None
    if not results or results.get("valid") is not False:
        print(f"kraft-chaos shrink: {run_dir} is not a failing run (no invalid results.json): "
              f"nothing to shrink", file=sys.stderr)
        return EXIT_BAD_INPUT
    kinds = set(anomaly_kinds(results))
    units = fault_units(iter_history(store.history_path(run_dir)))
    cfg = run_config(run_dir)
    fields = {f.name for f in dataclasses.fields(RunConfig)}
    base = RunConfig(**{k: v for k, v in cfg.items() if k in fields and k not in ("scenario", "scenario_file")})
    base.store = args.store or str(Path(base.store))
    attempts: list[dict] = []

    def fails(candidate, shift: float) -> bool:
        if len(attempts) >= args.max_runs:
            return False
        steps = units_to_steps(candidate, shift)
        trial = dataclasses.replace(base, nemesis=[], scenario=steps, scenario_file=None)
        try:
            res, rdir = run_test(trial, progress=False)
        except Interrupted:
            raise
        except Exception as e:  # noqa: BLE001 - a failed attempt does not reproduce
            print(f"  attempt {len(attempts) + 1}: harness error {e}", flush=True)
            attempts.append({"faults": len(candidate), "error": str(e)})
            return False
        got = set(anomaly_kinds(res))
        hit = res.get("valid") is False and bool(got & kinds)
        attempts.append({"faults": len(candidate), "shift_s": shift, "fails": hit, "kinds": sorted(got),
                         "store": str(rdir)})
        print(f"  attempt {len(attempts)}: {len(candidate)} fault(s), shift {shift:.1f} s -> "
              f"{'fails' if hit else 'passes'} {','.join(sorted(got))} ({rdir})", flush=True)
        return hit

    print(f"shrinking {run_dir}: {len(units)} fault(s), anomalies {', '.join(sorted(kinds))}; "
          f"at most {args.max_runs} runs", flush=True)
    try:
        kept, shift = shrink(units, fails)
    except Interrupted:
        print("interrupted")
        return 130
    steps = units_to_steps(kept, shift)
    out = Path(args.out) if args.out else run_dir / "shrunk.toml"
    comment = (f"kraft-chaos shrink {run_dir}\n{len(units)} fault(s) -> {len(kept)}; anomalies "
               f"{', '.join(sorted(kinds))}; {len(attempts)} run(s)\nrepeat with: kraft-chaos scenario run {out}")
    table = run_table(base)
    table.pop("store", None)
    out.write_text(dumps(table, steps, comment), encoding="utf-8")
    store.write_json(out.with_suffix(".attempts.json"), attempts)
    print(f"{len(units)} fault(s) -> {len(kept)} in {len(attempts)} run(s); scenario: {out}")
    print(f"repeat with: kraft-chaos scenario run {out}")
    return 0 if kept else 1


def add_parsers(sub) -> None:
    """The ``scenario`` and ``shrink`` subcommands."""
    from .cli import _positive_int
    s = sub.add_parser("scenario", help="run a scenario file (harness/scenario.py)")
    ssub = s.add_subparsers(dest="scenario_command", required=True)
    r = ssub.add_parser("run", help="run FILE's steps against a fresh cluster")
    r.add_argument("file", metavar="FILE")
    r.add_argument("--store", default=None, help="store root (default: the file's, else ./store)")
    r.add_argument("--keep-cluster", action="store_true")
    r.add_argument("--no-progress", action="store_true")
    k = sub.add_parser("shrink", help="shrink a failing run's fault schedule to a smallest scenario "
                                      "that still fails")
    k.add_argument("store_dir", metavar="STORE", help="a failing run's folder (or a store root: its latest)")
    k.add_argument("--max-runs", type=_positive_int("--max-runs"), default=40,
                   help="most runs to try (default 40)")
    k.add_argument("--out", default=None, help="scenario file to write (default RUN/shrunk.toml)")
    k.add_argument("--store", default=None, help="store root for the attempts (default: the run's)")
