"""``kraft-chaos check INPUT...``: several run directories and history files in one process.

Each input is checked in turn, as ``check`` checks one: a history file (or any input when
``--model``/``--format``/``--no-partition`` is given) by the linearizability checker
(:mod:`harness.cli.check_file`), a run directory (or a store root: its latest run) by the run's
checkers (:mod:`harness.run.check`). One process saves the interpreter's and the checkers'
start-up per input (about 0.25 s each).

Output: each input's usual report; with two or more inputs, each report is headed
``== INPUT`` and a summary follows, one line per input::

    valid      hist/a.log        -> store/checks/a.log/20260101T100000.000Z
    invalid    store/append-x/…  -> store/append-x/…
    bad input  hist/broken.log

then ``N inputs: a valid, b invalid, ...``. With ``--out DIR`` and several inputs, each input's
results go to ``DIR/<input name>`` (``-1``, ``-2``... when names repeat).

Exit code: the worst over the inputs, as ``analyze`` orders them: 1 if any is invalid, else 3
if any is bad input, else 2 if any is unknown, else 0.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.cli.check_file import add_file_options, check_one_file, wants_file_check
from harness.cli.check_kafka import kafka_options
from harness.exits import EXIT_BAD_INPUT, verdict_exit
from harness.reports.summary import format_results
from harness.run.check import check_run_dir
from history import HistoryError, store

#: Exit codes from best to worst.
SEVERITY = (0, 2, 3, 1)
VERDICT_WORDS = {0: "valid", 1: "invalid", 2: "unknown", 3: "bad input"}


def add_parser(sub) -> None:
    """Add the ``check`` subcommand to ``sub``."""
    c = sub.add_parser("check", help="re-run the checkers on a stored run, or check a history file "
                                      "for linearizability (--model, --format)")
    c.add_argument("store_dir", metavar="RUN_DIR_OR_FILE", nargs="+",
                   help="a run directory (or a store root: its latest run), or a history file; several "
                        "are checked one after another in this process (exit code: the worst verdict)")
    add_file_options(c)


def worst_exit(codes) -> int:
    """The worst of ``codes`` (exit codes 0-3) by :data:`SEVERITY`; 0 for none."""
    return max(codes, key=SEVERITY.index, default=0)


def check_run(path: str, out: Path | None, options: dict | None = None) -> tuple[int, Path | None]:
    """Re-check the run directory ``path`` (or a store root's latest run); results into ``out``
    (None: the run's own folder, whose results.json is rewritten); ``options``: the checkers'
    options (``CheckContext.options``). Prints the report. Returns ``(exit code, where the
    results went or None)``: 0 valid, 1 invalid, 2 unknown, 3 bad input."""
    try:
        run_dir = store.resolve_run_dir(path)
        results = check_run_dir(run_dir, out_dir=str(out) if out is not None else None, options=options)
    except store.StoreError as e:
        print(f"kraft-chaos check: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT, None
    except HistoryError as e:
        print(f"kraft-chaos check: malformed history: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT, None
    except (ValueError, OSError) as e:       # OSError: FileNotFoundError, an --out that cannot be written
        print(f"kraft-chaos check: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT, None
    print(format_results(results))
    if out is not None:
        print(f"results: {store.results_path(out)}")
    print(f"store: {run_dir}")
    test = store.read_test_json(run_dir)
    if test and test.get("command"):
        print(f"repeat with: {test['command']}")
    return verdict_exit(results.get("valid")), out if out is not None else run_dir


def _outs(inputs: list[str], out: str | None) -> list[Path | None]:
    """Each input's ``--out``: ``out`` itself for one input, ``out/<name>`` (made unique) for
    several, None without ``--out``."""
    if out is None:
        return [None] * len(inputs)
    if len(inputs) == 1:
        return [Path(out)]
    seen: dict[str, int] = {}
    outs = []
    for p in inputs:
        name = Path(p).resolve().name or "input"
        n = seen.get(name, 0)
        seen[name] = n + 1
        outs.append(Path(out) / (name if n == 0 else f"{name}-{n}"))
    return outs


def cmd_check(args: argparse.Namespace) -> int:
    """``kraft-chaos check INPUT...`` (``args.store_dir``: a list of paths, or one path). Exit
    code: :func:`worst_exit` of the inputs'."""
    inputs = args.store_dir if isinstance(args.store_dir, list) else [args.store_dir]
    outs = _outs(inputs, args.out)
    several = len(inputs) > 1
    rows: list[tuple[str, int, Path | None]] = []
    for path, out in zip(inputs, outs):
        if several:
            print(f"== {path}", flush=True)
        if wants_file_check(args, path):
            code, where = check_one_file(args, Path(path), out)
        else:
            try:
                options = kafka_options(args)
            except ValueError as e:
                print(f"kraft-chaos check: {e}", file=sys.stderr)
                code, where = EXIT_BAD_INPUT, None
            else:
                code, where = check_run(path, out, options)
        rows.append((path, code, where))
        if several:
            print(flush=True)
    if several:
        print(summary(rows))
    return worst_exit(code for _, code, _ in rows)


def summary(rows: list[tuple[str, int, Path | None]]) -> str:
    """The per-input lines and the totals (module docstring) of ``rows``: ``(input, exit code,
    output folder or None)``."""
    width = max(len(str(p)) for p, _, _ in rows)
    lines = [f"{VERDICT_WORDS.get(c, str(c)):<10} {str(p):<{width}}" + (f"  -> {w}" if w is not None else "")
             for p, c, w in rows]
    counts = {v: sum(1 for _, c, _ in rows if VERDICT_WORDS.get(c) == v) for v in VERDICT_WORDS.values()}
    lines.append(f"{len(rows)} inputs: " + ", ".join(f"{n} {v}" for v, n in counts.items() if n))
    return "\n".join(line.rstrip() for line in lines)
