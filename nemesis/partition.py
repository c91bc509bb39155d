"""Network partitions with iptables inside the nodes, one chain per fault slot.

A grudge (see :mod:`nemesis.grudge`) becomes, on each node A, one rule per
node B in ``grudge[A]``: ``iptables -A KC-<slot> -s <ip(B)> -j DROP``, in a
chain of its own jumped to from INPUT. A symmetric grudge cuts both
directions. An asymmetric one is a one-way partition (B's packets to A are
lost, A's to B arrive); it is applied ``outgoing``: dropped on the sender's
OUTPUT instead (``iptables -A KC-<slot>-o -d <ip(A)> -j DROP`` on B), so
the packets never leave it. Each slot (the default ``partition``, a
flapping partition, a targeted fault's) has its own chains, so overlapping
faults heal independently; :data:`HEAL_ALL_COMMAND` flushes every ``KC-`` chain (and no
other rule: on the ssh backend the node's firewall is its host's own).

:data:`INJECTOR` is the ``partition`` family's (which grudge each kind draws:
nemesis/partition_kinds.py).
"""
from __future__ import annotations

import re
import shlex
from typing import Callable

from clusters.parallel import on_nodes
from clusters.remote import Cluster
from faults.partition import SPEC
from nemesis.grudge import Grudge, grudge_to_json
from nemesis.injector import Injector

#: flushes every rule of ours on a node (every KC- chain; the jumps to them stay), for heal_all;
#: fails when ``iptables -S`` does
HEAL_ALL_COMMAND = ('rules=$(iptables -w -S) && printf "%s\\n" "$rules" | while read -r a c rest; do '
                    '[ "$a" = -N ] || continue; case "$c" in KC-*) iptables -w -F "$c" || exit 1;; esac; done')


def chain(slot: str, outgoing: bool = False) -> str:
    """The iptables chain of fault slot ``slot``: ``KC-<slot>`` (INPUT), ``KC-<slot>-o``
    (OUTPUT); at most 28 characters.

    Raises ValueError for a slot that is not 1..23 letters, digits, ``-`` or ``_``.
    """
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,23}", slot or ""):
        raise ValueError(f"bad fault slot {slot!r}: 1..23 letters, digits, '-' or '_'")
    return f"KC-{slot}-o" if outgoing else f"KC-{slot}"


def ensure_chain_command(slot: str, outgoing: bool = False) -> str:
    """sh: create the slot's chain if missing and jump to it from INPUT (OUTPUT), once."""
    c, hook = chain(slot, outgoing), "OUTPUT" if outgoing else "INPUT"
    return (f"{{ iptables -w -N {c} 2>/dev/null || true; }} && "
            f"{{ iptables -w -C {hook} -j {c} 2>/dev/null || iptables -w -I {hook} -j {c}; }}")


def heal_command(slot: str) -> str:
    """sh: flush the slot's chains (nothing to do where they do not exist)."""
    return (f"{{ iptables -w -F {chain(slot)} 2>/dev/null || true; }} && "
            f"{{ iptables -w -F {chain(slot, True)} 2>/dev/null || true; }}")


def drop_commands(grudge: Grudge, ip: Callable[[str], str], slot: str = "partition",
                  match: str = "", outgoing: bool = False) -> dict[str, list[str]]:
    """The iptables rules that apply ``grudge`` in ``slot``'s chain: ``{node: [command, ...]}``.

    ``ip(node)`` gives a node's address; ``match`` is extra iptables match
    text (e.g. ``-m statistic --mode random --probability 0.2`` for packet
    loss instead of a cut). ``outgoing``: drop on the senders' OUTPUT (rules
    keyed by sender, ``-d`` the receiver) instead of the receivers' INPUT.
    Nodes with nothing to drop get an empty list; rules are sorted by node
    name, so the output is deterministic. Raises ``ValueError`` if a grudge
    names a node that is not a key of the grudge.
    """
    unknown = {b for drops in grudge.values() for b in drops} - set(grudge)
    if unknown:
        raise ValueError(f"grudge drops packets from unknown node(s) {sorted(unknown)}")
    c = chain(slot, outgoing)
    extra = f" {match}" if match else ""
    if not outgoing:
        return {node: [f"iptables -w -A {c} -s {shlex.quote(ip(src))}{extra} -j DROP" for src in sorted(drops)]
                for node, drops in grudge.items()}
    out: dict[str, list[str]] = {node: [] for node in grudge}
    for receiver in sorted(grudge):
        for sender in sorted(grudge[receiver]):
            out[sender].append(f"iptables -w -A {c} -d {shlex.quote(ip(receiver))}{extra} -j DROP")
    return out


class Partitioner:
    """Applies grudges to a :class:`~clusters.remote.Cluster` and heals them, per slot."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster

    def apply(self, grudge: Grudge, slot: str = "partition", match: str = "",
              outgoing: bool = False) -> dict[str, list[str]]:
        """Install the DROP rules of ``grudge`` in ``slot``'s chain on all nodes in parallel
        (on the senders' OUTPUT with ``outgoing``).

        Returns the rules per node (see :func:`drop_commands`); a node with
        no rules gets no exec. Raises ``clusters.parallel.NodeErrors`` if the
        command failed on any node (the others are still applied).
        """
        commands = drop_commands(grudge, self.cluster.ip, slot, match, outgoing)

        def run(node: str) -> None:
            self.cluster.remote.exec(node, " && ".join([ensure_chain_command(slot, outgoing),
                                                        *commands[node]]), check=True)

        on_nodes([n for n, cmds in commands.items() if cmds], run, what="partition")
        return commands

    def heal(self, slot: str = "partition", nodes: list[str] | None = None) -> None:
        """Flush ``slot``'s chain on ``nodes`` (default: every node), in parallel.

        Idempotent. Raises ``clusters.parallel.NodeErrors`` if a flush failed.
        """
        targets = list(self.cluster.nodes if nodes is None else nodes)
        on_nodes(targets, lambda node: self.cluster.remote.exec(node, heal_command(slot), check=True),
                 what="partition heal")

    def heal_all(self, nodes: list[str] | None = None) -> None:
        """Flush every chain (every slot, INPUT and OUTPUT) on ``nodes`` (default: all)."""
        targets = list(self.cluster.nodes if nodes is None else nodes)
        on_nodes(targets, lambda node: self.cluster.remote.exec(node, HEAL_ALL_COMMAND, check=True),
                 what="partition heal")


#: partition kinds applied on the senders' OUTPUT: their packets never leave them
ONE_WAY_KINDS = ("one-way-leader", "one-way-one")


def _start(ctl, fault, value: dict, waited) -> bool:
    g, targets, leader_unknown = ctl.grudge(fault.kind, fault.targets, grudge=fault.params.get("grudge"),
                                            waited=waited)
    value.update(targets=targets, grudge=grudge_to_json(g))
    ctl.hold(fault, targets or ctl.nodes)
    ctl.partitioner.apply(g, fault.key, outgoing=fault.kind in ONE_WAY_KINDS)
    return leader_unknown


def heal_slot(ctl, fault, targets: list[str], out: dict) -> None:
    """The stop of a fault whose rules live in its slot's chains (partition, flap): flush them."""
    ctl.partitioner.heal(fault.key)


INJECTOR = Injector(SPEC, _start, heal_slot)
