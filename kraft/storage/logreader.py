"""Read a node's data dir offline, without changing it (for the harness's checkers).

Usage::

    from kraft.storage.logreader import read_log, read_data_dir
    records = read_log("store/.../nodes/n1/data")     # [Record(offset, epoch, type, payload)]
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from ..core import records as rec
from .meta import Meta, MetaError, read_meta
from .quorum_state import ElectionState, QuorumStateError, read_state
from .log import scan_log

HW_CHECKPOINT = "high-watermark"


@dataclasses.dataclass
class DataDir:
    """A parsed data dir: ``records``, ``meta`` (or None), ``election`` (or None),
    ``high_watermark`` (the node's last checkpoint, or None) and ``torn_bytes``
    (bytes after the last valid record, which a restart would cut)."""

    records: list[rec.Record]
    meta: Meta | None
    election: ElectionState | None
    high_watermark: int | None
    torn_bytes: int


def read_log(data_dir: Path | str) -> list[rec.Record]:
    """The valid records of the log in ``data_dir`` (offset order, stopping at a torn tail)."""
    return read_data_dir(data_dir).records


def read_data_dir(data_dir: Path | str) -> DataDir:
    """Parse everything in ``data_dir``; never raises for damaged content.

    Raises FileNotFoundError if ``data_dir`` does not exist.
    """
    d = Path(data_dir)
    if not d.is_dir():
        raise FileNotFoundError(f"no data dir at {d}")
    scan = scan_log(d / "log")
    try:
        meta = read_meta(d)
    except MetaError:
        meta = None
    try:
        election = read_state(d)
    except QuorumStateError:
        election = None
    hw = None
    try:
        hw = int((d / HW_CHECKPOINT).read_text().strip())
    except (OSError, ValueError):
        pass
    return DataDir(scan.records, meta, election, hw, scan.torn_bytes)
