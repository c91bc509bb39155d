"""Read a Kafka KRaft node's ``__cluster_metadata-0`` log offline, in the final-read shape.

Usage::

    from targets.kafka.metadata_log import read_metadata_log, read_metadata_dir
    records = read_metadata_log("store/.../nodes/c1/data")   # [(offset, epoch, type, payload)]
    parsed = read_metadata_dir("store/.../nodes/c1/data")    # everything, see MetadataDir

The records have the shape of our own quorum's node logs
(``history.node_data.NodeData.records`` and a final read's ``records``):
``(offset, epoch, type, payload)``, ``epoch`` being the batch's
partitionLeaderEpoch. A LeaderChange control record has type
``"LeaderChange"`` and our payload ``{"LeaderId": L, "Voters": [ids],
"GrantingVoters": [ids]}``, so the election-safety checker reads it as it
reads ours; other records have the type and payload of
:mod:`targets.kafka.metadata_records` (``"TopicRecord"``, ``{"name": ...,
"topicId": ...}``, ...).

Layout read (Kafka 4.x): ``<log dir>/meta.properties`` (node.id,
cluster.id, directory.id), ``<log dir>/__cluster_metadata-0/`` holding the
segments ``<20-digit base offset>.log``, the snapshots ``<20-digit end
offset>-<10-digit epoch>.checkpoint`` (KIP-630), ``quorum-state`` (JSON) and
``leader-epoch-checkpoint``. Kafka keeps the metadata partition's high
watermark in memory only, so ``high_watermark`` is always None here.
"""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

from .metadata_records import DecodedRecord, decode_record
from .record_batch import CorruptBatchError, RecordBatch, TornTail, read_batch_file

PARTITION_DIR = "__cluster_metadata-0"
_SEGMENT = re.compile(r"^(\d{20})\.log$")
_SNAPSHOT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
LEADER_CHANGE = "LeaderChange"


@dataclasses.dataclass(frozen=True, slots=True)
class MetadataEntry:
    """One record of the metadata log or of a snapshot.

    ``offset``, ``epoch`` (the batch's partitionLeaderEpoch), ``type`` and
    ``payload`` as in the module doc; ``timestamp`` (ms), ``control`` (from a
    control batch), ``api_key``/``control_type``/``version`` of the record,
    ``decoded`` (False: payload only names the type and size) and
    ``value_bytes`` (size of the record value, bytes).
    """

    offset: int
    epoch: int
    type: str
    payload: Any
    timestamp: int
    control: bool
    api_key: int | None
    control_type: int | None
    version: int | None
    decoded: bool
    value_bytes: int

    def to_wire(self) -> list:
        """``[offset, epoch, type, payload]``, the form of a read's ``records``."""
        return [self.offset, self.epoch, self.type, self.payload]


@dataclasses.dataclass(frozen=True, slots=True)
class SegmentInfo:
    """One ``.log`` segment read: ``path``, ``base_offset`` (from its name), ``size_bytes``,
    ``valid_bytes`` (prefix of whole, valid batches), ``batches`` (count) and ``torn``."""

    path: Path
    base_offset: int
    size_bytes: int
    valid_bytes: int
    batches: int
    torn: TornTail | None


@dataclasses.dataclass(frozen=True, slots=True)
class Snapshot:
    """A ``.checkpoint`` snapshot: ``path``, its id (``end_offset``, exclusive, and ``epoch``,
    from the file name), its ``entries`` (offsets counted inside the snapshot, from 0),
    ``torn`` (TornTail or None) and ``error`` (a CorruptBatchError when read with
    ``strict=False``, else None)."""

    path: Path
    end_offset: int
    epoch: int
    entries: list[MetadataEntry]
    torn: TornTail | None
    error: CorruptBatchError | None = None


