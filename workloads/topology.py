"""Where a workload sends requests: node names, their addresses and node ids."""
from __future__ import annotations

import dataclasses
from typing import Mapping


@dataclasses.dataclass(frozen=True)
class Topology:
    """The client's view of the cluster.

    ``nodes`` are node names in order (``["n1", "n2", ...]``); ``addresses``
    maps each name to its client endpoint ``(host, port)``; ``ids`` maps each
    name to its KRaft node id (int). Raises ``ValueError`` when a node lacks an
    address or an id, or two nodes share an id.
    """

    nodes: tuple[str, ...]
    addresses: Mapping[str, tuple[str, int]]
    ids: Mapping[str, int]

    def __post_init__(self) -> None:
        if not self.nodes:
            raise ValueError("topology has no nodes")
        for n in self.nodes:
            if n not in self.addresses:
                raise ValueError(f"topology: node {n!r} has no address")
            if n not in self.ids:
                raise ValueError(f"topology: node {n!r} has no node id")
        if len(set(self.ids[n] for n in self.nodes)) != len(self.nodes):
            raise ValueError(f"topology: node ids are not unique: {dict(self.ids)}")

    @classmethod
    def from_db(cls, db, nodes) -> "Topology":
        """Build from a ``harness.db.KraftDB`` (``address(node)``, ``node_id(node)``)."""
        nodes = tuple(nodes)
        return cls(nodes, {n: tuple(db.address(n)) for n in nodes},
                   {n: int(db.node_id(n)) for n in nodes})

    def node_for_id(self, node_id: int | None) -> str | None:
        """The node name whose KRaft id is ``node_id``; None when unknown or None."""
        if node_id is None:
            return None
        for n in self.nodes:
            if self.ids[n] == node_id:
                return n
        return None
