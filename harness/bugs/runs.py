"""``kraft-chaos bugs``: run every catalogued bug under its schedule, and its correct or fixed form too.

Two catalogues, by ``--db``:

- ``kraft`` (default): each :class:`harness.catalogue.bugs.Bug` (or those ``--only`` names),
  N runs (``--runs``, default 5) with seeds ``seed .. seed+N-1`` and its ``--unsafe``
  switches on; then the correct build, ``--correct-runs`` times (default N) under every
  schedule those bugs used. A run detects the bug when its verdict is invalid; the correct
  build's invalid runs are false alarms.
- ``kafka``: each :class:`harness.catalogue.kafka_bugs.KafkaBug` (``--only`` takes JIRA ids),
  N runs on its affected release and ``--correct-runs`` (default N) on its fixed release,
  under its schedule. A run detects the bug when it shows one of the entry's declared
  anomaly kinds (:mod:`harness.catalogue.scoring`); the fixed release's runs that show one
  are false alarms. Every other anomaly is reported beside them.

Prints a table (detected/runs, median time to the first anomalous op, anomaly kinds), and
writes ``bugs.json`` and ``bugs.png`` into the output folder (``--db kafka``: also ``bugs.md``, the
table as Markdown, the README's form). ``--lock FILE`` holds an
exclusive ``flock`` on FILE during each run, not between them. Exit code 0 when every bug
was detected in every run and there was no false alarm, 1 otherwise, 3 for bad input, 130
when interrupted.
"""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Callable

from harness.catalogue.bugs import CATALOGUE, Bug, bug_named
from harness.catalogue.kafka_bugs import KAFKA_CATALOGUE, KafkaBug, kafka_bug_named
from harness.catalogue.scoring import (OVERHEAD_S, outcome_line, outcomes_json, run_one,  # noqa: F401
                                        summarize)
from harness.config.values import ipv4_subnet, number, positive_int, seed_value
from harness.config.schedules import SCHEDULES
from harness.run.runner import Interrupted
from history import store
from targets.registry import target_spec

#: each target's bug catalogue: ``db -> (entries, name -> entry)`` (a name that is none
#: raises ``ValueError``); a versioned target's (``TargetSpec.versioned``) pairs an affected
#: with a fixed release (:func:`run_kafka_bugs`), the others run switches (:func:`run_bugs`)
CATALOGUES: dict[str, tuple[tuple, Callable]] = {
    "kraft": (tuple(CATALOGUE), bug_named),
    "kafka": (tuple(KAFKA_CATALOGUE), kafka_bug_named),
}


def _paired(db: str | None) -> bool:
    """True when ``db``'s catalogue pairs an affected with a fixed release."""
    return target_spec(db or "kraft").versioned


#: seconds a run may take in all (set-up, faults, final phase, checks); its time limit is cut to fit
DEFAULT_BUDGET_S = 150.0


def run_bugs(bugs: list[Bug], runs: int, correct_runs: int, seed: int, root: str, budget_s: float,
             subnet: str | None = None, echo: Callable[[str], None] = print,
             run: Callable | None = None, schedule: str | None = None, lock: str | None = None) -> dict:
    """Run our quorum's catalogue; returns the ``bugs.json`` document (see the module
    docstring). ``schedule`` (a :data:`SCHEDULES` name) replaces every bug's own."""
    if schedule is not None:
        bugs = [dataclasses.replace(b, schedule=schedule) for b in bugs]
    doc: dict = {"db": "kraft", "runs_per_bug": runs, "correct_runs_per_schedule": correct_runs, "seed": seed,
                 "budget_s": budget_s, "bugs": [], "correct": []}

    def one(fields: dict, i: int, label: str):
        o = run_one(fields, seed + i, root, budget_s=budget_s, subnet=subnet, lock=lock, run=run, label=label)
        echo(outcome_line(label, o))
        return o

    for bug in bugs:
        sched = SCHEDULES[bug.schedule]
        fields = {**sched.run_config(), "unsafe": list(bug.switches)}
        outs = [one(fields, i, bug.name) for i in range(runs)]
        doc["bugs"].append({"name": bug.name, "switches": list(bug.switches), "class": bug.klass,
                            "jira": bug.jira, "schedule": bug.schedule, "schedule_text": sched.describe(),
                            "note": bug.note, **summarize(outs), "outcomes": outcomes_json(outs)})
    for name in dict.fromkeys(b.schedule for b in bugs):
        sched = SCHEDULES[name]
        outs = [one(sched.run_config(), i, f"correct build, {name}") for i in range(correct_runs)]
        s = summarize(outs)
        doc["correct"].append({"schedule": name, "schedule_text": sched.describe(), **s,
                               "false_alarms": s["detected"], "outcomes": outcomes_json(outs)})
    return doc


