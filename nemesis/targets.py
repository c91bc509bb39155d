"""Which nodes a kill or pause fault hits."""
from __future__ import annotations

import dataclasses
import random
from typing import Sequence

TARGET_MODES = ("one", "minority", "leader", "majority", "all")


@dataclasses.dataclass(frozen=True)
class TargetChoice:
    """The chosen nodes; ``leader_unknown`` is True when mode ``leader`` fell back to a random node."""

    targets: list[str]
    leader_unknown: bool = False


def minority_size(n: int) -> int:
    """Size of the largest minority of ``n`` voters, at least 1: ``max(1, (n - 1) // 2)``."""
    return max(1, (n - 1) // 2)


def majority_size(n: int) -> int:
    """Size of the smallest majority of ``n`` voters: ``n // 2 + 1``."""
    return n // 2 + 1


def choose_targets(mode: str, nodes: Sequence[str], rng: random.Random,
                   leader: str | None) -> TargetChoice:
    """Pick the nodes a fault hits.

    ``mode``: ``one`` (a random node), ``minority`` (a random set of
    :func:`minority_size` nodes, returned in cluster order) or ``leader``
    (``leader``, the current leader; when it is None or not one of
    ``nodes`` a random node is chosen and ``leader_unknown`` is set),
    ``majority`` (a random set of :func:`majority_size` nodes, always
    holding ``leader`` when it is one of ``nodes``, in cluster order) or
    ``all`` (every node; no random draw).
    Raises ``ValueError`` for an unknown mode or an empty node list.
    """
    nodes = list(nodes)
    if not nodes:
        raise ValueError("choose_targets: no nodes to choose from")
    if mode == "one":
        return TargetChoice([rng.choice(nodes)])
    if mode == "minority":
        chosen = set(rng.sample(nodes, minority_size(len(nodes))))
        return TargetChoice([n for n in nodes if n in chosen])
    if mode == "majority":
        first = [leader] if leader in nodes else []
        rest = [n for n in nodes if n not in first]
        chosen = set(first) | set(rng.sample(rest, majority_size(len(nodes)) - len(first)))
        return TargetChoice([n for n in nodes if n in chosen], leader_unknown=not first)
    if mode == "all":
        return TargetChoice(list(nodes))
    if mode == "leader":
        if leader is not None and leader in nodes:
            return TargetChoice([leader])
        return TargetChoice([rng.choice(nodes)], leader_unknown=True)
    raise ValueError(f"unknown target mode {mode!r}: choose from {', '.join(TARGET_MODES)}")
