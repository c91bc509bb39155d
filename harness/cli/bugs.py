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
exclusive ``flock`` on FILE during each run, not between them (default
``/run/lock/kraft-chaos.lock``; ``--lock none``: no lock). Exit code 0 when every bug
was detected in every run and there was no false alarm, 1 otherwise, 3 for bad input, 130
when interrupted.
"""
from __future__ import annotations

import sys
from pathlib import Path

from harness.bugs.report import KAFKA_MARKDOWN_HEADER, exit_code, format_table, kafka_markdown_rows, write_chart
from harness.bugs.runs import CATALOGUES, DEFAULT_BUDGET_S, paired, run_bugs, run_kafka_bugs
from harness.cli.args import add_lock_flag
from harness.config.schedules import SCHEDULES
from harness.config.values import ipv4_subnet, number, positive_int, seed_value
from harness.run.runner import Interrupted
from history import store


def cmd_bugs(args) -> int:
    """``kraft-chaos bugs``: see the module docstring."""
    kafka = paired(args.db)
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
    return exit_code(doc)


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
    add_lock_flag(b)
    b.add_argument("--schedule", choices=sorted(SCHEDULES), default=None,
                   help="run every bug under this schedule instead of its own (e.g. default; --db kraft)")