def run_kafka_bugs(bugs: list[KafkaBug], runs: int, fixed_runs: int, seed: int, root: str,
                   budget_s: float, subnet: str | None = None, echo: Callable[[str], None] = print,
                   run: Callable | None = None, lock: str | None = None) -> dict:
    """Run Kafka's catalogue: each entry ``runs`` times on its affected release and
    ``fixed_runs`` times on its fixed release, scored on its declared kinds; returns the
    ``bugs.json`` document (``{"db": "kafka", "bugs": [{..., "affected": summary,
    "fixed": summary with "false_alarms"}]}``)."""
    doc: dict = {"db": "kafka", "runs_per_bug": runs, "fixed_runs_per_bug": fixed_runs, "seed": seed,
                 "budget_s": budget_s, "bugs": []}
    for bug in bugs:
        sched = SCHEDULES[bug.schedule]
        entry = {"name": bug.jira, "jira": bug.jira, "class": bug.klass, "cause": bug.cause,
                 "introduced": bug.introduced, "fixed_in": list(bug.fixed_in), "schedule": bug.schedule,
                 "schedule_text": sched.describe(), "kinds_declared": list(bug.kinds), "note": bug.note,
                 "command": f"kraft-chaos bugs --db kafka --only {bug.jira} --runs {runs} "
                            f"--correct-runs {fixed_runs} --seed {seed}"}
        for role, side, n in (("affected", bug.affected, runs), ("fixed", bug.fixed, fixed_runs)):
            fields = bug.run_fields(side)
            label = f"{bug.jira} on {side.label()} ({role})"
            outs = []
            for i in range(n):
                o = run_one(fields, seed + i, root, kinds=bug.kinds, budget_s=budget_s, subnet=subnet,
                            lock=lock, run=run, label=label)
                echo(outcome_line(label, o))
                outs.append(o)
            s = summarize(outs)
            entry[role] = {"version": side.version, "kraft_version": side.kraft_version, **s,
                           **({"false_alarms": s["detected"]} if role == "fixed" else {}),
                           "outcomes": outcomes_json(outs)}
        doc["bugs"].append(entry)
    return doc


