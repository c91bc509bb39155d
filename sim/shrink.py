"""Shrinking a failing seed (Zeller's delta debugging, ddmin): the smallest schedule found that
still breaks the same invariant (or draws the same checker anomaly).

A schedule is a :class:`sim.schedule.Plan`: its faults, then its client ops, are cut
down in turn by :func:`ddmin`, each candidate run from the same seed (the network's and
nodes' randomness stay seeded; only the schedule shrinks); then the end of the faults is
brought forward to just after the violation. Every run is bounded: at most ``max_runs``.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

from .schedule import Plan, RunResult, plan_for, run_schedule


@dataclasses.dataclass
class ShrinkResult:
    """``plan`` (the smallest failing schedule), ``result`` (its run, with history),
    ``original`` (the seed's own plan), ``runs`` (schedules run while shrinking),
    ``target`` (the invariant or checker anomaly kept)."""

    plan: Plan
    result: RunResult
    original: Plan
    runs: int
    target: str


def ddmin(items: Sequence, fails: Callable[[list], bool], budget: Callable[[], bool]) -> list:
    """The 1-minimal sublist of ``items`` (in order) for which ``fails`` still holds, as far as
    ``budget()`` (True while runs remain) allows. ``fails(items)`` is assumed."""
    items = list(items)
    n = 2
    while len(items) >= 2 and budget():
        chunk = max(1, len(items) // n)
        parts = [items[i:i + chunk] for i in range(0, len(items), chunk)]
        reduced = False
        for i in range(len(parts)):
            if not budget():
                break
            complement = [x for j, p in enumerate(parts) if j != i for x in p]
            if fails(parts[i]):
                items, n, reduced = parts[i], 2, True
                break
            if len(parts) > 2 and fails(complement):
                items, n, reduced = complement, max(n - 1, 2), True
                break
        if not reduced:
            if n >= len(items):
                break
            n = min(len(items), n * 2)
    if len(items) == 1 and budget() and fails([]):
        return []
    return items


def shrink_seed(opts, seed: int, judge=None, max_runs: int = 400) -> ShrinkResult:
    """Shrink seed ``seed`` under ``opts``; raises ValueError when it does not fail."""
    original = plan_for(opts, seed)
    first = run_schedule(opts, seed, original, judge)
    target = first.first[0]
    if target is None:
        raise ValueError(f"seed {seed} does not fail: nothing to shrink")
    runs = [1]

    def budget() -> bool:
        return runs[0] < max_runs

    def still_fails(plan: Plan) -> bool:
        runs[0] += 1
        return run_schedule(opts, seed, plan, judge).first[0] == target

    plan = original
    faults = ddmin(plan.faults, lambda fs: still_fails(dataclasses.replace(plan, faults=tuple(fs))), budget)
    plan = dataclasses.replace(plan, faults=tuple(faults))
    ops = ddmin(plan.client_ops, lambda cs: still_fails(dataclasses.replace(plan, client_ops=tuple(cs))), budget)
    plan = dataclasses.replace(plan, client_ops=tuple(ops))
    if first.violation is not None and budget():
        end = max([first.violation.at_ms + 500.0] + [f.at_ms + 1.0 for f in plan.faults])
        end = min(end, plan.end_ms)
        shorter = dataclasses.replace(plan, end_ms=end, client_ops=tuple(c for c in plan.client_ops if c[0] < end),
                                      faults=tuple(dataclasses.replace(f, duration_ms=min(f.duration_ms, end - f.at_ms))
                                                   for f in plan.faults))
        if still_fails(shorter):
            plan = shorter
    result = run_schedule(opts, seed, plan, judge, keep=True)
    return ShrinkResult(plan, result, original, runs[0] + 1, target)
