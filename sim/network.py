"""The simulated network between nodes: cuts (a grudge: directed links that drop everything,
so one-way and partial partitions are grudges too) and packet faults per directed link
(extra delay and jitter, so messages reorder; loss; duplication).

Pure decisions from the schedule's network ``random.Random``: :meth:`Network.fate` says
when (if ever) one message arrives, and whether a copy arrives too. Clients are not on
these links (Jepsen's clients reach every node from the control node).
"""
from __future__ import annotations

import dataclasses
import random


@dataclasses.dataclass(frozen=True)
class LinkFault:
    """A packet fault on a directed link: ``delay_ms`` added (plus up to ``jitter_ms``,
    uniform), ``loss`` and ``duplicate`` probabilities (0..1)."""

    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    loss: float = 0.0
    duplicate: float = 0.0


class Network:
    """Links between node ids. ``latency_ms`` is every message's base one-way time, plus up
    to ``jitter_ms`` (uniform) from ``rng``."""

    def __init__(self, rng: random.Random, latency_ms: float = 1.0, jitter_ms: float = 0.5):
        self.rng = rng
        self.latency, self.jitter = latency_ms, jitter_ms
        self.cut: set[tuple[int, int]] = set()            # (src, dst): dst drops src's packets
        self.faults: dict[tuple[int, int], LinkFault] = {}

    def grudge(self, drops: dict[int, list[int]]) -> None:
        """Apply a grudge ``{dst: [src, ...]}`` (dst drops what src sends), on top of the cuts."""
        for dst, srcs in drops.items():
            for src in srcs:
                if src != dst:
                    self.cut.add((src, dst))

    def heal_cuts(self) -> None:
        """Remove every cut."""
        self.cut.clear()

    def shape(self, links: list[tuple[int, int]], fault: LinkFault) -> None:
        """Put ``fault`` on each directed link ``(src, dst)``."""
        for link in links:
            self.faults[link] = fault

    def heal_packets(self) -> None:
        """Remove every packet fault."""
        self.faults.clear()

    def fate(self, src: int, dst: int) -> tuple[float | None, float | None]:
        """``(delay, copy)`` in ms for one message from ``src`` to ``dst``: delay None when it is
        lost; copy the delay of a duplicate, or None."""
        if (src, dst) in self.cut:
            return None, None
        rng = self.rng
        delay = self.latency + rng.random() * self.jitter
        f = self.faults.get((src, dst)) if self.faults else None
        if f is None:
            return delay, None
        if f.loss and rng.random() < f.loss:
            return None, None
        delay += f.delay_ms + rng.random() * f.jitter_ms
        copy = None
        if f.duplicate and rng.random() < f.duplicate:
            copy = delay + rng.random() * (f.jitter_ms + 1.0)
        return delay, copy
