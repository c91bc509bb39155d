"""Shrinking a failing run to a smallest fault schedule that still fails (delta debugging).

From a stored run, :func:`fault_units` reads the nemesis's faults (each a
start op and its stop op, by family and slot) with their times.
:func:`units_to_steps` turns units back into scenario steps
(harness/config/scenario.py): faults aimed at the leader stay aimed at whoever
leads when replayed; every other fault replays on the nodes it hit (its
recorded targets or grudge), so dropping one fault does not change the
others. :func:`shrink` runs Zeller's ddmin over the units, then halves each
remaining fault's window and cuts the calm before the first, keeping each
change only if the run still fails with one of the original anomaly kinds.
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Callable, Iterable

from history import NEMESIS

log = logging.getLogger("kraft_chaos.shrink")

#: kinds that aim at whoever leads; replayed as they are, not as the nodes they hit
LEADER_KINDS = ("leader", "isolate-leader", "one-way-leader", "leader-diamond", "majority")
#: families whose randomness is their point; replayed with their kind
KEEP_KIND = ("flap", "rolling")
#: seconds of clients kept before the first fault when shrinking
LEAD_IN_S = 2.0


@dataclasses.dataclass(frozen=True)
class Unit:
    """One fault: ``family``, replay ``value`` (the start op's), ``start_s`` and ``end_s``
    (seconds since the history began, start invoke to stop invoke)."""

    family: str
    value: dict
    start_s: float
    end_s: float

    @property
    def slot(self) -> str | None:
        return self.value.get("slot")


def replay_value(family: str, invoked: dict, done: dict) -> dict:
    """How a fault is replayed: its invoke value when leader-aimed (or a flap or rolling
    restart), else the nodes it hit (``targets``, or a partition's ``grudge``)."""
    kind = invoked.get("kind")
    slot = {"slot": invoked["slot"]} if invoked.get("slot") else {}
    if kind in LEADER_KINDS or family in KEEP_KIND or not isinstance(done, dict):
        return dict(invoked)
    if family == "partition" and isinstance(done.get("grudge"), dict):
        return {"kind": "nodes", **slot, "grudge": {n: list(d) for n, d in done["grudge"].items() if d}}
    if family == "packet":       # the settings drawn are replayed as they were
        numbers = {k: done[k] for k in ("delay_ms", "jitter_ms", "loss_pct", "duplicate_pct", "reorder_pct")
                   if isinstance(done.get(k), (int, float))}
        return {"kind": "nodes", **slot, "targets": list(done.get("targets") or []), "effect": kind, **numbers}
    if isinstance(done.get("targets"), list) and done["targets"]:
        return {"kind": "nodes", **slot, "targets": list(done["targets"])}
    return dict(invoked)


def fault_units(history: Iterable[dict]) -> list[Unit]:
    """The faults of a history, in start order. A fault never stopped ends at the last op."""
    t0 = None
    last = 0.0
    starting: dict = {}                 # process op in flight: the invoke
    open_: dict[tuple, tuple[float, dict]] = {}
    units: list[Unit] = []
    for op in history:
        if t0 is None:
            t0 = op["time"]
        t = (op["time"] - t0) / 1e9
        last = t
        if op["process"] != NEMESIS:
            continue
        phase, _, family = op["f"].partition("-")
        if op["type"] == "invoke":
            starting[NEMESIS] = (t, op.get("value") or {})
            continue
        t_inv, invoked = starting.pop(NEMESIS, (t, op.get("value") or {}))
        key = (family, (invoked or {}).get("slot"))
        if phase == "start" and not op.get("error"):
            open_[key] = (t_inv, replay_value(family, invoked, op.get("value")))
        elif phase == "stop" and key in open_:
            ts, value = open_.pop(key)
            units.append(Unit(family, value, ts, t_inv))
    for (family, _slot), (ts, value) in open_.items():
        units.append(Unit(family, value, ts, last))
    return sorted(units, key=lambda u: u.start_s)


def units_to_steps(units: list[Unit], shift_s: float = 0.0) -> list[dict]:
    """Scenario steps for ``units``: sleeps between their start and stop ops, in time order
    (times moved ``shift_s`` s earlier, never below 0)."""
    events = []
    for i, u in enumerate(units):
        start = {"nemesis": f"start-{u.family}", "value": dict(u.value)}
        stop_value = {"kind": u.value["kind"], **({"slot": u.slot} if u.slot else {})}
        events.append((max(0.0, u.start_s - shift_s), 0, i, start))
        events.append((max(0.0, u.end_s - shift_s), 1, i, {"nemesis": f"stop-{u.family}", "value": stop_value}))
    events.sort(key=lambda e: (e[0], e[1], e[2]))
    steps, now = [], 0.0
    for t, _phase, _i, step in events:
        if t - now > 1e-3:
            steps.append({"sleep": round(t - now, 3)})
            now = t
        steps.append(step)
    return steps


def ddmin(items: list, fails: Callable[[list], bool]) -> list:
    """Zeller's ddmin: a 1-minimal sublist of ``items`` for which ``fails`` holds (assumed to
    hold for ``items``). ``fails`` is called on candidate sublists, keeping order."""
    n = 2
    while len(items) >= 2:
        chunk = max(1, len(items) // n)
        subsets = [items[i:i + chunk] for i in range(0, len(items), chunk)]
        for s in subsets:
            if fails(s):
                items, n = s, 2
                break
        else:
            for i in range(len(subsets)):
                rest = [x for j, s in enumerate(subsets) if j != i for x in s]
                if fails(rest):
                    items, n = rest, max(n - 1, 2)
                    break
            else:
                if n >= len(items):
                    break
                n = min(len(items), 2 * n)
    return items


def shrink(units: list[Unit], fails: Callable[[list[Unit], float], bool]) -> tuple[list[Unit], float]:
    """The smallest schedule found: ddmin over ``units``, then each window halved while it
    still fails, then the calm before the first fault cut to :data:`LEAD_IN_S`. ``fails(units,
    shift_s)`` runs a candidate. Returns ``(units, shift_s)``."""
    kept = ddmin(list(units), lambda us: fails(us, 0.0)) if units else []
    for i in range(len(kept)):
        while True:
            u = kept[i]
            half = (u.end_s - u.start_s) / 2
            if half < 0.5:
                break
            trial = kept[:i] + [dataclasses.replace(u, end_s=u.start_s + half)] + kept[i + 1:]
            if not fails(trial, 0.0):
                break
            kept = trial
    shift = max(0.0, min((u.start_s for u in kept), default=0.0) - LEAD_IN_S)
    if shift > 0 and not fails(kept, shift):
        shift = 0.0
    return kept, shift
