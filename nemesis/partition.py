"""Network partitions with iptables inside the nodes.

A grudge (see :mod:`nemesis.grudge`) becomes, on each node A, one rule per
node B in ``grudge[A]``: ``iptables -A INPUT -s <ip(B)> -j DROP -w``. Since
every grudge we build is symmetric where it should be, dropping on INPUT
alone cuts both directions. Healing flushes INPUT and OUTPUT on every node.
"""
from __future__ import annotations

import shlex
from typing import Callable

from clusters.remote import Cluster
from nemesis.grudge import Grudge
from nemesis.parallel import on_nodes

HEAL_COMMAND = "iptables -F INPUT -w && iptables -F OUTPUT -w"


def drop_commands(grudge: Grudge, ip: Callable[[str], str]) -> dict[str, list[str]]:
    """The iptables commands that apply ``grudge``: ``{node: [command, ...]}``.

    ``ip(node)`` gives a node's address. Nodes with nothing to drop get an
    empty list. Sources are sorted by node name, so the output is
    deterministic. Raises ``ValueError`` if a grudge names a node that is
    not a key of the grudge.
    """
    unknown = {b for drops in grudge.values() for b in drops} - set(grudge)
    if unknown:
        raise ValueError(f"grudge drops packets from unknown node(s) {sorted(unknown)}")
    return {
        node: [f"iptables -A INPUT -s {shlex.quote(ip(src))} -j DROP -w" for src in sorted(drops)]
        for node, drops in grudge.items()
    }


class Partitioner:
    """Applies grudges to a :class:`~clusters.remote.Cluster` and heals them."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster

    def apply(self, grudge: Grudge) -> dict[str, list[str]]:
        """Install the DROP rules of ``grudge`` on all nodes in parallel.

        Returns the commands run per node (see :func:`drop_commands`); a node
        with no rules gets no exec. Raises ``nemesis.parallel.NodeErrors``
        if the command failed on any node (the others are still applied).
        """
        commands = drop_commands(grudge, self.cluster.ip)

        def run(node: str) -> None:
            self.cluster.remote.exec(node, " && ".join(commands[node]), check=True)

        on_nodes([n for n, cmds in commands.items() if cmds], run, what="partition")
        return commands

    def heal(self, nodes: list[str] | None = None) -> None:
        """Flush INPUT and OUTPUT on ``nodes`` (default: every node), in parallel.

        Idempotent. Raises ``nemesis.parallel.NodeErrors`` if a flush failed.
        """
        targets = list(self.cluster.nodes if nodes is None else nodes)
        on_nodes(targets, lambda node: self.cluster.remote.exec(node, HEAL_COMMAND, check=True),
                 what="partition heal")
