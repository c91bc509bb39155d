"""A hunt's simulation phase: seeds of the deterministic simulator (``sim/``, its contract in
sim/README.md: ``SimOptions``, ``SeedOutcome``, ``simulate``, ``shrink_and_export``), judged by
our checkers (the judge the hunt passes in, harness/simulation/judge.py), in batches
(:func:`run_batch`) that the hunt interleaves round by round over the simulator configurations
(harness/hunt/portfolio.py ``sim_configs``: swarm testing by default, ``sim_targets``;
harness/hunt/sim_rounds.py ``SimRounds.sim_phase``), each configuration one row of the report, merged from its batches
(:func:`merge_rows`).

The simulator models our quorum and brokers (``kraft/``), so the phase runs only on the target
it models, :data:`SIM_TARGET`. A batch runs seeds ``seed, seed+1, ...`` in both cores and stops
starting seeds at its deadline; a configuration's next batch continues where its last one
ended, so its row covers one contiguous range ``a..b`` that one ``kraft-chaos simulate``
command repeats. A row counts the seeds run and the failing ones by first violated invariant,
and names the first failing seed and its detail.
"""
from __future__ import annotations

import shlex
import time
from types import ModuleType
from typing import Callable, Iterator, Sequence

from harness.hunt.portfolio import SimConfig
from sim.api import SimOptions
from sim.judging import Judge
from sim.swarm import DIMENSIONS, describe

#: the target (``--db``) the simulator models
SIM_TARGET = "kraft"
#: quorum voters of every fixed simulated cluster (``--no-swarm``)
SIM_VOTERS = 3
#: simulator worker processes
SIM_WORKERS = 2
#: failing seeds a row lists
LISTED_SEEDS = 10
#: a row's ``reason`` when no seed of its configuration ran
NO_SEED_RAN = "no seed ran before the simulation's share of the budget ended"


def sim_options(cfg: SimConfig, unsafe: tuple[str, ...]) -> SimOptions:
    """The ``SimOptions`` of ``cfg`` with the hunt's ``unsafe`` switches: every dimension drawn
    by each seed (swarm), or the fixed configuration's voters, brokers and kraft.version with
    the rest at their defaults, as :func:`sim_command` runs them."""
    if cfg.swarm:
        return SimOptions(unsafe=tuple(unsafe), swarm=DIMENSIONS)
    return SimOptions(voters=SIM_VOTERS, brokers=cfg.brokers, kraft_version=cfg.kraft_version, unsafe=tuple(unsafe))


def sim_command(cfg: SimConfig, unsafe: tuple[str, ...], seed: int, seeds: int) -> str:
    """The ``kraft-chaos simulate`` command that runs ``seeds`` seeds of ``cfg`` from ``seed``."""
    which = ["--seed", str(seed)] if seeds == 1 else ["--seeds", str(seeds), "--first-seed", str(seed)]
    args = ["kraft-chaos", "simulate", *which]
    if not cfg.swarm:
        args += ["--no-swarm", "--voters", str(SIM_VOTERS), "--brokers", str(cfg.brokers),
                 "--kraft-version", str(cfg.kraft_version)]
    if unsafe:
        args += ["--unsafe", ",".join(unsafe)]
    return shlex.join(args)


def _blank_row(cfg: SimConfig, unsafe: tuple[str, ...], seed: int, seeds: int, started_s: float | None) -> dict:
    return {"phase": "sim", "schedule": cfg.label(), "workload": "sim",
            "kraft_version": "drawn" if cfg.swarm else cfg.kraft_version,
            "seed": seed, "verdict": "valid", "anomalies": {}, "seeds": 0, "failing_seeds": [], "detail": None,
            "events": 0, "sim_seconds": 0.0, "started_s": started_s, "wall_s": 0.0, "store": None,
            "error": None, "error_kind": None, "repeat": sim_command(cfg, unsafe, seed, seeds)}


def _close_range(row: dict, cfg: SimConfig, unsafe: tuple[str, ...], seed: int) -> None:
    """Set ``row``'s ``seed`` (``a..b``) and ``repeat`` to the ``seeds`` it ran from ``seed``."""
    row["seed"] = f"{seed}..{seed + max(row['seeds'], 1) - 1}"
    row["repeat"] = sim_command(cfg, unsafe, seed, max(row["seeds"], 1))


def _close(outcomes) -> None:
    close = getattr(outcomes, "close", None)
    if close is not None:
        close()


def _outcomes(api: ModuleType, opts, seeds: range, deadline: float, warm: bool, judge: Judge | None) -> Iterator:
    """``api.simulate`` of ``seeds`` in :data:`SIM_WORKERS` processes, judged by ``judge``;
    ``warm``: the first in this one (see :func:`run_batch`)."""
    if warm and len(seeds):
        first = api.simulate(opts, seeds[:1], workers=1, deadline=deadline, judge=judge)
        try:
            yield from first
        finally:
            _close(first)
        seeds = seeds[1:]
    rest = api.simulate(opts, seeds, workers=SIM_WORKERS, deadline=deadline, judge=judge)
    try:
        yield from rest
    finally:
        _close(rest)