def _kinds_text(kinds: dict[str, int]) -> str:
    return ", ".join(f"{k} {n}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1])) or "-"


def _median(x) -> str:
    return f"{x:.1f}" if x is not None else "-"


def format_table(doc: dict) -> str:
    """The table of a ``bugs.json`` document (either catalogue's)."""
    if _paired(doc.get("db")):
        return format_kafka_table(doc)
    lines = [f"{'bug':22} {'class':15} {'jira':12} {'detected':>9} {'median s':>9} {'max run s':>9}  kinds"]
    for b in doc["bugs"]:
        lines.append(f"{b['name']:22} {b['class']:15} {b['jira'] or '-':12} "
                     f"{b['detected']:>4}/{b['runs']:<4} {_median(b['median_detect_s']):>9} "
                     f"{b['max_wall_s']:>9.0f}  {_kinds_text(b['kinds'])}")
    for c in doc["correct"]:
        lines.append(f"correct build, {c['schedule']:8} false alarms {c['false_alarms']}/{c['runs']}"
                     f"{'  errors ' + str(c['errors']) if c['errors'] else ''}  ({c['schedule_text']})")
    return "\n".join(lines)


def format_kafka_table(doc: dict) -> str:
    """The Kafka catalogue's table: per entry, its affected and its fixed release's runs
    (detected/runs on the declared kinds, median time to detect, every anomaly kind seen)."""
    lines = [f"{'jira':12} {'class':32} {'schedule':25} {'declared':20} {'release':10} {'detected':>9} "
             f"{'median s':>9}  all anomalies (runs)"]
    for b in doc["bugs"]:
        for role in ("affected", "fixed"):
            r = b[role]
            label = r["version"] + (f" kv{r['kraft_version']}" if r["kraft_version"] is not None else "")
            errs = f"  errors {r['errors']}" if r["errors"] else ""
            first = role == "affected"
            lines.append(f"{b['jira'] if first else '':12} {b['class'] if first else '':32} "
                         f"{b['schedule'] if first else '':25} "
                         f"{', '.join(b['kinds_declared']) if first else '':20} {label:10} "
                         f"{r['detected']:>4}/{r['runs']:<4} {_median(r['median_detect_s']):>9}  "
                         f"{_kinds_text(r['all_kinds'])}{errs}"
                         f"{'  <- false alarms' if role == 'fixed' and r['detected'] else ''}")
    fa = sum(b["fixed"]["false_alarms"] for b in doc["bugs"])
    fr = sum(b["fixed"]["runs"] for b in doc["bugs"])
    lines.append(f"false alarms (fixed releases showing a declared kind): {fa}/{fr}")
    return "\n".join(lines)


#: the Markdown table of the Kafka catalogue (the README's): its header, then :func:`kafka_markdown_rows`
KAFKA_MARKDOWN_HEADER = ("| JIRA | class | cause | affected | fixed | schedule | declared kinds | detected (affected) "
                         "| median s to detect | false alarms (fixed) | all anomalies, affected / fixed (runs) | command |\n"
                         "|---|---|---|---|---|---|---|---|---|---|---|---|")


def kafka_markdown_rows(doc: dict) -> list[str]:
    """One Markdown row per entry of a Kafka ``bugs.json`` document (:data:`KAFKA_MARKDOWN_HEADER`)."""
    rows = []
    for b in doc["bugs"]:
        a, f = b["affected"], b["fixed"]

        def side(r: dict) -> str:
            return r["version"] + (f" (kraft.version {r['kraft_version']})" if r["kraft_version"] is not None else "")
        rows.append(f"| {b['jira']} | {b['class']} | {b.get('cause', '')} | {side(a)} | {side(f)} | `{b['schedule']}` "
                    f"| {', '.join(b['kinds_declared'])} | {a['detected']}/{a['runs']} | {_median(a['median_detect_s'])} "
                    f"| {f['false_alarms']}/{f['runs']} | {_kinds_text(a['all_kinds'])} / {_kinds_text(f['all_kinds'])} "
                    f"| `{b.get('command', '')}` |")
    return rows


def write_chart(doc: dict, path: Path) -> None:
    """A bar chart (PNG) of detected/runs per bug, false alarms in the title; for Kafka's
    catalogue two bars per bug, the affected and the fixed release."""
    import matplotlib      # deferred: matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt      # deferred: matplotlib
    kafka = _paired(doc.get("db"))
    names = [b["name"] for b in doc["bugs"]]
    arms = [("affected", "#4C9F70"), ("fixed", "#D1495B")] if kafka else [(None, None)]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / len(arms)
    for j, (role, colour) in enumerate(arms):
        rows = [b[role] if role else b for b in doc["bugs"]]
        rates = [r["detected"] / r["runs"] if r["runs"] else 0.0 for r in rows]
        xs = [i + (j - (len(arms) - 1) / 2) * width for i in range(len(names))]
        colours = colour or ["#4C9F70" if r >= 0.8 else "#D1495B" for r in rates]
        ax.bar(xs, rates, width=width, color=colours,
               label=(f"{role} release" if role else None))
        for x, r, rate in zip(xs, rows, rates):
            ax.text(x, rate + 0.01, f"{r['detected']}/{r['runs']}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(names)), names, rotation=35, ha="right")
    ax.set_ylim(0, 1.1)
    ax.set_ylabel("runs showing its anomaly" if kafka else "runs that caught it")
    if kafka:
        fa = sum(b["fixed"]["false_alarms"] for b in doc["bugs"])
        fr = sum(b["fixed"]["runs"] for b in doc["bugs"])
        ax.legend(loc="upper right", fontsize=8)
        ax.set_title(f"kraft-chaos bugs --db kafka: affected vs fixed release ({doc['runs_per_bug']} runs "
                     f"each); false alarms {fa}/{fr}")
    else:
        fa = sum(c["false_alarms"] for c in doc["correct"])
        fr = sum(c["runs"] for c in doc["correct"])
        ax.set_title(f"kraft-chaos bugs: detection per bug ({doc['runs_per_bug']} runs each); "
                     f"false alarms {fa}/{fr}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def cmd_bugs(args) -> int:
    """``kraft-chaos bugs``: see the module docstring."""
    kafka = _paired(args.db)
    entries, named = CATALOGUES[args.db]
    try:
        if kafka and (args.schedule or args.correct_only):
            raise ValueError(f"--schedule and --correct-only apply to --db kraft only, not --db {args.db}")
        bugs = [named(n) for n in args.only] if args.only else list(entries)
    except ValueError as e:
        print(f"kraft-chaos bugs: {e}", file=sys.stderr)
        return 3
    out = Path(args.out) if args.out else Path(args.store) / "bugs" / store.timestamp()
    out.mkdir(parents=True, exist_ok=True)
    correct = 0 if args.no_correct else (args.correct_runs if args.correct_runs is not None else args.runs)
    echo = lambda m: print(m, flush=True)   # noqa: E731
    try:
        if kafka:
            doc = run_kafka_bugs(bugs, args.runs, correct, args.seed, args.store, args.budget, args.subnet,
                                 echo=echo, lock=args.lock)
        else:
            doc = run_bugs(bugs, 0 if args.correct_only else args.runs, correct, args.seed, args.store,
                           args.budget, args.subnet, echo=echo, schedule=args.schedule, lock=args.lock)
    except Interrupted:
        print("interrupted", flush=True)
        return 130
    if args.correct_only:
        doc["bugs"] = []
    store.write_json(out / "bugs.json", doc)
    write_chart(doc, out / "bugs.png")
    if kafka:
        (out / "bugs.md").write_text("\n".join([KAFKA_MARKDOWN_HEADER, *kafka_markdown_rows(doc)]) + "\n",
                                     encoding="utf-8")
    print(format_table(doc))
    print(f"bugs.json and bugs.png in {out}")
    if kafka:
        missed = any(b["affected"]["detected"] < b["affected"]["runs"] for b in doc["bugs"])
        false_alarms = any(b["fixed"]["false_alarms"] for b in doc["bugs"])
    else:
        missed = any(b["detected"] < b["runs"] for b in doc["bugs"])
        false_alarms = any(c["false_alarms"] for c in doc["correct"])
    return 1 if missed or false_alarms else 0


def add_parser(sub) -> None:
    """The ``bugs`` subcommand's arguments."""
    b = sub.add_parser("bugs", help="run every catalogued bug under its schedule, N seeds each: our quorum's "
                                    "--unsafe switches and the correct build (--db kraft), or Apache Kafka's "
                                    "bugs on an affected and a fixed release (--db kafka); print detection rates")
    b.add_argument("--db", choices=sorted(CATALOGUES), default="kraft",
                   help="which catalogue: kraft (our quorum's --unsafe switches, default) or kafka "
                        "(Apache Kafka's own KRaft bugs, harness/catalogue/kafka_bugs.py)")
    b.add_argument("--runs", type=positive_int("--runs"), default=5,
                   help="runs per bug (--db kafka: on its affected release) (default 5)")
    b.add_argument("--correct-runs", type=positive_int("--correct-runs", 0), default=None,
                   help="correct-build runs per schedule (--db kafka: runs on the fixed release) "
                        "(default: --runs)")
    b.add_argument("--only", type=lambda s: [x.strip() for x in s.split(",") if x.strip()], default=None,
                   help="comma-separated bug names (--db kafka: JIRA ids) (default: the whole catalogue)")
    b.add_argument("--no-correct", action="store_true",
                   help="skip the correct-build runs (--db kafka: the fixed release's)")
    b.add_argument("--correct-only", action="store_true", help="only the correct-build runs (--db kraft)")
    b.add_argument("--budget", type=number("--budget"), default=DEFAULT_BUDGET_S,
                   help=f"seconds per run in all; time limits are cut to fit (default {DEFAULT_BUDGET_S:g})")
    b.add_argument("--seed", type=seed_value, default=1, help="first seed (default 1)")
    b.add_argument("--store", default="store", help="store root for the runs (default ./store)")
    b.add_argument("--out", default=None, help="where bugs.json and bugs.png go (default STORE/bugs/<time>)")
    b.add_argument("--subnet", type=ipv4_subnet, default=None, help="cluster subnet (default: run's default)")
    b.add_argument("--lock", default=None, metavar="FILE",
                   help="hold an exclusive flock on FILE during each run (e.g. /work/.cluster.lock), "
                        "so that others can run between them")
    b.add_argument("--schedule", choices=sorted(SCHEDULES), default=None,
                   help="run every bug under this schedule instead of its own (e.g. default; --db kraft)")