@dataclasses.dataclass
class MetadataDir:
    """A parsed Kafka metadata log dir.

    ``entries``: the log's records in offset order, up to the first torn or
    (with ``strict=False``) corrupt batch. ``segments``: [SegmentInfo] in
    base-offset order, each segment read (those after a stop are left out).
    ``torn``: the first TornTail met, or None. ``torn_bytes``: bytes after the
    last valid batch, later segments included. ``corrupt``: the
    CorruptBatchError that stopped reading (``strict=False`` only) or None.
    ``notes``: text about odd but readable things (offset gaps, a segment
    whose name is not its first offset, an unreadable quorum-state).
    ``quorum_state``: the ``quorum-state`` JSON object or None. ``meta``: the
    ``meta.properties`` keys (str -> str) or None; ``node_id`` (int or None),
    ``cluster_id`` and ``directory_id`` (str or None) from it.
    ``leader_epochs``: [(epoch, start offset)] from ``leader-epoch-checkpoint``.
    ``snapshots``: [Snapshot] by end offset. ``high_watermark``: None (Kafka
    does not persist it). ``log_start_offset``/``log_end_offset``: the first
    segment's base offset and the offset after the last entry (None when
    there is no segment).
    """

    entries: list[MetadataEntry]
    segments: list[SegmentInfo]
    torn: TornTail | None
    torn_bytes: int
    corrupt: CorruptBatchError | None
    notes: list[str]
    quorum_state: dict | None
    meta: dict[str, str] | None
    node_id: int | None
    cluster_id: str | None
    directory_id: str | None
    leader_epochs: list[tuple[int, int]]
    snapshots: list[Snapshot]
    high_watermark: int | None
    log_start_offset: int | None
    log_end_offset: int | None


def final_read_payload(rec: DecodedRecord) -> Any:
    """The payload for our final-read shape: ``{"LeaderId", "Voters", "GrantingVoters"}``
    (voter ids) for a decoded LeaderChange, else ``rec.payload`` unchanged."""
    if rec.type != LEADER_CHANGE or not rec.decoded:
        return rec.payload
    p = rec.payload
    return {"LeaderId": p["leaderId"], "Voters": [v["voterId"] for v in p["voters"]],
            "GrantingVoters": [v["voterId"] for v in p["grantingVoters"]]}


def batch_entries(batch: RecordBatch) -> list[MetadataEntry]:
    """The records of ``batch`` as :class:`MetadataEntry` (never raises on record contents)."""
    out = []
    control = batch.is_control
    for r in batch.records:
        d = decode_record(r.key, r.value, control)
        out.append(MetadataEntry(r.offset, batch.partition_leader_epoch, d.type, final_read_payload(d),
                                 r.timestamp, control, d.api_key, d.control_type, d.version,
                                 d.decoded, d.value_bytes))
    return out


def _partition_dir(data_dir: Path) -> tuple[Path, Path]:
    """(log dir holding meta.properties, partition dir); FileNotFoundError if there is none."""
    if (data_dir / PARTITION_DIR).is_dir():
        return data_dir, data_dir / PARTITION_DIR
    if data_dir.name == PARTITION_DIR and data_dir.is_dir():
        return data_dir.parent, data_dir
    raise FileNotFoundError(f"{data_dir}: no {PARTITION_DIR} directory")


def read_properties(path: Path) -> dict[str, str]:
    """Parse a Java ``.properties`` file of ``key=value`` lines (``#``/``!`` comments).

    Escapes and continuation lines are not handled (meta.properties has none).
    Raises OSError if it cannot be read.
    """
    out = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        key, sep, value = line.partition("=")
        if not sep:
            key, _, value = line.partition(":")
        out[key.strip()] = value.strip()
    return out


def _read_leader_epochs(path: Path) -> list[tuple[int, int]]:
    """(epoch, start offset) pairs of a ``leader-epoch-checkpoint`` ([] if absent or malformed)."""
    try:
        lines = path.read_text().split("\n")
        count = int(lines[1])
        return [(int(a), int(b)) for a, b in (lines[2 + i].split() for i in range(count))]
    except (OSError, ValueError, IndexError):
        return []


def _read_snapshot(path: Path, end_offset: int, epoch: int, strict: bool) -> Snapshot:
    scan = read_batch_file(path, strict=strict)
    entries = [e for b in scan.batches for e in batch_entries(b)]
    return Snapshot(path, end_offset, epoch, entries, scan.torn, scan.corrupt)


