"""A stored run's node data (``nodes/<node>/``) in one shape, whatever the target.

After a run the runner copies each node's durable state into ``nodes/<node>/``
(``targets.base.DB.collect``); its layout is the target's own (our quorum's ``data/``,
Kafka's ``metadata/__cluster_metadata-0``). Each target reads it with its own
:class:`NodeDataReader` (``TargetSpec.node_data`` in targets/registry.py) into a
:class:`NodeData` per node, the only form in which the checkers see it.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable


@dataclasses.dataclass
class NodeData:
    """One node's log as found in its data dir after the run.

    ``records``: ``[(offset, epoch, type, payload), ...]`` in log order,
    ``type`` being ``"data"``, ``"LeaderChange"`` or another record type the
    target names (e.g. ``"KRaftVoters"``). ``high_watermark``: the node's last
    checkpointed high watermark (exclusive end offset of its committed prefix),
    or None when the node wrote none (Kafka keeps it in memory only).
    """

    name: str
    records: list[tuple[int, int, str, Any]]
    high_watermark: int | None = None


@dataclasses.dataclass(frozen=True)
class NodeDataReader:
    """How one target's node data is read from a node's folder ``nodes/<node>/``.

    ``holds(node_dir) -> bool``: whether the folder holds node data this reader reads
    (cheap: looks at the layout only, reads no log). ``read(name, node_dir) ->``
    :class:`NodeData`: the node's records up to a torn tail or a damaged batch (raises
    ``OSError`` when a file cannot be read, and what the target's parser raises for content
    it cannot parse at all, e.g. a Kafka batch in a codec it lacks); called only where
    ``holds`` is true. Both must be module-level functions (the Spark analysis
    ships the reader to its executors).
    """

    holds: Callable[[Path], bool]
    read: Callable[[str, Path], NodeData]


def read_nodes(nodes_dir: Path | str, reader: NodeDataReader) -> dict[str, NodeData]:
    """Every node of ``nodes_dir`` (a run's ``nodes/``) whose folder holds node data
    (``reader.holds``), read by ``reader``, keyed by node name in name order. A folder
    without it is left out (its data could not be copied). Raises ``FileNotFoundError``
    if ``nodes_dir`` is not a directory."""
    nodes_dir = Path(nodes_dir)
    if not nodes_dir.is_dir():
        raise FileNotFoundError(f"{nodes_dir}: node data directory not found")
    return {d.name: reader.read(d.name, d) for d in sorted(nodes_dir.iterdir())
            if d.is_dir() and reader.holds(d)}


def holds_node_data(nodes_dir: Path | str, reader: NodeDataReader) -> bool:
    """Whether any node folder of ``nodes_dir`` holds node data ``reader`` reads (False
    when ``nodes_dir`` is not a directory). Reads no log."""
    nodes_dir = Path(nodes_dir)
    return nodes_dir.is_dir() and any(d.is_dir() and reader.holds(d) for d in nodes_dir.iterdir())
