"""``kraft-chaos bugs``: run every catalogued bug under its schedule, and the correct build too.

For each :class:`harness.catalogue.bugs.Bug` (or those ``--only`` names), N
runs (``--runs``, default 5) with seeds ``seed .. seed+N-1`` and the bug's
switches on; then the correct build, ``--correct-runs`` times (default N)
under every schedule those bugs used. A run counts as detecting the bug
when its verdict is invalid; the correct build's invalid runs are false
alarms. Prints a table (detected/runs, median time to the first anomalous
op, anomaly kinds), and writes ``bugs.json`` and ``bugs.png`` into the output
folder. Exit code 0 when every bug was detected in every run and there was
no false alarm, 1 otherwise, 3 for bad input, 130 when interrupted.
"""
from __future__ import annotations

import dataclasses
import logging
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

from harness.catalogue.bugs import CATALOGUE, Bug, bug_named
from harness.catalogue.detection import anomaly_kinds, first_anomaly_in_run
from harness.cli.args import ipv4_subnet, number, positive_int, seed_value
from harness.config.run import RunConfig
from harness.config.schedules import SCHEDULES, Schedule
from harness.run.runner import Interrupted, run_test
from history import store

log = logging.getLogger("kraft_chaos.bugs")

#: seconds a run may take in all (set-up, faults, final phase, checks); its time limit is cut to fit
DEFAULT_BUDGET_S = 150.0
#: seconds a run needs besides its time limit (cluster set-up, final reads, collection, checks)
OVERHEAD_S = 30.0


@dataclasses.dataclass
class RunOutcome:
    """One run: its ``valid`` verdict, anomaly ``kinds``, ``detect_s`` (time to the first
    anomalous op, s, or None), ``wall_s`` (s), ``store`` path, ``seed``, and ``error`` when
    the run itself failed (a harness error, not a verdict)."""

    seed: int
    valid: Any
    kinds: list[str]
    detect_s: float | None
    wall_s: float
    store: str | None
    error: str | None = None


def run_one(schedule: Schedule, switches: tuple[str, ...], seed: int, root: str, budget_s: float,
            subnet: str | None = None, run: Callable | None = None) -> RunOutcome:
    """One run of ``schedule`` with ``switches`` on; a harness failure is an outcome with
    ``error`` (the next run goes on). Raises ``harness.run.runner.Interrupted`` on Ctrl-C."""
    fields = schedule.run_config()
    fields["time_limit"] = max(5.0, min(fields["time_limit"], budget_s - OVERHEAD_S))
    cfg = RunConfig(seed=seed, unsafe=list(switches), store=root, **fields,
                    **({"subnet": subnet} if subnet else {}))
    t0 = time.monotonic()
    try:
        results, run_dir = (run or run_test)(cfg, progress=False)
    except Interrupted:
        raise
    except Exception as e:  # noqa: BLE001 - recorded; the benchmark goes on
        log.error("run %s seed %d failed: %s", ",".join(switches) or "correct", seed, e)
        return RunOutcome(seed, "unknown", [], None, time.monotonic() - t0, None, f"{type(e).__name__}: {e}")
    wall = time.monotonic() - t0
    return RunOutcome(seed, results.get("valid"), anomaly_kinds(results),
                      first_anomaly_in_run(results, run_dir), wall, str(run_dir))


def summarize(outcomes: list[RunOutcome]) -> dict:
    """``{"runs", "detected", "median_detect_s", "kinds": {kind: runs}, "max_wall_s", "errors"}``."""
    detected = [o for o in outcomes if o.valid is False]
    kinds: dict[str, int] = {}
    for o in detected:
        for k in o.kinds:
            kinds[k] = kinds.get(k, 0) + 1
    times = [o.detect_s for o in detected if o.detect_s is not None]
    return {"runs": len(outcomes), "detected": len(detected),
            "median_detect_s": round(statistics.median(times), 1) if times else None,
            "kinds": kinds, "max_wall_s": round(max((o.wall_s for o in outcomes), default=0.0), 1),
            "errors": sum(1 for o in outcomes if o.error)}


def run_bugs(bugs: list[Bug], runs: int, correct_runs: int, seed: int, root: str, budget_s: float,
             subnet: str | None = None, echo: Callable[[str], None] = print,
             run: Callable | None = None, schedule: str | None = None) -> dict:
    """Run the benchmark; returns the ``bugs.json`` document (see the module docstring).
    ``schedule`` (a :data:`SCHEDULES` name) replaces every bug's own."""
    if schedule is not None:
        bugs = [dataclasses.replace(b, schedule=schedule) for b in bugs]
    doc: dict = {"runs_per_bug": runs, "correct_runs_per_schedule": correct_runs, "seed": seed,
                 "budget_s": budget_s, "bugs": [], "correct": []}
    for bug in bugs:
        sched = SCHEDULES[bug.schedule]
        outs = []
        for i in range(runs):
            o = run_one(sched, bug.switches, seed + i, root, budget_s, subnet, run)
            echo(f"{bug.name} seed {o.seed}: {verdict_word(o)} {','.join(o.kinds)}"
                 f"{f' at {o.detect_s:.1f} s' if o.detect_s is not None else ''} ({o.wall_s:.0f} s) {o.store or o.error}")
            outs.append(o)
        doc["bugs"].append({"name": bug.name, "switches": list(bug.switches), "class": bug.klass,
                            "jira": bug.jira, "schedule": bug.schedule, "schedule_text": sched.describe(),
                            "note": bug.note, **summarize(outs),
                            "outcomes": [dataclasses.asdict(o) for o in outs]})
    for name in dict.fromkeys(b.schedule for b in bugs):
        sched = SCHEDULES[name]
        outs = []
        for i in range(correct_runs):
            o = run_one(sched, (), seed + i, root, budget_s, subnet, run)
            echo(f"correct build, {name} seed {o.seed}: {verdict_word(o)} {','.join(o.kinds)} "
                 f"({o.wall_s:.0f} s) {o.store or o.error}")
            outs.append(o)
        s = summarize(outs)
        doc["correct"].append({"schedule": name, "schedule_text": sched.describe(), **s,
                               "false_alarms": s["detected"],
                               "outcomes": [dataclasses.asdict(o) for o in outs]})
    return doc


