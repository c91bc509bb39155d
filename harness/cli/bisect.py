"""``kraft-chaos bisect SUBJECT --from A --to B``: in which Kafka release did the verdict change?

SUBJECT is a Kafka catalogue entry (``KAFKA-15489``: its schedule and kraft.version, scored on
its declared anomaly kinds), a schedule written for ``--db kafka`` (``kafka-fence``) or a
scenario (a built-in name or a file with ``db = "kafka"``), scored on the whole verdict or
on ``--kinds``. The releases are every patch of the releases table from A to B
(``targets/kafka/releases.py``, ``Release.patches``: those that resolve from Maven Central),
or ``--releases``. Each release runs ``--runs`` times (seeds ``seed .. seed+runs-1``); its
verdict is ``invalid`` when a run showed the anomaly, ``valid`` when none did
(:mod:`harness.bisect.search`). ``--mode bisect`` (default) halves the range, ``step``
runs every release.

Prints a table (release, runs, detected, verdict, anomaly kinds) and the first release
where the verdict changes, and writes ``bisect.json`` into ``--out`` (default
``STORE/bisect/<time>/``) after every release. Exit code: 0 when it names the release where
the verdict changed; 1 when the verdict is the same across the range; 2 when unknown
verdicts leave it undecided; 3 for bad input (an unknown subject or release, a range the
subject cannot run on); 130 on Ctrl-C.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from harness.bisect.runs import exit_code, format_table, run_bisect
from harness.bisect.search import MODES, check_release, subject
from harness.cli.args import add_lock_flag
from harness.config.scenario import ScenarioError
from harness.config.values import ipv4_subnet, kafka_version, positive_int, seed_value
from harness.exits import EXIT_BAD_INPUT, EXIT_INTERRUPTED
from harness.run.runner import Interrupted
from history import store
from targets.errors import TargetError
from targets.kafka.releases import patches_between, version_key


def _versions(text: str) -> list[str]:
    return [kafka_version(v.strip()) for v in text.split(",") if v.strip()]


def cmd_bisect(args) -> int:
    """``kraft-chaos bisect``: see the module docstring."""
    try:
        subj = subject(args.subject, tuple(args.kinds) if args.kinds else None)
        if args.releases:
            releases = sorted(dict.fromkeys(args.releases), key=version_key)
        else:
            if not (args.from_version and args.to_version):
                raise ValueError("give --from A and --to B (or --releases A,B,...)")
            releases = patches_between(args.from_version, args.to_version)
        if len(releases) < 2:
            raise ValueError(f"bisect needs at least two releases, got {releases or 'none'}")
        for v in releases:
            check_release(subj, v)
    except (ValueError, TargetError, ScenarioError) as e:
        print(f"kraft-chaos bisect: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    out = Path(args.out) if args.out else Path(args.store) / "bisect" / store.timestamp()
    out.mkdir(parents=True, exist_ok=True)
    print(f"bisect {subj.describe()}: {args.mode} over {', '.join(releases)}, {args.runs} run(s) each",
          flush=True)
    t0 = time.monotonic()
    try:
        doc = run_bisect(subj, releases, args.runs, args.seed, args.store, args.mode, args.subnet, args.lock,
                         echo=lambda m: print(m, flush=True),
                         on_release=lambda d: store.write_json(out / "bisect.json", d))
    except Interrupted:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    doc["wall_s"] = round(time.monotonic() - t0, 1)
    doc["exit_code"] = exit_code(doc)
    store.write_json(out / "bisect.json", doc)
    print(format_table(doc))
    print(f"bisect.json in {out}")
    return doc["exit_code"]


def add_parser(sub) -> None:
    """The ``bisect`` subcommand's arguments."""
    b = sub.add_parser("bisect", help="in which Kafka release did the verdict change? Run a catalogue entry, "
                                      "schedule or scenario on the releases between --from and --to")
    b.add_argument("subject", metavar="SCENARIO_OR_SCHEDULE",
                   help="a Kafka catalogue entry (KAFKA-15489), a kafka schedule (kafka-fence) or a scenario "
                        "(built-in name or file) with db = \"kafka\"")
    b.add_argument("--from", dest="from_version", type=kafka_version, default=None, metavar="A",
                   help="the oldest release (included)")
    b.add_argument("--to", dest="to_version", type=kafka_version, default=None, metavar="B",
                   help="the newest release (included)")
    b.add_argument("--releases", type=_versions, default=None, metavar="V,V,...",
                   help="these releases instead of every patch from A to B")
    b.add_argument("--runs", type=positive_int("--runs"), default=3, help="runs per release (default 3)")
    b.add_argument("--kinds", type=lambda s: [x.strip() for x in s.split(",") if x.strip()], default=None,
                   help="score on these anomaly kinds (default: the entry's declared kinds, else the "
                        "whole verdict)")
    b.add_argument("--mode", choices=MODES, default="bisect",
                   help="bisect (halve the range; default) or step (every release in turn)")
    b.add_argument("--seed", type=seed_value, default=1, help="first seed (default 1)")
    b.add_argument("--store", default="store", help="store root for the runs (default ./store)")
    b.add_argument("--out", default=None, help="where bisect.json goes (default STORE/bisect/<time>)")
    b.add_argument("--subnet", type=ipv4_subnet, default=None, help="cluster subnet (default: run's default)")
    add_lock_flag(b)
