"""Our quorum's node data in a stored run: ``nodes/<node>/data/``, read offline.

``KraftDB.collect`` (targets/kraft_db.py) copies each node's data dir to
``nodes/<node>/data/``: log segments, ``quorum-state``, ``meta.properties`` and the
``high-watermark`` checkpoint. :data:`KRAFT_NODE_DATA` is the reader
``TargetSpec.node_data`` names for ``--db kraft`` (targets/registry.py); it parses with
:func:`kraft.storage.logreader.read_data_dir`.
"""
from __future__ import annotations

from pathlib import Path

from history.node_data import NodeData, NodeDataReader
from kraft.storage import logreader

#: where in a node's store folder ``KraftDB.collect`` puts the node's data dir
DATA_DIR = "data"


def holds(node_dir: Path) -> bool:
    """Whether ``node_dir`` (``nodes/<node>``) holds a copied data dir."""
    return (node_dir / DATA_DIR).is_dir()


def read(name: str, node_dir: Path) -> NodeData:
    """Node ``name``'s log from ``node_dir/data``: the valid records up to a torn tail
    (:func:`kraft.storage.logreader.read_data_dir`), as ``(offset, epoch, type, payload)``,
    and its ``high-watermark`` checkpoint (None if absent or unreadable). Raises
    ``FileNotFoundError`` when there is no ``data/``."""
    parsed = logreader.read_data_dir(node_dir / DATA_DIR)
    records = [(r.offset, r.epoch, r.type, r.payload) for r in parsed.records]
    return NodeData(name, records, parsed.high_watermark)


#: the node data reader of ``--db kraft``
KRAFT_NODE_DATA = NodeDataReader(holds=holds, read=read)
