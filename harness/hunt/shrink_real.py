"""A failed real run of a hunt shrunk to a scenario file, within the hunt's budget.

The run's faults (harness/catalogue/shrink.py: ``fault_units``) are first written as they
happened, ``<name>-full.toml``, so that the failure has a scenario even if the hunt is stopped
while shrinking; then ``shrink`` (ddmin over the faults, halved windows, a shorter lead-in)
replays candidates as scenario runs, the same seed and settings, each through ``attempt`` (the
hunt's runner: it holds the lock per run and starts none that would not finish in the budget),
and the smallest schedule that still fails with one of the run's anomaly kinds is written as
``<name>.toml``. A candidate that could not be run (no budget left, at most ``max_runs``) counts
as passing, so an exhausted budget leaves the larger schedule, never a wrong one.
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Callable

from harness.catalogue.shrink import fault_units, shrink, units_to_steps
from harness.config.run import RunConfig, run_table
from harness.config.scenario import dumps
from history import iter_history, store

#: most replays a hunt spends shrinking one failure
SHRINK_MAX_RUNS = 12
#: RunConfig fields the hunt's runner sets itself (where the runs go), not a candidate's
PLACEMENT = ("seed", "store", "subnet", "cluster", "hosts")


def scenario_fields(config: RunConfig, steps: list[dict]) -> dict:
    """The RunConfig fields (no :data:`PLACEMENT`) of ``config`` replaying ``steps`` as a scenario."""
    fields = {k: v for k, v in dataclasses.asdict(config).items() if k not in PLACEMENT}
    fields.update(nemesis=[], scenario=steps, scenario_file=None)
    return fields


def write_scenario(path: Path, config: RunConfig, steps: list[dict], comment: str) -> Path:
    """Write ``steps`` with ``config``'s ``[run]`` table (no store) as scenario ``path``; returns it."""
    table = run_table(config)
    table.pop("store", None)
    path.write_text(dumps(table, steps, comment), encoding="utf-8")
    return path


def shrink_failure(config: RunConfig, run_dir: Path, kinds: set[str], attempt: Callable[[dict, int], dict | None],
                   out: Path, name: str, max_runs: int = SHRINK_MAX_RUNS,
                   echo: Callable[[str], None] = print, progress: Callable[[dict], None] = lambda doc: None) -> dict:
    """Shrink the failed run ``run_dir`` of ``config`` (anomaly ``kinds``) into ``out/<name>.toml``.

    ``attempt(fields, seed)`` runs a candidate (RunConfig fields without placement) and returns
    its row (``verdict``, ``anomalies``, ``store``, ``wall_s``) or None when it was not run.
    Returns ``{"scenario_full", "scenario", "faults_before", "faults_after", "attempts":
    [{"faults", "shift_s", "verdict", "anomalies", "store", "wall_s", "fails"}], "wall_s"}``, also
    given to ``progress`` once the full scenario is written and after each attempt. Raises
    ``OSError`` when the run's history cannot be read, and whatever ``attempt`` raises
    (``Interrupted`` on Ctrl-C) once the full scenario is written."""
    t0 = time.monotonic()
    units = fault_units(iter_history(store.history_path(run_dir)))
    base = dataclasses.replace(config, nemesis=[], scenario=None, scenario_file=None)
    what = f"{run_dir}: anomalies {', '.join(sorted(kinds))}"
    full = write_scenario(out / f"{name}-full.toml", base, units_to_steps(units),
                          f"kraft-chaos hunt: the faults of the failed run {what}, as they happened")
    doc: dict = {"scenario_full": str(full), "scenario": str(full), "faults_before": len(units),
                 "faults_after": len(units), "attempts": []}
    attempts = doc["attempts"]
    progress(doc)

    def fails(candidate, shift: float) -> bool:
        if len(attempts) >= max_runs:
            return False
        row = attempt(scenario_fields(base, units_to_steps(candidate, shift)), base.seed)
        if row is None:
            return False
        hit = row["verdict"] == "invalid" and bool(set(row.get("anomalies") or {}) & kinds)
        attempts.append({"faults": len(candidate), "shift_s": shift, "verdict": row["verdict"],
                         "anomalies": row.get("anomalies") or {}, "store": row.get("store"), "wall_s": row.get("wall_s"),
                         "fails": hit})
        echo(f"  shrink attempt {len(attempts)}: {len(candidate)} fault(s), shift {shift:.1f} s -> "
             f"{'fails' if hit else 'passes'} ({row.get('store') or row.get('error')})")
        progress(doc)
        return hit

    echo(f"shrinking {what}: {len(units)} fault(s), at most {max_runs} run(s)")
    kept, shift = shrink(units, fails)
    path = write_scenario(out / f"{name}.toml", base, units_to_steps(kept, shift),
                          f"kraft-chaos hunt: the failed run {what}, shrunk\n{len(units)} fault(s) -> "
                          f"{len(kept)} in {len(attempts)} run(s)")
    doc.update(scenario=str(path), faults_after=len(kept), wall_s=round(time.monotonic() - t0, 1))
    progress(doc)
    return doc
