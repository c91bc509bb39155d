"""Kafka's node data in a stored run: each node's ``__cluster_metadata-0``, read offline.

``KafkaDB.collect`` (targets/kafka/db.py) copies each node's metadata log dir to
``nodes/<node>/metadata/`` (``meta.properties``, ``__cluster_metadata-0/`` with its
segments, snapshots and ``quorum-state``). :data:`KAFKA_NODE_DATA` is the reader
``TargetSpec.node_data`` names for ``--db kafka`` (targets/registry.py); it parses with
:func:`targets.kafka.metadata_log.read_metadata_dir`.
"""
from __future__ import annotations

from pathlib import Path

from history.node_data import NodeData, NodeDataReader

from .metadata_log import PARTITION_DIR, read_metadata_dir

#: where in a node's store folder ``KafkaDB.collect`` puts the node's metadata log dir
METADATA_DIR = "metadata"


def holds(node_dir: Path) -> bool:
    """Whether ``node_dir`` (``nodes/<node>``) holds a copied ``metadata/__cluster_metadata-0``."""
    return (node_dir / METADATA_DIR / PARTITION_DIR).is_dir()


def read(name: str, node_dir: Path) -> NodeData:
    """Node ``name``'s metadata log from ``node_dir/metadata``: every record up to a torn
    tail or a corrupt batch (``read_metadata_dir(strict=False)``), as ``(offset, epoch,
    type, payload)``. Kafka keeps the metadata partition's high watermark in memory only,
    so ``high_watermark`` is None. Raises ``FileNotFoundError`` when there is no
    ``__cluster_metadata-0``, ``targets.kafka.record_batch.UnsupportedCodecError`` for a
    batch compressed with a codec the reader lacks."""
    parsed = read_metadata_dir(node_dir / METADATA_DIR, strict=False)
    return NodeData(name, [(e.offset, e.epoch, e.type, e.payload) for e in parsed.entries], None)


#: the node data reader of ``--db kafka``
KAFKA_NODE_DATA = NodeDataReader(holds=holds, read=read)
