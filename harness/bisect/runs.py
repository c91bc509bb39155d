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
from typing import Callable

from harness.bisect.search import MODES, Subject, check_release, release_verdict, search, subject
from harness.catalogue.scoring import outcome_line, outcomes_json, run_one, summarize
from harness.config.values import ipv4_subnet, kafka_version, positive_int, seed_value
from harness.exits import EXIT_BAD_INPUT, EXIT_INTERRUPTED
from harness.config.scenario import ScenarioError
from harness.run.runner import Interrupted
from history import store
from targets.errors import TargetError
from targets.kafka.releases import patches_between, version_key


def run_bisect(subj: Subject, releases: list[str], runs: int, seed: int, root: str, mode: str = "bisect",
               subnet: str | None = None, lock: str | None = None, echo: Callable[[str], None] = print,
               run: Callable | None = None, on_release: Callable[[dict], None] | None = None) -> dict:
    """Search ``releases`` for the change of ``subj``'s verdict, ``runs`` runs per release
    tested; returns the ``bisect.json`` document: the subject, the releases, the search's
    answer (:func:`harness.bisect.search.search`) and per release tested its summary and
    outcomes. ``on_release(doc)`` is called after each release (to write it out)."""
    doc: dict = {"subject": subj.name, "what": subj.what, "describe": subj.describe(),
                 "kinds": list(subj.kinds), "mode": mode, "runs_per_release": runs, "seed": seed,
                 "releases": releases, "results": {}, "started": store.timestamp()}

    def verdict_of(version: str) -> str:
        fields = {**subj.fields, "kafka_version": version}
        outs = []
        for i in range(runs):
            o = run_one(fields, seed + i, root, kinds=subj.kinds, subnet=subnet, lock=lock, run=run,
                        label=f"{subj.name} on {version}")
            echo(outcome_line(f"{subj.name} on {version}", o))
            outs.append(o)
        verdict = release_verdict(outs)
        doc["results"][version] = {"verdict": verdict, **summarize(outs), "outcomes": outcomes_json(outs)}
        echo(f"{version}: {verdict} ({doc['results'][version]['detected']}/{runs} showed it)")
        if on_release:
            on_release(doc)
        return verdict

    doc.update(search(releases, verdict_of, mode))
    doc["finished"] = store.timestamp()
    return doc


def format_table(doc: dict) -> str:
    """The table of a ``bisect.json`` document and its answer."""
    lines = [f"bisect {doc['describe']}", f"{'release':10} {'runs':>5} {'detected':>9}  {'verdict':8}  anomalies (runs)"]
    for v in doc["releases"]:
        r = doc["results"].get(v)
        if r is None:
            lines.append(f"{v:10} {'-':>5} {'-':>9}  {'not run':8}")
            continue
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(r["all_kinds"].items(), key=lambda kv: -kv[1])) or "-"
        mark = "  <- changed here" if v == doc.get("changed_at") else ""
        lines.append(f"{v:10} {r['runs']:>5} {r['detected']:>5}/{r['runs']:<3}  {r['verdict']:8}  {kinds}{mark}")
    if doc.get("changed_at"):
        lines.append(f"the verdict changes at {doc['changed_at']}: {doc['from']} up to {doc['before']}, "
                     f"{doc['to']} from {doc['changed_at']} ({doc['reason']})")
    else:
        lines.append(f"no change found: {doc['reason']}")
    return "\n".join(lines)


def exit_code(doc: dict) -> int:
    """0: a change was named; 2: unknown verdicts left it undecided; 1: no change."""
    if doc.get("changed_at"):
        return 0
    verdicts = set(doc.get("verdicts", {}).values())
    return 2 if "unknown" in verdicts or not verdicts - {"unknown"} else 1


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
    b.add_argument("--lock", default=None, metavar="FILE",
                   help="hold an exclusive flock on FILE during each run (e.g. /work/.cluster.lock)")
