"""The fault schedule of one simulated run: which faults start when, drawn from the schedule's
``random.Random`` before the run (so a schedule is data that shrinking can cut down).

A :class:`FaultSpec` is one fault: start time and duration (ms of virtual time), family,
kind and parameters. Families (DEVELOPERS.md "Nemesis ops" names where they match a real
one): ``partition`` (isolate-one, isolate-leader, random-halves, one-way-one,
one-way-leader, bridge, diamond: two nodes cut from each other only), ``packet`` (delay,
loss, duplicate, reorder on the links from the targets), ``kill``, ``power-loss`` (torn
writes or not), ``pause``, ``clock`` (one node's wall clock jumps), and at kraft.version 1
``wipe`` and ``membership`` (remove a voter, add it back). Targets aimed at the leader are
chosen when the fault starts (sim/nemesis.py); the others are drawn here, as node indexes.
"""
from __future__ import annotations

import dataclasses
import random

PARTITIONS = ("isolate-one", "isolate-leader", "random-halves", "one-way-one", "one-way-leader", "bridge",
              "diamond")
PACKETS = ("delay", "loss", "duplicate", "reorder")
#: family -> (weight, kinds); wipe and membership only at kraft.version 1
FAMILIES = {
    "partition": (5, PARTITIONS),
    "packet": (2, PACKETS),
    "kill": (2, ("one", "leader", "minority")),
    "power-loss": (2, ("one", "leader", "majority", "all")),
    "pause": (1, ("one", "leader")),
    "clock": (1, ("one",)),
    "wipe": (1, ("one", "leader")),
    "membership": (2, ("remove", "remove-leader")),
}
KRAFT_V1_ONLY = ("wipe", "membership")
#: the share of faults that last max_duration_ms..2 x max_duration_ms
LONG_FAULTS = 0.15
#: the first fault starts after this long (ms): a leader is elected first
FIRST_FAULT_MS = 2000.0


@dataclasses.dataclass(frozen=True)
class FaultSpec:
    """One fault: starts ``at_ms``, lasts ``duration_ms``; ``family``, ``kind``; ``params``
    (sorted ``(name, value)`` pairs: ``pick`` a node index for the random kinds, a packet
    fault's settings, ``torn``, a clock jump's ``offset_ms``)."""

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


def families_for(kraft_version: int) -> list[str]:
    """The families a schedule draws from."""
    return [f for f in FAMILIES if kraft_version == 1 or f not in KRAFT_V1_ONLY]


def _params(family: str, kind: str, rng: random.Random) -> dict:
    p: dict = {"pick": rng.randrange(1 << 16)}
    if family == "packet":
        if kind == "delay":
            p.update(delay_ms=rng.choice((20, 100, 400, 1500)), jitter_ms=rng.choice((0, 50, 300)))
        elif kind == "loss":
            p.update(loss_pct=rng.choice((10, 30, 60)))
        elif kind == "duplicate":
            p.update(duplicate_pct=rng.choice((10, 30, 60)))
        else:
            p.update(delay_ms=rng.choice((5, 50, 200)), jitter_ms=rng.choice((100, 500, 2000)))
        p["all_links"] = rng.random() < 0.3
    elif family == "power-loss":
        p["torn"] = rng.random() < 0.5
    elif family == "clock":
        p["offset_ms"] = rng.choice((-1, 1)) * rng.choice((500, 5000, 60000, 3600000))
    return p


def draw_schedule(rng: random.Random, sim_ms: float, kraft_version: int, mean_gap_ms: float = 2500.0,
                  max_duration_ms: float = 5000.0) -> list[FaultSpec]:
    """Faults from ``FIRST_FAULT_MS`` to ``sim_ms - 1000``, about one per ``mean_gap_ms``, each
    lasting 0.3..``max_duration_ms`` (a share :data:`LONG_FAULTS` up to twice that); at most one
    active fault per family at a time."""
    fams = families_for(kraft_version)
    weights = [FAMILIES[f][0] for f in fams]
    busy: dict[str, float] = {}
    out: list[FaultSpec] = []
    t = FIRST_FAULT_MS + rng.random() * mean_gap_ms
    while t < sim_ms - 1000:
        fam = rng.choices(fams, weights)[0]
        kind = rng.choice(FAMILIES[fam][1])
        dur = 300 + rng.random() * (max_duration_ms - 300)
        if rng.random() < LONG_FAULTS:             # a long one: a stale leader shows only after seconds
            dur = max_duration_ms + rng.random() * max_duration_ms
        params = _params(fam, kind, rng)
        if busy.get(fam, 0) <= t:
            dur = min(dur, sim_ms - t)
            out.append(FaultSpec(round(t, 3), round(dur, 3), fam, kind, tuple(sorted(params.items()))))
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
