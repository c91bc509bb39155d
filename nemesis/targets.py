"""Which nodes a kill or pause fault hits."""
from __future__ import annotations

import dataclasses
import random
from typing import Sequence

TARGET_MODES = ("one", "minority", "leader")


@dataclasses.dataclass(frozen=True)
class TargetChoice:
    """The chosen nodes; ``leader_unknown`` is True when mode ``leader`` fell back to a random node."""

    targets: list[str]
    leader_unknown: bool = False


def minority_size(n: int) -> int:
    """Size of the largest minority of ``n`` voters, at least 1: ``max(1, (n - 1) // 2)``."""
    return max(1, (n - 1) // 2)


def choose_targets(mode: str, nodes: Sequence[str], rng: random.Random,
                   leader: str | None) -> TargetChoice:
    """Pick the nodes a fault hits.

    ``mode``: ``one`` (a random node), ``minority`` (a random set of
    :func:`minority_size` nodes, returned in cluster order) or ``leader``
    (``leader``, the current leader; when it is None or not one of
    ``nodes`` a random node is chosen and ``leader_unknown`` is set).
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
    if mode == "leader":
        if leader is not None and leader in nodes:
            return TargetChoice([leader])
        return TargetChoice([rng.choice(nodes)], leader_unknown=True)
    raise ValueError(f"unknown target mode {mode!r}: choose from {', '.join(TARGET_MODES)}")
