"""``kraft-chaos matrix FILE.toml``: workloads x nemeses x targets x seeds, run back to back.

The file's format: harness/matrix/file.py and ``examples/nightly.toml``; a bad one is a
:class:`harness.matrix.file.MatrixError` naming the file, line and key (exit 3).

The cells run in turn (harness/matrix/cells.py); ``matrix.json`` and ``matrix.xml`` go into
``--out`` (default ``<store>/matrix/<timestamp>/``). Exit code: 1 if any cell is invalid,
else 2 if any is unknown, else 4 if every failed cell was a cluster error, 5 if another
error, else 0; 3 for a bad file; 130 on Ctrl-C (after writing what ran, the rest as not run).
"""
from __future__ import annotations

import sys
from pathlib import Path

from harness.config.values import ipv4_subnet
from harness.matrix.cells import run_matrix
from harness.matrix.file import MatrixError, load
from harness.matrix.report import format_table
from history import store


def cmd_matrix(args) -> int:
    """``kraft-chaos matrix FILE.toml``: see the module docstring."""
    overrides = {k: v for k, v in (("store", args.store), ("subnet", args.subnet)) if v is not None}
    try:
        matrix = load(args.file, overrides)
    except (MatrixError, FileNotFoundError, IsADirectoryError) as e:
        print(f"kraft-chaos matrix: {e}", file=sys.stderr)
        return 3
    if args.dry_run:
        for s in matrix.skipped:
            print(f"skipped: {s['reason']}")
        for c in matrix.cells:
            print(f"{c.id}: {c.config.repeat_command()}")
        print(f"{len(matrix.cells)} cell(s)")
        return 0
    root = matrix.cells[0].config.store
    out = Path(args.out) if args.out else Path(root) / "matrix" / store.timestamp()
    try:
        doc = run_matrix(matrix, out)
    except KeyboardInterrupt:          # a second Ctrl-C while writing
        print("interrupted", file=sys.stderr)
        return 130
    print(format_table(doc))
    print(f"matrix.json and matrix.xml in {out}")
    return doc["exit_code"]


def add_parser(sub) -> None:
    """The ``matrix`` subcommand's arguments."""
    m = sub.add_parser("matrix", help="run workloads x nemeses x targets x seeds from a TOML file; "
                                      "summary table, matrix.json, JUnit XML")
    m.add_argument("file", metavar="FILE.toml", help="the matrix (see examples/nightly.toml)")
    m.add_argument("--out", default=None, help="where matrix.json and matrix.xml go "
                                               "(default STORE/matrix/<time>)")
    m.add_argument("--store", default=None, help="store root for the runs (default: the file's, or ./store)")
    m.add_argument("--subnet", type=ipv4_subnet, default=None, help="cluster subnet (default: the file's)")
    m.add_argument("--dry-run", action="store_true", help="list the cells and their commands; run nothing")
