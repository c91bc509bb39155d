"""``kraft-chaos scenario run FILE`` and ``kraft-chaos shrink STORE`` (harness/config/scenario.py,
harness/catalogue/shrink.py)."""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from harness.catalogue.detection import anomaly_kinds
from harness.catalogue.families import FAMILIES, differs, family, format_table, run_timeline, write_doc
from harness.catalogue.shrink import fault_units, shrink, units_to_steps
from harness.cli.args import add_lock_flag
from harness.cli.run import run_and_report
from harness.config.resolved import resolve
from harness.config.run import RunConfig, run_table, scenario_config
from harness.config.scenario import ScenarioError, builtin_scenarios, dumps, load
from harness.config.values import ipv4_subnet, positive_int, seed_value
from harness.exits import EXIT_BAD_INPUT
from harness.run.check import run_config
from harness.run.runner import Interrupted, run_test
from history import iter_history, store
from targets.errors import TargetError
from targets.registry import DEFAULT_TARGET, TARGETS


def scenario_path(name: str) -> Path:
    """A scenario FILE, or the name of a built-in one (``kraft-chaos scenario list``)."""
    path = Path(name)
    return path if path.exists() else builtin_scenarios().get(name, path)


def cmd_scenario(args: argparse.Namespace) -> int:
    """``kraft-chaos scenario run FILE|NAME``, ``scenario list`` and the families, ``scenario
    disk-loss-timeline`` and ``scenario isr-shrink-loss`` (:mod:`harness.catalogue.families`)."""
    if args.scenario_command == "list":
        return cmd_list()
    if args.scenario_command in FAMILIES:
        return cmd_timeline(args)
    try:
        path = scenario_path(args.file)
        doc = load(path)
        overrides = {k: v for k, v in (("store", args.store), ("keep_cluster", args.keep_cluster or None))
                     if v is not None}
        config = scenario_config(doc, path, overrides)
    except (ScenarioError, ValueError, TypeError) as e:
        print(f"kraft-chaos scenario: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except FileNotFoundError as e:
        print(f"kraft-chaos scenario: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        resolved = resolve(config)
    except TargetError as e:     # what the target refuses (e.g. a Kafka release)
        print(f"kraft-chaos: {config.db} error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ValueError as e:
        print(f"kraft-chaos: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return run_and_report(resolved, args.no_progress)


def cmd_list() -> int:
    """Print the built-in scenarios: name, first comment line, file."""
    for name, path in builtin_scenarios().items():
        first = next((ln.lstrip("# ").strip() for ln in path.read_text(encoding="utf-8").splitlines()
                      if ln.startswith("#")), "")
        print(f"{name:<24} {first}")
        print(f"{'':<24} {path}")
    return 0


def cmd_timeline(args: argparse.Namespace) -> int:
    """``kraft-chaos scenario FAMILY`` (disk-loss-timeline, isr-shrink-loss): the family's
    variants for the target, ``--runs`` times each; prints the table, writes
    ``scenario.json`` under ``STORE/scenarios/``. Exit 0 when every variant matched the
    family's table, 1 when one differed, 3 for bad input, 130 on Ctrl-C."""
    name = args.scenario_command
    fam = family(name)
    letters = args.variants or fam.target_variants[args.db]
    root = args.store or "store"
    print(f"{name}: --db {args.db}, variants {', '.join(letters)}, {args.runs} run(s) each, "
          f"seeds {args.seed}..{args.seed + args.runs - 1}", flush=True)
    try:
        doc = run_timeline(args.db, letters, args.runs, args.seed, root, args.subnet,
                           echo=lambda m: print(m, flush=True), family_name=name, lock=args.lock)
    except (ScenarioError, ValueError) as e:
        print(f"kraft-chaos scenario: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Interrupted:
        print("interrupted", file=sys.stderr)
        return 130
    out = Path(root) / "scenarios" / f"{name}-{args.db}-{store.timestamp()}"
    path = write_doc(doc, out)
    print(format_table(doc))
    for row in doc["variants"]:
        if differs(row):
            shown = ", ".join(f"seed {r['seed']}: {r['verdict']}, {r['lost_writes']} lost, "
                              f"anomalies {r.get('anomalies') or r.get('error')}" for r in row["runs"])
            print(f"variant {row['letter']} differs from {fam.source} (expected {row['expected']}): {shown}")
    print(f"scenario.json: {path}")
    return 1 if any(differs(r) for r in doc["variants"]) else 0


def cmd_shrink(args: argparse.Namespace) -> int:
    """``kraft-chaos shrink STORE``: the smallest fault schedule that still fails, as a scenario."""

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
    base = dataclasses.replace(base, store=args.store or str(Path(base.store)))
    attempts: list[dict] = []

    def fails(candidate, shift: float) -> bool:
        if len(attempts) >= args.max_runs:
            return False
        steps = units_to_steps(candidate, shift)
        trial = dataclasses.replace(base, nemesis=[], scenario=steps, scenario_file=None)
        try:
            res, rdir = run_test(resolve(trial), progress=False)
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


def _letters(text: str) -> str:
    """``--variants``: variant letters, each once, in the order given (which ones the family
    and target run is checked when the runs start)."""
    letters = "".join(c for c in text if c not in ", ")
    if not letters or any(not ("a" <= c <= "z") for c in letters) or len(set(letters)) != len(letters):
        raise argparse.ArgumentTypeError(f"--variants takes variant letters (a, b, ...), each once, "
                                         f"got {text!r}")
    return letters


def add_parsers(sub) -> None:
    """The ``scenario`` and ``shrink`` subcommands."""
    s = sub.add_parser("scenario", help="run a scenario file (harness/config/scenario.py), list the built-in "
                                        "ones, or run the disk-loss timeline")
    ssub = s.add_subparsers(dest="scenario_command", required=True)
    r = ssub.add_parser("run", help="run FILE's steps (or a built-in scenario's) against a fresh cluster")
    r.add_argument("file", metavar="FILE", help="a scenario file, or a name from `scenario list`")
    r.add_argument("--store", default=None, help="store root (default: the file's, else ./store)")
    r.add_argument("--keep-cluster", action="store_true")
    r.add_argument("--no-progress", action="store_true")
    ssub.add_parser("list", help="the built-in scenarios")
    helps = {"disk-loss-timeline": ("KIP-996's disk-loss table (T0..T6), each variant --runs times; "
                                    "writes scenario.json", "e.g. cd (default: abcde on kraft, acde on kafka)"),
             "isr-shrink-loss": ("Jepsen's 2013 Kafka loss: the ISR shrinks to the leader, which is "
                                 "then cut off and replaced uncleanly (queue workload); writes "
                                 "scenario.json", "a (min.insync.replicas=1) or b (=2); default ab")}
    for name, (text, variants_help) in helps.items():
        t = ssub.add_parser(name, help=text)
        t.add_argument("--db", choices=tuple(TARGETS), default=DEFAULT_TARGET)
        t.add_argument("--runs", type=positive_int("--runs"), default=5)
        t.add_argument("--variants", type=_letters, default=None, help=f"which variants, {variants_help}")
        t.add_argument("--seed", type=seed_value, default=1, help="first seed (default 1)")
        t.add_argument("--store", default=None, help="store root (default ./store)")
        t.add_argument("--subnet", type=ipv4_subnet, default=None)
        add_lock_flag(t)
    k = sub.add_parser("shrink", help="shrink a failing run's fault schedule to a smallest scenario "
                                      "that still fails")
    k.add_argument("store_dir", metavar="STORE", help="a failing run's folder (or a store root: its latest)")
    k.add_argument("--max-runs", type=positive_int("--max-runs"), default=40,
                   help="most runs to try (default 40)")
    k.add_argument("--out", default=None, help="scenario file to write (default RUN/shrunk.toml)")
    k.add_argument("--store", default=None, help="store root for the attempts (default: the run's)")
