"""Node data copied from the nodes after a run: each node's log and high watermark."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any


@dataclasses.dataclass
class NodeData:
    """One node's log as found in its data dir after the run.

    ``records``: ``[(offset, epoch, type, payload), ...]`` in log order,
    ``type`` being ``"data"`` or ``"LeaderChange"``. ``high_watermark``: the
    node's last checkpointed high watermark (exclusive end offset of its
    committed prefix), or None when the node wrote none.
    """

    name: str
    records: list[tuple[int, int, str, Any]]
    high_watermark: int | None = None


#: where a Kafka node's metadata dir is collected (``targets.kafka.db.KafkaDB.collect``)
KAFKA_METADATA_DIR = "metadata"
KAFKA_METADATA_PARTITION = "__cluster_metadata-0"


def _kafka_node_data(name: str, metadata_dir: Path) -> NodeData:
    """A Kafka controller's metadata log (``targets.kafka.metadata_log``): every record up to
    a torn tail or a corrupt batch; Kafka keeps the high watermark in memory only (None)."""
    from targets.kafka.metadata_log import read_metadata_dir
    parsed = read_metadata_dir(metadata_dir, strict=False)
    return NodeData(name, [(e.offset, e.epoch, e.type, e.payload) for e in parsed.entries], None)


def load_node_data(nodes_dir: Path | str) -> dict[str, NodeData]:
    """Read every ``nodes_dir/<node>/data`` into a :class:`NodeData`, keyed by node name.
    A Kafka node's ``nodes_dir/<node>/metadata/__cluster_metadata-0`` is read instead
    where it exists (:func:`_kafka_node_data`).

    Uses ``kraft.storage.logreader.read_data_dir`` (the valid records up to a torn
    tail, and the ``high-watermark`` checkpoint, a single integer as text;
    None if absent or unreadable). A node folder without ``data/`` is left
    out (its data could not be copied). Raises ``FileNotFoundError`` if
    ``nodes_dir`` is not a directory.
    """
    from kraft.storage import logreader  # imported here: the on-disk format belongs to kraft/

    nodes_dir = Path(nodes_dir)
    if not nodes_dir.is_dir():
        raise FileNotFoundError(f"{nodes_dir}: node data directory not found")
    out: dict[str, NodeData] = {}
    for node_dir in sorted(p for p in nodes_dir.iterdir() if p.is_dir()):
        data_dir = node_dir / "data"
        kafka_dir = node_dir / KAFKA_METADATA_DIR
        if (kafka_dir / KAFKA_METADATA_PARTITION).is_dir():
            out[node_dir.name] = _kafka_node_data(node_dir.name, kafka_dir)
            continue
        if not data_dir.is_dir():
            continue
        parsed = logreader.read_data_dir(data_dir)
        records = [(r.offset, r.epoch, r.type, r.payload) for r in parsed.records]
        out[node_dir.name] = NodeData(node_dir.name, records, parsed.high_watermark)
    return out
