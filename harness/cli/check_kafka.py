"""``kraft-chaos check FILE`` for a Kafka-workload history: Jepsen's Kafka checker, not linearizability.

A history file (our history.jsonl or Jepsen's history.edn) whose data ops carry micro-op lists
(checkers/kafka_txn/files.py) is checked by Jepsen's Kafka workload checker
(checkers/kafka_txn) instead of the linearizability checker, unless ``--model`` asks for the
latter. Prints the verdict with each anomaly kind by Jepsen's name and its explanations, writes
``results.json`` into the output folder. Also the options of that checker (``--ww-deps``,
``--forbid``), which reach a run directory's check too (:func:`kafka_options`).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from checkers.fold import run_checkers
from checkers.kafka_txn import ALLOWABLE, KINDS, Options, TxnChecker
from checkers.kafka_txn.explain import plural
from checkers.kafka_txn.files import FORMATS, looks_like_kafka, open_ops
from checkers.linearizability import FormatError, guess_format
from checkers.log_safety import combine
from checkers.registry import split_by_kind
from harness.exits import EXIT_BAD_INPUT, verdict_exit
from history import HistoryError

#: explanations printed per kind (results.json holds them all)
SHOWN = 3
NAME = "kafka-txn"


def add_kafka_options(c: argparse.ArgumentParser) -> None:
    """The options of Jepsen's Kafka workload checker, for ``check``."""
    c.add_argument("--ww-deps", action=argparse.BooleanOptionalAction, default=None,
                   help="Kafka workload histories: infer write-write dependencies from the logs' order, "
                        "for G0 and G1c cycles (Jepsen's --ww-deps; G1c is then allowed, as in Jepsen)")
    c.add_argument("--forbid", action="append", default=None, metavar="KIND",
                   help="Kafka workload histories: count an anomaly kind Jepsen allows as an error "
                        f"(repeatable, or comma-separated; 'all' for every one: {', '.join(ALLOWABLE)})")


def kafka_options(args: argparse.Namespace) -> dict:
    """The Kafka checker's options given on the command line (only those given), for
    ``CheckContext.options``. Raises ValueError naming a bad ``--forbid`` kind."""
    from checkers.kafka_txn import parse_forbid
    out: dict = {}
    if getattr(args, "ww_deps", None) is not None:
        out["ww_deps"] = args.ww_deps
    if getattr(args, "forbid", None):
        out["forbid"] = list(parse_forbid(args.forbid))
    return out


def check_kafka_file(args: argparse.Namespace, path: Path, out: Path, made: bool) -> tuple[int, Path | None] | None:
    """Check ``path`` with Jepsen's Kafka workload checker when it is such a history and no
    ``--model`` was asked for; else None (the caller checks linearizability). Writes
    ``out/results.json`` and prints the verdict. Returns ``(exit code, out)``: 0 valid, 1
    invalid, 2 unknown; ``(3, None)`` for bad input (``out`` removed when ``made`` here)."""
    if getattr(args, "model", None):
        return None
    try:
        fmt = args.fmt or guess_format(path)
    except ValueError:
        return None
    if fmt not in FORMATS:
        return None
    try:
        if not looks_like_kafka(path, fmt):
            return None
        ops = open_ops(path, fmt)
        options = Options.from_mapping(kafka_options(args))
        results = run_checkers(ops, {NAME: TxnChecker(options)})
    except (FormatError, HistoryError, ValueError, OSError) as e:
        malformed = isinstance(e, (FormatError, HistoryError))
        print(f"kraft-chaos check: {'malformed history: ' if malformed else ''}{e}", file=sys.stderr)
        if made:
            try:
                out.rmdir()
            except OSError:
                pass
        return EXIT_BAD_INPUT, None
    checkers = split_by_kind(results)
    doc = {"valid": combine([r.get("valid") for r in checkers.values()]), "file": str(path), "format": fmt,
           "anomalies": {k: len(r.get("anomalies") or []) for k, r in checkers.items()}, "checkers": checkers}
    (out / "results.json").write_text(json.dumps(doc, indent=2, default=str) + "\n")
    print(describe(path, doc))
    print(f"results: {out / 'results.json'}")
    return verdict_exit(doc["valid"]), out


def describe(path: Path | str, doc: dict) -> str:
    """The printed report of a Kafka-workload check (``doc``: results.json's): the verdict,
    each kind found (allowed ones marked) with its first explanations, why it is unknown."""
    checkers = doc["checkers"]
    main = checkers[NAME]
    word = {True: "VALID", False: "INVALID"}.get(doc["valid"], "UNKNOWN")
    c = main["counts"]
    lines = [f"{path}: {word} (Jepsen's Kafka workload checker: {c['ops']} ops, {c['micro_ops']} micro-ops, "
             f"{plural(c['keys'], 'key')}{', ww-deps' if main.get('ww_deps') else ''}; checked in {main['check_s']:.2f} s)"]
    shown = False
    for kind in KINDS:
        r = checkers.get(kind) or {}
        found = r.get("anomalies") or []
        if not found:
            continue
        shown = True
        lines.append(f"  {kind}: {len(found)}{' (allowed)' if r.get('allowed') else ''}")
        lines += [f"    - {a['explanation']}" for a in found[:SHOWN]]
        if len(found) > SHOWN:
            lines.append(f"    ... {len(found) - SHOWN} more in results.json")
    if not shown:
        lines.append("  no anomalies")
    if main.get("reason"):
        lines.append(f"  unknown: {main['reason']}")
    if main.get("ignored"):
        lines.append("  set aside: " + ", ".join(f"{f} ({n})" for f, n in sorted(main["ignored"].items())))
    return "\n".join(lines)

