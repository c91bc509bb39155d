"""Segment file naming: ``<base offset, 20 digits>.log`` in the data dir's ``log/`` folder."""
from __future__ import annotations

from pathlib import Path

SUFFIX = ".log"


def segment_name(base_offset: int) -> str:
    """File name of the segment whose first record has ``base_offset``."""
    return f"{base_offset:020d}{SUFFIX}"


def list_segments(log_dir: Path) -> list[tuple[int, Path]]:
    """Segments in ``log_dir`` as (base offset, path), ascending; ignores other files."""
    out = []
    if log_dir.is_dir():
        for p in log_dir.iterdir():
            if p.suffix == SUFFIX and p.stem.isdigit() and len(p.stem) == 20:
                out.append((int(p.stem), p))
    return sorted(out)