def run_batch(api: ModuleType, cfg: SimConfig, unsafe: tuple[str, ...], seed: int, seeds: int,
              deadline: float, stop_at_first: bool, elapsed: Callable[[], float],
              echo: Callable[[str], None] = print,
              on_failure: Callable[[dict, dict], None] | None = None, warm: bool = False,
              judge: Judge | None = None) -> tuple[dict, dict | None]:
    """Run up to ``seeds`` seeds of ``cfg`` from ``seed`` until ``deadline`` (``time.monotonic``
    s), in :data:`SIM_WORKERS` processes forked for the batch, each history judged by ``judge``
    (``api.simulate``'s; None: the invariants alone); ``warm``: its first seed in this
    process, so that the modules and caches a process's first seed loads (~1 s of each worker's
    time, in every batch) come warm with the fork to this batch's workers and every later
    batch's. Returns ``(row, first failure)``: the batch's row (module docstring; ``verdict``
    ``valid``, ``invalid`` (also when the simulator raised after a violation), ``error`` when it
    raised otherwise, or ``skipped`` when no seed ran) and
    ``{"seed", "invariant", "detail", "elapsed_s", "configuration"}`` of its first failing seed
    (``elapsed()`` when it came; the configuration it ran, as one line), or None.
    ``stop_at_first``: no seed is awaited after the first failure. Otherwise ``on_failure(row so far, first failure)`` is called as soon as it comes, before
    the batch goes on (its seeds in flight finish meanwhile; no further one starts until it
    returns). Raises ``KeyboardInterrupt`` with the row so far attached as ``row``."""
    row = _blank_row(cfg, unsafe, seed, seeds, round(elapsed(), 1))
    first = None
    t0 = time.monotonic()
    outcomes = None
    try:
        outcomes = _outcomes(api, sim_options(cfg, unsafe), range(seed, seed + seeds), deadline, warm, judge)
        for o in outcomes:
            row["seeds"] += 1
            row["events"] += o.events
            row["sim_seconds"] = round(row["sim_seconds"] + o.sim_seconds, 3)
            if o.ok:
                continue
            kind = o.invariant or "violation"
            row["anomalies"][kind] = row["anomalies"].get(kind, 0) + 1
            if len(row["failing_seeds"]) < LISTED_SEEDS:
                row["failing_seeds"].append(o.seed)
            if first is None:
                drawn = describe(o.options) if getattr(o, "options", None) is not None else cfg.tag()
                first = {"seed": o.seed, "invariant": kind, "detail": o.detail, "elapsed_s": round(elapsed(), 1),
                         "configuration": drawn}
                row["detail"] = f"seed {o.seed}: {kind}: {o.detail}"
                echo(f"simulation {cfg.tag()}: seed {o.seed} ({drawn}) violates {kind}: {o.detail}")
                if stop_at_first:
                    break
                if on_failure is not None:
                    row["wall_s"] = round(time.monotonic() - t0, 1)
                    on_failure(row, first)
    except KeyboardInterrupt as e:
        row.update(verdict="interrupted", wall_s=round(time.monotonic() - t0, 1))
        e.row = row        # type: ignore[attr-defined]
        raise
    except Exception as e:  # noqa: BLE001 - the simulator's failure is recorded; the hunt goes on
        row.update(verdict="error", error=f"{type(e).__name__}: {e}", error_kind="harness")
    finally:
        _close(outcomes)
    row["wall_s"] = round(time.monotonic() - t0, 1)
    if row["anomalies"]:               # a violation found stands, even if the simulator failed after it
        row["verdict"] = "invalid"
    elif row["verdict"] == "valid" and not row["seeds"]:
        row.update(verdict="skipped", reason=NO_SEED_RAN)
    _close_range(row, cfg, unsafe, seed)
    return row, first


def merge_rows(cfg: SimConfig, unsafe: tuple[str, ...], seed: int, batches: Sequence[dict],
               started_s: float | None = None) -> dict:
    """The row of configuration ``cfg`` from its ``batches`` (rows of :func:`run_batch`, in
    order, the first from ``seed``, each continuing the last): their seeds, events, virtual
    seconds, anomalies and wall seconds summed, their failing seeds (at most
    :data:`LISTED_SEEDS`), the first detail, the first batch's ``started_s`` (else
    ``started_s``), one range ``a..b`` and its ``repeat`` command, ``batches``; its ``verdict``
    ``invalid`` when any seed failed (a violation found stands), else ``interrupted``,
    ``error`` (the simulator raised: its ``error``), ``valid`` or ``skipped`` (no seed ran)."""
    row = _blank_row(cfg, unsafe, seed, 1, batches[0]["started_s"] if batches else started_s)
    row["batches"] = len(batches)
    for b in batches:
        row["seeds"] += b["seeds"]
        row["events"] += b["events"]
        row["sim_seconds"] = round(row["sim_seconds"] + b["sim_seconds"], 3)
        row["wall_s"] = round(row["wall_s"] + b["wall_s"], 1)
        for kind, n in b["anomalies"].items():
            row["anomalies"][kind] = row["anomalies"].get(kind, 0) + n
        row["failing_seeds"] = (row["failing_seeds"] + b["failing_seeds"])[:LISTED_SEEDS]
        row["detail"] = row["detail"] or b["detail"]
        if b.get("error"):
            row.update(error=b["error"], error_kind=b["error_kind"])
    verdicts = {b["verdict"] for b in batches}
    if row["anomalies"]:
        row["verdict"] = "invalid"
    elif "interrupted" in verdicts:
        row["verdict"] = "interrupted"
    elif "error" in verdicts:
        row["verdict"] = "error"
    elif not row["seeds"]:
        row.update(verdict="skipped", reason=next((b["reason"] for b in reversed(batches) if b.get("reason")),
                                                  NO_SEED_RAN))
    _close_range(row, cfg, unsafe, seed)
    return row
