"""``meta.properties``: the node id, cluster id and directory id of a data dir (KIP-853).

Written once by ``python3 -m kraft format``; checked at every start.
"""
from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

from .durable import make_dirs, write_atomic

FILE = "meta.properties"


class MetaError(RuntimeError):
    """The data dir is unformatted, malformed, or formatted for another node or cluster."""


@dataclasses.dataclass(frozen=True)
class Meta:
    """Identity of a data dir: ``node_id`` (int), ``cluster_id`` (str), ``directory_id`` (UUID str)."""

    node_id: int
    cluster_id: str
    directory_id: str


def parse_properties(text: str) -> dict[str, str]:
    """Parse ``key=value`` lines, skipping blanks and ``#`` comments."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def format_dir(data_dir: Path, cluster_id: str, node_id: int, directory_id: str | None = None) -> Meta:
    """Create ``data_dir`` and write a fresh meta.properties with ``directory_id`` (default: a
    new random UUID; KIP-853 ``format --initial-controllers`` passes this node's).

    Raises MetaError if it is already formatted, or the cluster id or directory id is bad.
    """
    if directory_id is not None and (not directory_id or any(c.isspace() for c in directory_id)):
        raise MetaError(f"invalid directory id {directory_id!r}")
    if not cluster_id or any(c.isspace() for c in cluster_id):
        raise MetaError(f"invalid cluster id {cluster_id!r}")
    data_dir = Path(data_dir)
    make_dirs(data_dir)
    path = data_dir / FILE
    if path.exists():
        raise MetaError(f"{path} already exists: the data dir is already formatted "
                        f"({read_meta(data_dir)})")
    meta = Meta(node_id, cluster_id, directory_id or str(uuid.uuid4()))
    write_atomic(path, (f"version=1\nnode.id={node_id}\ncluster.id={cluster_id}\n"
                        f"directory.id={meta.directory_id}\n").encode())
    return meta


def read_meta(data_dir: Path) -> Meta:
    """Read meta.properties. Raises MetaError if missing or malformed."""
    path = Path(data_dir) / FILE
    try:
        props = parse_properties(path.read_text())
        return Meta(int(props["node.id"]), props["cluster.id"], props["directory.id"])
    except FileNotFoundError:
        raise MetaError(f"{path} not found: format the data dir with "
                        f"`python3 -m kraft format` first") from None
    except (KeyError, ValueError) as e:
        raise MetaError(f"{path} is malformed: {e!r}") from None


def check_meta(data_dir: Path, node_id: int, cluster_id: str | None) -> Meta:
    """Read meta.properties and refuse a data dir formatted for another node or cluster.

    Raises MetaError naming both ids when they differ.
    """
    meta = read_meta(data_dir)
    if meta.node_id != node_id:
        raise MetaError(f"data dir {data_dir} was formatted for node {meta.node_id}, "
                        f"but this node is {node_id}")
    if cluster_id is not None and meta.cluster_id != cluster_id:
        raise MetaError(f"data dir {data_dir} was formatted for cluster {meta.cluster_id!r}, "
                        f"but this node is configured for cluster {cluster_id!r}")
    return meta
