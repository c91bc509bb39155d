"""``kraft-chaos check --model M --format F FILE``: the linearizability checker on a history file.

Any format of :mod:`checkers.linearizability.formats` (our history.jsonl,
Jepsen's history.edn, porcupine's etcd and kv logs). Prints the verdict and,
for a violation, the longest linearizable prefix and the op that cannot be
placed; writes ``results.json`` and ``linearizability.html`` into ``--out``
(default: beside the file, in ``<file>.check/``).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_file_options(c: argparse.ArgumentParser) -> None:
    """The options of ``check`` that select the linearizability check of a file."""
    from checkers.linearizability import FORMATS, MODELS
    c.add_argument("--model", choices=sorted(MODELS), default=None,
                   help="check FILE for linearizability against this model (default: the format's)")
    c.add_argument("--format", dest="fmt", choices=sorted(FORMATS), default=None,
                   help="FILE's format (default: from its suffix: .jsonl .edn .log .txt)")
    c.add_argument("--no-partition", action="store_true",
                   help="search the whole history at once instead of per key")
    c.add_argument("--timeout", type=float, default=None,
                   help="give up after this many seconds: verdict unknown (default: none)")
    c.add_argument("--memory-gib", type=float, default=None,
                   help="memory the search may hold, GiB (default: half the machine's); above it the verdict is unknown")
    c.add_argument("--out", default=None, help="where to write results.json and linearizability.html (for a "
                                                "run directory: and its plots; the run is then only read)")


def wants_file_check(args: argparse.Namespace) -> bool:
    """True when ``check`` was given a file or any of the linearizability options."""
    return bool(args.model or args.fmt or args.no_partition or Path(args.store_dir).is_file())


def anomaly_sentence(a: dict) -> str:
    """One linearizability anomaly (results.json's shape) as a sentence."""
    op = a.get("op") or {}
    where = f"key {a['key']!r}: " if a.get("key") is not None else ""
    return (f"{where}after a linearizable prefix of {a['linearized_prefix']} op(s), "
            f"{op.get('desc')} (process {op.get('process')}, index/line {op.get('index')}) "
            f"cannot be placed: the state is {a.get('state')}, it needs {a.get('needs')}")


def describe(summary: dict) -> str:
    """Human-readable lines for a linearizability summary."""
    verdict = {True: "linearizable", False: "NOT linearizable"}.get(summary["valid"], "unknown")
    lines = [f"{summary.get('file', 'history')}: {verdict} ({summary['model']} model, "
             f"{summary['ops']} ops in {summary['partitions']} partition(s), "
             f"checked in {summary['check_s']:.3f} s)"]
    if summary.get("reason"):
        lines.append(f"  {summary['reason']}")
    lines += [f"  {anomaly_sentence(a)}" for a in summary.get("anomalies", [])]
    if summary.get("html"):
        lines.append(f"  explained in {summary['html']}")
    return "\n".join(lines)


def cmd_check_file(args: argparse.Namespace) -> int:
    """Run the check; exit 0 linearizable, 1 not, 2 unknown, 3 bad input."""
    from checkers.linearizability import FormatError, check_file
    from harness.cli import EXIT_BAD_INPUT, verdict_exit
    from history import HistoryError
    path = Path(args.store_dir)
    out = Path(args.out) if args.out else path.with_name(path.name + ".check")
    memory = int(args.memory_gib * 2**30) if args.memory_gib else None
    if args.timeout is not None and args.timeout <= 0:
        print("kraft-chaos check: --timeout must be > 0 seconds", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        summary = check_file(path, model=args.model, fmt=args.fmt, partitioned=not args.no_partition,
                             timeout_s=args.timeout, out_dir=out, memory_bound=memory)
    except (FormatError, HistoryError) as e:
        print(f"kraft-chaos check: malformed history: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (ValueError, FileNotFoundError) as e:
        print(f"kraft-chaos check: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps({"valid": summary["valid"],
                                                  "checkers": {"linearizability": summary}}, indent=2,
                                                 default=str) + "\n")
    print(describe(summary))
    print(f"results: {out / 'results.json'}")
    return verdict_exit(summary["valid"])
