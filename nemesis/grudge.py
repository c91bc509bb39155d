"""Grudges: which nodes each node drops packets from.

A grudge is a ``dict[str, set[str]]`` mapping every node to the set of nodes
whose packets it drops (Jepsen's ``jepsen.nemesis`` terminology). Every node
of the cluster is a key, possibly with an empty set. The functions here are
pure: randomness comes only from the ``random.Random`` passed in.
"""
from __future__ import annotations

import random
from typing import Iterable, Sequence

Grudge = dict[str, set[str]]


def _check_nodes(nodes: Sequence[str], minimum: int, what: str) -> list[str]:
    """Return ``nodes`` as a list; raise ``ValueError`` if duplicated or too few."""
    nodes = list(nodes)
    if len(set(nodes)) != len(nodes):
        raise ValueError(f"{what}: duplicate node names in {nodes!r}")
    if len(nodes) < minimum:
        raise ValueError(f"{what}: needs at least {minimum} nodes, got {len(nodes)} ({nodes!r})")
    return nodes


def majority(n: int) -> int:
    """The smallest majority of ``n`` voters: ``n // 2 + 1``."""
    return n // 2 + 1


def complete_grudge(components: Iterable[Iterable[str]]) -> Grudge:
    """Grudge in which each component can talk only to itself (Jepsen's complete-grudge).

    ``components``: disjoint groups of node names, e.g. ``[["n1", "n2"], ["n3"]]``.
    Every node drops packets from every node outside its own component.
    Raises ``ValueError`` if a node appears in two components.
    """
    comps = [list(c) for c in components]
    everyone: set[str] = set()
    for comp in comps:
        overlap = everyone.intersection(comp)
        if overlap or len(set(comp)) != len(comp):
            raise ValueError(f"complete_grudge: components overlap on {sorted(overlap) or comp!r}")
        everyone.update(comp)
    return {node: everyone - set(comp) for comp in comps for node in comp}


def bisect(nodes: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split ``nodes`` in order into (first, second) with ``len(first) == len(nodes) // 2``.

    The second half is the larger one when ``len(nodes)`` is odd (Jepsen's bisect).
    """
    nodes = list(nodes)
    half = len(nodes) // 2
    return nodes[:half], nodes[half:]


def random_halves(nodes: Sequence[str], rng: random.Random) -> Grudge:
    """Cut the cluster into two random halves (minority ``n // 2``, majority the rest).

    Raises ``ValueError`` for fewer than 2 nodes or duplicate names.
    """
    nodes = _check_nodes(nodes, 2, "random-halves")
    shuffled = list(nodes)
    rng.shuffle(shuffled)
    return complete_grudge(bisect(shuffled))


def isolate(nodes: Sequence[str], target: str) -> Grudge:
    """Isolate ``target`` from every other node, in both directions.

    Raises ``ValueError`` if ``target`` is not one of ``nodes`` or there are
    fewer than 2 nodes.
    """
    nodes = _check_nodes(nodes, 2, "isolate")
    if target not in nodes:
        raise ValueError(f"isolate: target {target!r} is not one of {nodes!r}")
    return complete_grudge([[target], [n for n in nodes if n != target]])


def isolate_one(nodes: Sequence[str], rng: random.Random) -> Grudge:
    """Isolate one node chosen with ``rng`` (see :func:`isolate`)."""
    nodes = _check_nodes(nodes, 2, "isolate-one")
    return isolate(nodes, rng.choice(nodes))


def majorities_ring(nodes: Sequence[str], rng: random.Random) -> Grudge:
    """Each node sees a majority (itself included), and no two nodes see the same one.

    Jepsen's majorities-ring: the nodes are shuffled into a ring; each node
    sees the ``majority(n)`` consecutive nodes centred on itself and drops
    packets from the rest. Designed for 5 nodes (each sees its two ring
    neighbours); with an odd majority the grudge is symmetric. Raises
    ``ValueError`` for fewer than 3 nodes.
    """
    nodes = _check_nodes(nodes, 3, "majorities-ring")
    ring = list(nodes)
    rng.shuffle(ring)
    n, m = len(ring), majority(len(ring))
    everyone = set(ring)
    grudge: Grudge = {}
    for start in range(n):
        window = [ring[(start + k) % n] for k in range(m)]
        centre = window[m // 2]
        grudge[centre] = everyone - set(window)
    return grudge


def bridge(nodes: Sequence[str], rng: random.Random) -> Grudge:
    """Two halves that cannot see each other, joined by one node that sees both.

    Jepsen's bridge: shuffle, bisect; the first node of the larger half is
    the bridge. The halves drop each other's packets; nobody drops the
    bridge's and the bridge drops nobody's. Raises ``ValueError`` for fewer
    than 3 nodes.
    """
    nodes = _check_nodes(nodes, 3, "bridge")
    shuffled = list(nodes)
    rng.shuffle(shuffled)
    left, right = bisect(shuffled)
    middle, right = right[0], right[1:]
    grudge = complete_grudge([left, right])
    grudge[middle] = set()
    return grudge


def one_way(nodes: Sequence[str], sender: str, receivers: Iterable[str] | None = None) -> Grudge:
    """``sender``'s packets to ``receivers`` (default: every other node) are dropped; the
    other direction works. A one-way partition: the receivers drop what ``sender`` sends.

    Over TCP this means requests from a receiver still reach ``sender``
    (and may act there) while every answer is lost. Raises ``ValueError``
    for fewer than 2 nodes or names that are not in ``nodes``.
    """
    nodes = _check_nodes(nodes, 2, "one-way")
    receivers = [n for n in nodes if n != sender] if receivers is None else list(receivers)
    unknown = ({sender} | set(receivers)) - set(nodes)
    if unknown:
        raise ValueError(f"one-way: {sorted(unknown)} not in {nodes!r}")
    grudge: Grudge = {n: set() for n in nodes}
    for r in receivers:
        if r != sender:
            grudge[r].add(sender)
    return grudge


def diamond(nodes: Sequence[str], a: str, b: str) -> Grudge:
    """A partial partition: ``a`` and ``b`` cannot reach each other; every other link works,
    so each of them still sees a majority through the rest (Kafka's simulation's
    partial partitions; KAFKA-17641). Raises ``ValueError`` for ``a == b``, names not in
    ``nodes`` or fewer than 3 nodes."""
    nodes = _check_nodes(nodes, 3, "diamond")
    if a == b or a not in nodes or b not in nodes:
        raise ValueError(f"diamond: needs two different nodes of {nodes!r}, got {a!r} and {b!r}")
    grudge: Grudge = {n: set() for n in nodes}
    grudge[a].add(b)
    grudge[b].add(a)
    return grudge


def grudge_to_json(grudge: Grudge) -> dict[str, list[str]]:
    """The grudge with sorted lists instead of sets, for the history."""
    return {node: sorted(drops) for node, drops in sorted(grudge.items())}


def sees(grudge: Grudge, node: str) -> set[str]:
    """The nodes whose packets ``node`` accepts (itself included), given all keys of ``grudge``."""
    return set(grudge) - grudge[node]
