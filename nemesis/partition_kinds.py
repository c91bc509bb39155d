"""What each partition kind cuts: the grudge (:mod:`nemesis.grudge`) a ``partition`` or
``flap`` fault of a kind draws, and the nodes it targets.

Randomness comes only from the ``random.Random`` passed in; the current leader only from
the ``leader`` callable, asked by the leader-aimed kinds alone.
"""
from __future__ import annotations

import random
from typing import Callable, Sequence

from nemesis import grudge as grudges
from nemesis.faults import EXPLICIT
from nemesis.targets import choose_targets, minority_size


def partition_grudge(kind: str, nodes: Sequence[str], rng: random.Random, leader: Callable[[], str | None],
                     targets: tuple[str, ...] | None = None,
                     grudge: dict | None = None) -> tuple[grudges.Grudge, list[str], bool]:
    """(grudge, targets, leader_unknown) for a partition kind over ``nodes``, drawn from
    ``rng``. Kind ``nodes`` cuts ``targets`` off from the rest, or applies ``grudge``
    (``{node: [nodes it drops]}``) as given (:func:`given_grudge`). A leader-aimed kind aims
    at the node ``leader()`` names (a random node, and leader_unknown, when it names none of
    ``nodes``). Raises ``ValueError`` for an unknown kind or bad explicit targets or grudge."""
    nodes = list(nodes)
    if kind == EXPLICIT and grudge is not None:
        g = given_grudge(grudge, nodes)
        touched = {n for n, drops in g.items() if drops} | {x for drops in g.values() for x in drops}
        return g, [n for n in nodes if n in touched], False
    if kind == EXPLICIT:
        unknown = set(targets or ()) - set(nodes)
        if unknown or not targets:
            raise ValueError(f"nemesis partition: explicit targets {targets!r} must be nodes of {nodes}")
        group = [n for n in nodes if n in targets]
        return grudges.complete_grudge([group, [n for n in nodes if n not in group]]), group, False
    if kind == "random-halves":
        g = grudges.random_halves(nodes, rng)
        components = sorted({frozenset(grudges.sees(g, n)) for n in nodes},
                            key=lambda c: (len(c), sorted(c)))
        return g, sorted(components[0], key=nodes.index), False
    if kind == "isolate-one":
        target = rng.choice(nodes)
        return grudges.isolate(nodes, target), [target], False
    if kind in ("isolate-leader", "one-way-leader", "leader-diamond", "leader-minority"):
        choice = choose_targets("leader", nodes, rng, leader())
        chosen = choice.targets[0]
        if kind == "isolate-leader":
            g = grudges.isolate(nodes, chosen)
        elif kind == "leader-minority":     # the leader keeps the largest minority it can
            others = [n for n in nodes if n != chosen]
            side = [chosen] + rng.sample(others, minority_size(len(nodes)) - 1)
            side = sorted(side, key=nodes.index)
            g = grudges.complete_grudge([side, [n for n in nodes if n not in side]])
            return g, side, choice.leader_unknown
        elif kind == "one-way-leader":
            g = grudges.one_way(nodes, chosen)
        else:
            other = rng.choice([n for n in nodes if n != chosen])
            g = grudges.diamond(nodes, chosen, other)
            return g, [chosen, other], choice.leader_unknown
        return g, [chosen], choice.leader_unknown
    if kind == "one-way-one":
        target = rng.choice(nodes)
        return grudges.one_way(nodes, target), [target], False
    if kind == "diamond":
        a, b = rng.sample(nodes, 2)
        return grudges.diamond(nodes, a, b), sorted([a, b], key=nodes.index), False
    if kind == "majorities-ring":
        return grudges.majorities_ring(nodes, rng), nodes, False
    if kind == "bridge":
        g = grudges.bridge(nodes, rng)
        return g, [n for n in nodes if not g[n]], False
    raise ValueError(f"unknown partition kind {kind!r}")


def given_grudge(grudge, nodes: Sequence[str]) -> grudges.Grudge:
    """A partition's explicit ``grudge`` (``{node: [nodes it drops]}``; nodes left out drop
    nothing) as a full grudge over ``nodes``; ValueError unless it names only nodes and cuts
    something."""
    nodes = list(nodes)
    if not isinstance(grudge, dict) or not all(
            n in nodes and isinstance(d, (list, tuple, set)) and all(x in nodes for x in d)
            for n, d in grudge.items()):
        raise ValueError(f"nemesis partition: grudge {grudge!r} must map nodes of {nodes} "
                         f"to lists of those nodes")
    g = {n: set(grudge.get(n, ())) - {n} for n in nodes}
    if not any(g.values()):
        raise ValueError(f"nemesis partition: grudge {grudge!r} cuts nothing")
    return g