def read_metadata_dir(data_dir: Path | str, strict: bool = True) -> MetadataDir:
    """Parse a Kafka node's metadata log dir: every ``*.log`` segment of ``__cluster_metadata-0``
    in base-offset order, its ``.checkpoint`` snapshots, ``quorum-state``,
    ``leader-epoch-checkpoint`` and the log dir's ``meta.properties``.

    ``data_dir`` is the log dir holding ``__cluster_metadata-0`` (or that
    directory itself). Reading stops at a torn batch (reported in ``torn``,
    ``torn_bytes``), never raising for it. Unknown or undecodable records
    pass through (``decoded`` False).

    Raises FileNotFoundError if there is no ``__cluster_metadata-0``;
    :class:`~targets.kafka.record_batch.CorruptBatchError` (naming the file,
    byte position and base offset) for a batch failing its CRC-32C or not
    parsing, unless ``strict`` is False, when reading stops there and the
    error is kept in ``corrupt`` (or in the snapshot's ``error``);
    :class:`~targets.kafka.record_batch.UnsupportedCodecError` for a batch
    compressed with snappy, lz4 or zstd.
    """
    log_dir, part = _partition_dir(Path(data_dir))
    notes: list[str] = []
    segs = sorted((int(m.group(1)), p) for p in part.iterdir()
                  if p.is_file() and (m := _SEGMENT.match(p.name)))
    entries: list[MetadataEntry] = []
    infos: list[SegmentInfo] = []
    torn: TornTail | None = None
    corrupt: CorruptBatchError | None = None
    torn_bytes = 0
    next_offset: int | None = None
    for i, (base, path) in enumerate(segs):
        scan = read_batch_file(path, strict=strict)
        for b in scan.batches:
            if next_offset is not None and b.base_offset != next_offset:
                notes.append(f"{path.name}: batch at byte {b.position} starts at offset {b.base_offset}, "
                             f"{next_offset} expected")
            elif next_offset is None and b.base_offset != base:
                notes.append(f"{path.name}: first batch starts at offset {b.base_offset}, not {base}")
            next_offset = b.last_offset + 1
            entries.extend(batch_entries(b))
        infos.append(SegmentInfo(path, base, scan.size_bytes, scan.valid_bytes, len(scan.batches), scan.torn))
        if scan.torn is not None or scan.corrupt is not None:
            torn, corrupt = scan.torn, scan.corrupt
            torn_bytes += scan.size_bytes - scan.valid_bytes + sum(p.stat().st_size for _, p in segs[i + 1:])
            if i + 1 < len(segs):
                notes.append(f"{path.name}: {'torn tail' if torn else 'corrupt batch'} before "
                             f"{len(segs) - i - 1} later segment(s); those were not read")
            break
        if next_offset is None:                   # an empty segment: the log resumes at its base
            next_offset = base
    snaps = sorted((int(m.group(1)), int(m.group(2)), p) for p in part.iterdir()
                   if p.is_file() and (m := _SNAPSHOT.match(p.name)))
    snapshots = [_read_snapshot(p, end, ep, strict) for end, ep, p in snaps]
    quorum_state = None
    qs = part / "quorum-state"
    if qs.exists():
        try:
            quorum_state = json.loads(qs.read_text())
        except (OSError, ValueError) as e:
            notes.append(f"quorum-state unreadable: {e}")
    meta = None
    if (log_dir / "meta.properties").exists():
        try:
            meta = read_properties(log_dir / "meta.properties")
        except OSError as e:
            notes.append(f"meta.properties unreadable: {e}")
    node_id = None
    if meta and meta.get("node.id", "").lstrip("-").isdigit():
        node_id = int(meta["node.id"])
    return MetadataDir(
        entries, infos, torn, torn_bytes, corrupt, notes, quorum_state, meta, node_id,
        meta.get("cluster.id") if meta else None, meta.get("directory.id") if meta else None,
        _read_leader_epochs(part / "leader-epoch-checkpoint"), snapshots, None,
        segs[0][0] if segs else None, next_offset)


def read_metadata_log(data_dir: Path | str) -> list[tuple[int, int, str, Any]]:
    """The metadata log of ``data_dir`` as ``[(offset, epoch, type, payload)]``, offset order.

    The records of :func:`read_metadata_dir` (strict: raises as it does) up to
    a torn tail, in the shape of ``NodeData.records``.
    """
    return [(e.offset, e.epoch, e.type, e.payload) for e in read_metadata_dir(data_dir).entries]
