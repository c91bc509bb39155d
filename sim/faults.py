"""The fault schedule of one simulated run: which faults start when, drawn from the schedule's
``random.Random`` before the run (so a schedule is data that shrinking can cut down).

A :class:`PlannedFault` is one fault: start time and duration (ms of virtual time), family,
kind and parameters. The families, their weights, kinds and parameters are their specs' (the
``sim`` hooks of faults/registry.py's ``SIMULATED``, drawn in that order; ``wipe`` and
``membership`` at kraft.version 1 only). Targets aimed at the leader are chosen when the fault
starts (sim/nemesis.py); the others are drawn here, as node indexes (``pick``).
"""
from __future__ import annotations

import dataclasses
import random

from faults import registry

#: the share of faults that last max_duration_ms..2 x max_duration_ms
LONG_FAULTS = 0.15
#: the first fault starts after this long (ms): a leader is elected first
FIRST_FAULT_MS = 2000.0


@dataclasses.dataclass(frozen=True)
class PlannedFault:
    """One planned fault: starts ``at_ms``, lasts ``duration_ms``; ``family``, ``kind``;
    ``params`` (sorted ``(name, value)`` pairs: ``pick`` a node index for the random kinds, a
    packet fault's settings, ``torn``, a clock jump's ``offset_ms``)."""

    at_ms: float
    duration_ms: float
    family: str
    kind: str
    params: tuple = ()

    def param(self, name: str, default=None):
        return dict(self.params).get(name, default)

    def describe(self) -> str:
        p = " ".join(f"{k}={v}" for k, v in self.params)
        return f"{self.family}/{self.kind} at {self.at_ms / 1000:.3f}s for {self.duration_ms / 1000:.3f}s {p}".strip()


def families_for(kraft_version: int, only: tuple[str, ...] | None = None) -> list[str]:
    """The families a schedule draws from, in the draw's order (faults/registry.py's
    ``SIMULATED``; those ``kraft_v1_only`` at kraft.version 1 alone; of ``only`` alone, unless
    None)."""
    return [f for f in registry.SIMULATED if (kraft_version == 1 or not registry.FAULTS[f].sim.kraft_v1_only)
            and (only is None or f in only)]


def _params(family: str, kind: str, rng: random.Random) -> dict:
    p: dict = {"pick": rng.randrange(1 << 16)}
    p.update(registry.FAULTS[family].sim.draw(kind, rng))
    return p


def draw_schedule(rng: random.Random, sim_ms: float, kraft_version: int, mean_gap_ms: float = 2500.0,
                  max_duration_ms: float = 5000.0, families: tuple[str, ...] | None = None) -> list[PlannedFault]:
    """Faults from ``FIRST_FAULT_MS`` to ``sim_ms - 1000``, about one per ``mean_gap_ms``, each
    lasting 0.3..``max_duration_ms`` (a share :data:`LONG_FAULTS` up to twice that); at most one
    active fault per family at a time; of ``families`` alone (None: all, :func:`families_for`;
    none of them playable: no faults)."""
    fams = families_for(kraft_version, families)
    if not fams:
        return []
    hooks = {f: registry.FAULTS[f].sim for f in fams}
    weights = [hooks[f].weight for f in fams]
    busy: dict[str, float] = {}
    out: list[PlannedFault] = []
    t = FIRST_FAULT_MS + rng.random() * mean_gap_ms
    while t < sim_ms - 1000:
        fam = rng.choices(fams, weights)[0]
        kind = rng.choice(hooks[fam].kinds)
        dur = 300 + rng.random() * (max_duration_ms - 300)
        if rng.random() < LONG_FAULTS:             # a long one: a stale leader shows only after seconds
            dur = max_duration_ms + rng.random() * max_duration_ms
        params = _params(fam, kind, rng)
        if busy.get(fam, 0) <= t:
            dur = min(dur, sim_ms - t)
            out.append(PlannedFault(round(t, 3), round(dur, 3), fam, kind, tuple(sorted(params.items()))))
            busy[fam] = t + dur + 1
        t += rng.expovariate(1 / mean_gap_ms)
    return out


def draw_client_ops(rng: random.Random, sim_ms: float, rate: float, concurrency: int,
                    read_fraction: float = 0.1) -> list[tuple[float, int, str]]:
    """Client ops ``(at_ms, slot, f)`` at ``rate`` ops/s in all (Poisson), f "append" or "read"."""
    out = []
    t = 200.0
    while True:
        t += rng.expovariate(rate / 1000.0)
        if t >= sim_ms:
            return out
        out.append((round(t, 3), rng.randrange(concurrency), "read" if rng.random() < read_fraction else "append"))