def verdict_word(o: RunOutcome) -> str:
    """``INVALID``, ``VALID``, ``UNKNOWN`` or ``ERROR`` for a run."""
    if o.error:
        return "ERROR"
    return {True: "VALID", False: "INVALID"}.get(o.valid, "UNKNOWN")


def format_table(doc: dict) -> str:
    """The table of a ``bugs.json`` document."""
    lines = [f"{'bug':22} {'class':15} {'jira':12} {'detected':>9} {'median s':>9} {'max run s':>9}  kinds"]
    for b in doc["bugs"]:
        med = f"{b['median_detect_s']:.1f}" if b["median_detect_s"] is not None else "-"
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(b["kinds"].items(), key=lambda kv: -kv[1]))
        lines.append(f"{b['name']:22} {b['class']:15} {b['jira'] or '-':12} "
                     f"{b['detected']:>4}/{b['runs']:<4} {med:>9} {b['max_wall_s']:>9.0f}  {kinds or '-'}")
    for c in doc["correct"]:
        lines.append(f"correct build, {c['schedule']:8} false alarms {c['false_alarms']}/{c['runs']}"
                     f"{'  errors ' + str(c['errors']) if c['errors'] else ''}  ({c['schedule_text']})")
    return "\n".join(lines)


def write_chart(doc: dict, path: Path) -> None:
    """A bar chart of detected/runs per bug (PNG), false alarms in the title."""
    import matplotlib      # deferred: matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt      # deferred: matplotlib
    names = [b["name"] for b in doc["bugs"]]
    rates = [b["detected"] / b["runs"] if b["runs"] else 0.0 for b in doc["bugs"]]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    ax.bar(range(len(names)), rates, color=["#4C9F70" if r >= 0.8 else "#D1495B" for r in rates])
    for i, b in enumerate(doc["bugs"]):
        ax.text(i, rates[i] + 0.01, f"{b['detected']}/{b['runs']}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(names)), names, rotation=35, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("runs that caught it")
    fa = sum(c["false_alarms"] for c in doc["correct"])
    fr = sum(c["runs"] for c in doc["correct"])
    ax.set_title(f"kraft-chaos bugs: detection per bug ({doc['runs_per_bug']} runs each); "
                 f"false alarms {fa}/{fr}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def cmd_bugs(args) -> int:
    """``kraft-chaos bugs``: see the module docstring."""
    try:
        bugs = [bug_named(n) for n in args.only] if args.only else list(CATALOGUE)
    except ValueError as e:
        print(f"kraft-chaos bugs: {e}", file=sys.stderr)
        return 3
    out = Path(args.out) if args.out else Path(args.store) / "bugs" / store.timestamp()
    out.mkdir(parents=True, exist_ok=True)
    correct = 0 if args.no_correct else (args.correct_runs if args.correct_runs is not None else args.runs)
    try:
        doc = run_bugs(bugs, 0 if args.correct_only else args.runs, correct, args.seed, args.store,
                       args.budget, args.subnet, schedule=args.schedule)
    except Interrupted:
        print("interrupted", flush=True)
        return 130
    if args.correct_only:
        doc["bugs"] = []
    store.write_json(out / "bugs.json", doc)
    write_chart(doc, out / "bugs.png")
    print(format_table(doc))
    print(f"bugs.json and bugs.png in {out}")
    missed = any(b["detected"] < b["runs"] for b in doc["bugs"])
    false_alarms = any(c["false_alarms"] for c in doc["correct"])
    return 1 if missed or false_alarms else 0


def add_parser(sub) -> None:
    """The ``bugs`` subcommand's arguments."""
    b = sub.add_parser("bugs", help="run every catalogued --unsafe bug under its schedule, N seeds each, "
                                    "and the correct build; print detection rates")
    b.add_argument("--runs", type=positive_int("--runs"), default=5, help="runs per bug (default 5)")
    b.add_argument("--correct-runs", type=positive_int("--correct-runs", 0), default=None,
                   help="correct-build runs per schedule (default: --runs)")
    b.add_argument("--only", type=lambda s: [x.strip() for x in s.split(",") if x.strip()], default=None,
                   help="comma-separated bug names (default: the whole catalogue)")
    b.add_argument("--no-correct", action="store_true", help="skip the correct-build runs")
    b.add_argument("--correct-only", action="store_true", help="only the correct-build runs")
    b.add_argument("--budget", type=number("--budget"), default=DEFAULT_BUDGET_S,
                   help=f"seconds per run in all; time limits are cut to fit (default {DEFAULT_BUDGET_S:g})")
    b.add_argument("--seed", type=seed_value, default=1, help="first seed (default 1)")
    b.add_argument("--store", default="store", help="store root for the runs (default ./store)")
    b.add_argument("--out", default=None, help="where bugs.json and bugs.png go (default STORE/bugs/<time>)")
    b.add_argument("--subnet", type=ipv4_subnet, default=None, help="cluster subnet (default: run's default)")
    b.add_argument("--schedule", choices=sorted(SCHEDULES), default=None,
                   help="run every bug under this schedule instead of its own (e.g. default)")
