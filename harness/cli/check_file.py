"""``kraft-chaos check --model M --format F FILE``: the linearizability checker on a history file.

Any format of :mod:`checkers.linearizability.formats` (our history.jsonl,
Jepsen's history.edn, porcupine's etcd and kv logs). Prints the verdict and,
for a violation, the longest linearizable prefix and the op that cannot be
placed; writes ``results.json`` and ``linearizability.html`` into ``--out``
(default: a new folder under the store, ``STORE/checks/<file name>/<timestamp>/``, with
``--store`` defaulting to ``./store``; never beside the file, whose folder may be read-only or
shared) and prints where. Several inputs: harness/cli/check.py.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from checkers.linearizability import FORMATS, MODELS, FormatError, check_file
from harness.cli.check_kafka import add_kafka_options, check_kafka_file
from harness.exits import EXIT_BAD_INPUT, verdict_exit
from harness.reports.summary import anomaly_sentence
from history import HistoryError, store


def add_file_options(c: argparse.ArgumentParser) -> None:
    """The options of ``check`` that select the linearizability check of a file."""
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
                                                "run directory: and its plots; the run is then only read); "
                                                "with several inputs, one folder per input inside it")
    c.add_argument("--store", default=None,
                   help="store root under which a history file's results go when there is no --out: "
                        "STORE/checks/<file name>/<timestamp>/ (default ./store)")
    add_kafka_options(c)


def wants_file_check(args: argparse.Namespace, path: str | Path) -> bool:
    """True when ``path`` (one input of ``check``) is a file, or any of the linearizability
    options was given."""
    return bool(args.model or args.fmt or args.no_partition or Path(path).is_file())


#: The folder under a store root that holds the results of checked history files.
CHECKS_DIR = "checks"


def default_out(path: Path, store_root: Path | str | None) -> Path:
    """A new, empty folder for the results of checking ``path``:
    ``store_root/checks/<file name>/<timestamp>/`` (``store_root`` None: ``./store``; a name
    with characters other than letters, digits, ``_.+-`` has them as ``_``; a ``-1``, ``-2``...
    suffix when the timestamp is taken). Raises OSError when it cannot be made."""
    name = re.sub(r"[^A-Za-z0-9_.+-]", "_", path.name).lstrip(".") or "history"
    base = Path(store.DEFAULT_ROOT if store_root is None else store_root) / CHECKS_DIR / name
    base.mkdir(parents=True, exist_ok=True)
    stamp, i = store.timestamp(), 0
    while True:
        out = base / (stamp if i == 0 else f"{stamp}-{i}")
        try:
            out.mkdir()
            return out
        except FileExistsError:
            i += 1


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


def check_one_file(args: argparse.Namespace, path: Path, out: Path | None = None) -> tuple[int, Path | None]:
    """Check the history file ``path`` with ``args``' options; write ``results.json`` (and, for a
    violation, ``linearizability.html``) into ``out`` (None: :func:`default_out` under
    ``args.store``), print the verdict and where the results went. Returns ``(exit code, the
    output folder or None when nothing was written)``: 0 linearizable, 1 not, 2 unknown, 3 bad
    input (a malformed or missing file, a bad option, an output folder that cannot be made)."""
    memory = int(args.memory_gib * 2**30) if args.memory_gib else None
    if args.timeout is not None and args.timeout <= 0:
        print("kraft-chaos check: --timeout must be > 0 seconds", file=sys.stderr)
        return EXIT_BAD_INPUT, None
    if not path.is_file():
        print(f"kraft-chaos check: {path}: no such file", file=sys.stderr)
        return EXIT_BAD_INPUT, None
    made = out is None
    try:
        out = out if out is not None else default_out(path, getattr(args, "store", None))
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        print(f"kraft-chaos check: cannot make an output folder for {path} ({e}); "
              "pass --out DIR or --store DIR", file=sys.stderr)
        return EXIT_BAD_INPUT, None
    routed = check_kafka_file(args, path, out, made)      # a Kafka-workload history: Jepsen's checker
    if routed is not None:
        return routed
    try:
        summary = check_file(path, model=args.model, fmt=args.fmt, partitioned=not args.no_partition,
                             timeout_s=args.timeout, out_dir=out, memory_bound=memory)
    except (FormatError, HistoryError, ValueError, FileNotFoundError) as e:
        malformed = isinstance(e, (FormatError, HistoryError))
        print(f"kraft-chaos check: {'malformed history: ' if malformed else ''}{e}", file=sys.stderr)
        if made:                              # leave no empty folder in the store
            try:
                out.rmdir()
            except OSError:
                pass
        return EXIT_BAD_INPUT, None
    (out / "results.json").write_text(json.dumps({"valid": summary["valid"],
                                                  "checkers": {"linearizability": summary}}, indent=2,
                                                 default=str) + "\n")
    print(describe(summary))
    print(f"results: {out / 'results.json'}")
    return verdict_exit(summary["valid"]), out

