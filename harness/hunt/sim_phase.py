"""A hunt's simulation phase: seeds of the deterministic simulator (``sim/``, its contract in
``sim.api``: ``SimOptions``, ``SeedOutcome``, ``simulate``, ``shrink_and_export``), one batch per
simulator configuration (harness/hunt/portfolio.py ``SIM_CONFIGS``), each a row of the report.

The simulator models our quorum and brokers (``kraft/``), so the phase runs only on the target
it models, :data:`SIM_TARGET`. When ``sim`` cannot be imported the hunt goes on without it and
says so (:func:`load_api`). A batch runs up to ``SIM_SEEDS`` seeds, ``seed, seed+1, ...``, in
both cores, and stops starting seeds at its deadline; its row counts the seeds run and the
failing ones by first violated invariant, and names the first failing seed and its detail.
"""
from __future__ import annotations

import importlib
import shlex
import time
from types import ModuleType
from typing import Callable

from harness.hunt.portfolio import SimConfig

#: the target (``--db``) the simulator models
SIM_TARGET = "kraft"
#: quorum voters of every simulated cluster
SIM_VOTERS = 3
#: simulator worker processes
SIM_WORKERS = 2
#: failing seeds a row lists
LISTED_SEEDS = 10


def load_api(name: str = "sim.api") -> tuple[ModuleType | None, str | None]:
    """``(the simulator's API module, None)``, or ``(None, why not)`` when it cannot be
    imported or lacks part of its contract."""
    try:
        api = importlib.import_module(name)
    except ImportError as e:
        return None, f"the simulator ({name}) is not importable: {e}"
    missing = [n for n in ("SimOptions", "simulate", "shrink_and_export") if not hasattr(api, n)]
    if missing:
        return None, f"the simulator ({name}) lacks {', '.join(missing)}"
    return api, None


def sim_options(api: ModuleType, cfg: SimConfig, unsafe: tuple[str, ...]):
    """The ``SimOptions`` of ``cfg`` with the hunt's ``unsafe`` switches and, but for ``brokers``
    (the configuration's), the options ``kraft-chaos simulate`` gives those switches
    (``sim.switch_options``, when there is one): so that :func:`sim_command` repeats a seed exactly."""
    opts = api.SimOptions(voters=SIM_VOTERS, brokers=cfg.brokers, kraft_version=cfg.kraft_version,
                          unsafe=tuple(unsafe))
    package = getattr(api, "__name__", "").rpartition(".")[0]     # a stand-in API has none
    try:
        presets = importlib.import_module(package + ".switch_options") if package else None
    except ImportError:
        presets = None
    if presets is None:
        return opts
    return presets.options_for(opts.unsafe, opts, frozenset({"brokers"}))


def sim_command(cfg: SimConfig, unsafe: tuple[str, ...], seed: int, seeds: int) -> str:
    """The ``kraft-chaos simulate`` command that runs ``seeds`` seeds of ``cfg`` from ``seed``."""
    which = ["--seed", str(seed)] if seeds == 1 else ["--seeds", str(seeds), "--first-seed", str(seed)]
    args = ["kraft-chaos", "simulate", *which, "--voters", str(SIM_VOTERS),
            "--brokers", str(cfg.brokers), "--kraft-version", str(cfg.kraft_version)]
    if unsafe:
        args += ["--unsafe", ",".join(unsafe)]
    return shlex.join(args)


def run_batch(api: ModuleType, cfg: SimConfig, unsafe: tuple[str, ...], seed: int, seeds: int,
              deadline: float, stop_at_first: bool, elapsed: Callable[[], float],
              echo: Callable[[str], None] = print) -> tuple[dict, dict | None]:
    """Run up to ``seeds`` seeds of ``cfg`` from ``seed`` until ``deadline`` (``time.monotonic``
    s); returns ``(row, first failure)``: the row (module docstring; ``verdict`` ``valid``,
    ``invalid`` (also when the simulator raised after a violation), ``error`` when it raised
    otherwise, or ``skipped`` when no seed ran) and
    ``{"seed", "invariant", "detail", "elapsed_s"}`` of its first failing seed (``elapsed()``
    when it came), or None. ``stop_at_first``: no seed is awaited after the first failure.
    Raises ``KeyboardInterrupt`` with the row so far attached as ``row``."""
    row = {"phase": "sim", "schedule": cfg.label(), "workload": "sim", "kraft_version": cfg.kraft_version,
           "seed": seed, "verdict": "valid", "anomalies": {}, "seeds": 0, "failing_seeds": [], "detail": None,
           "events": 0, "sim_seconds": 0.0, "started_s": round(elapsed(), 1), "wall_s": 0.0, "store": None,
           "error": None, "error_kind": None, "repeat": sim_command(cfg, unsafe, seed, seeds)}
    first = None
    t0 = time.monotonic()
    outcomes = None
    try:
        outcomes = api.simulate(sim_options(api, cfg, unsafe), range(seed, seed + seeds), workers=SIM_WORKERS,
                                deadline=deadline)
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
                first = {"seed": o.seed, "invariant": kind, "detail": o.detail, "elapsed_s": round(elapsed(), 1)}
                row["detail"] = f"seed {o.seed}: {kind}: {o.detail}"
                echo(f"simulation {cfg.label()} kv{cfg.kraft_version}: seed {o.seed} violates {kind}: {o.detail}")
                if stop_at_first:
                    break
    except KeyboardInterrupt as e:
        row.update(verdict="interrupted", wall_s=round(time.monotonic() - t0, 1))
        e.row = row        # type: ignore[attr-defined]
        raise
    except Exception as e:  # noqa: BLE001 - the simulator's failure is recorded; the hunt goes on
        row.update(verdict="error", error=f"{type(e).__name__}: {e}", error_kind="harness")
    finally:
        close = getattr(outcomes, "close", None)
        if close is not None:
            close()
    row["wall_s"] = round(time.monotonic() - t0, 1)
    if row["anomalies"]:               # a violation found stands, even if the simulator failed after it
        row["verdict"] = "invalid"
    elif row["verdict"] == "valid" and not row["seeds"]:
        row.update(verdict="skipped", reason="no seed ran before the simulation's share of the budget ended")
    row["seed"] = f"{seed}..{seed + max(row['seeds'], 1) - 1}"
    row["repeat"] = sim_command(cfg, unsafe, seed, max(row["seeds"], 1))
    return row, first
