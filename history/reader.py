"""Reading a history file back: parsed, validated, line numbers in every error."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

from .ops import HistoryError, op_problem


def parse_line(line: str, path: Path, lineno: int) -> dict:
    """One history line as a well-formed op (index not checked). Raises
    :class:`HistoryError` naming ``path``'s file name and ``lineno``."""
    try:
        op = json.loads(line)
    except ValueError as exc:
        raise HistoryError(f"{path.name}:{lineno}: truncated or invalid JSON: {exc}") from None
    problem = op_problem(op)
    if problem:
        raise HistoryError(f"{path.name}:{lineno}: {problem}")
    return op


def iter_history(path: Path | str) -> Iterator[dict]:
    """Parse and validate the JSONL history at ``path`` one op at a time, in file order.

    Memory stays at one line whatever the file's size. Blank lines are
    skipped. Raises ``FileNotFoundError`` if the file is missing (on the
    first ``next``), and :class:`HistoryError` naming the file and 1-based
    line number for a truncated or invalid JSON line, an op missing a field
    or with a field of the wrong type, or an ``index`` that is not dense
    from 0 (``index`` must equal the op's position).
    """
    path = Path(path)
    expected = 0
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            op = parse_line(line, path, lineno)
            if op["index"] != expected:
                raise HistoryError(f"{path.name}:{lineno}: index {op['index']} out of sequence "
                                   f"(expected {expected}; indices are dense from 0)")
            expected += 1
            yield op


def read_history(path: Path | str) -> list[dict]:
    """The whole history at ``path`` as a list of ops (see :func:`iter_history` for the
    checks and the errors raised)."""
    return list(iter_history(path))
