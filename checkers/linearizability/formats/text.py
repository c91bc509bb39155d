"""Reading line-oriented history files."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator


def numbered_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, line) for each non-blank line; undecodable bytes become U+FFFD."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, start=1):
            if line.strip():
                yield lineno, line
