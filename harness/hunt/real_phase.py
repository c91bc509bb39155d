"""A hunt's real-cluster runs: one run at a time, under the cluster lock, never one that would not
finish before the deadline, each made a row of the report.

:class:`RealRunner` runs one set of RunConfig fields: it estimates the run's wall time (its time
limit, or a scenario's budget, plus the overhead learnt so far, harness/hunt/budget.py), cuts the
time limit when only that makes it fit (harness/hunt/portfolio.py ``fit``), waits for the lock
no longer than the run could still start, checks the fit again, and runs it as ``kraft-chaos
matrix`` runs a cell (harness/matrix/cells.py ``run_cell``: the store, the verdict, a run that
could not be made recorded as an error of its kind). The runner tears its cluster down on
Ctrl-C (harness/run/runner.py) and raises ``Interrupted``; the row of the interrupted run rides
on the exception as ``row``.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable

from harness.catalogue.detection import first_anomaly_in_run
from harness.catalogue.kafka_bugs import known_kinds
from harness.config.resolved import ResolvedConfig, resolve
from harness.config.run import RunConfig
from harness.hunt.budget import Budget, Overheads
from harness.hunt.options import HuntOptions
from harness.hunt.portfolio import fit, limit_s, run_kind, shortest_s
from harness.matrix.cells import run_cell
from harness.matrix.file import Cell
from harness.run import runner
from targets.errors import TargetError
from targets.registry import target_spec

log = logging.getLogger("kraft_chaos.hunt")

#: ``run(config, run_dir) -> (results, run_dir)``: how a run is made (a stand-in in tests)
RunFn = Callable[[ResolvedConfig, Path], tuple[dict, Path]]


def _run_test(config: ResolvedConfig, run_dir: Path) -> tuple[dict, Path]:
    return runner.run_test(config, run_dir, progress=False)


def _known(config: RunConfig, anomalies: dict[str, int]) -> dict[str, list[str]]:
    """The anomalies the release of a run is known to show (harness/catalogue/kafka_bugs.py),
    ``{kind: [JIRA, ...]}``, on a target whose runs name a release; else {}."""
    if "kafka_version" not in target_spec(config.db).own_fields or config.kraft_version is None:
        return {}
    known = known_kinds(config.kafka_version, config.kraft_version, config.workload)
    return {k: known[k] for k in anomalies if k in known}


class RealRunner:
    """Runs a hunt's real runs within ``budget`` (module docstring): ``opts`` gives where they
    go and the lock, ``run`` how a run is made (default: harness/run/runner.py ``run_test``)."""

    def __init__(self, opts: HuntOptions, budget: Budget, run: RunFn | None = None):
        self.opts, self.budget, self.run_fn = opts, budget, run or _run_test
        self.overheads = Overheads()
        #: why the last :meth:`run` that returned None did not start its run
        self.last_miss: str | None = None

    def config(self, fields: dict[str, Any], seed: int) -> ResolvedConfig:
        """The resolved config of ``fields`` with ``seed`` where the hunt's runs go
        (harness/config/resolved.py). Raises ``ValueError``, ``TypeError`` or ``TargetError``
        naming what is wrong."""
        return resolve(RunConfig(seed=seed, **self.opts.placement(), **fields))

    def run(self, fields: dict[str, Any], seed: int, by: float | None = None,
            tags: dict[str, Any] | None = None) -> tuple[dict, RunConfig | None] | None:
        """Run ``fields`` (RunConfig fields without placement) with ``seed`` if it fits before
        the deadline (and ``by``, on the budget's clock); returns ``(row, config)``, the row
        starting with ``tags`` (e.g. its ``phase`` and ``schedule``), or None when it was not
        started (no time left, or the lock not free in time); ``config`` is the run's, its
        defaults filled in (``ResolvedConfig.flat``). A config the target refuses (e.g.
        a kraft.version its release lacks) is a row with verdict ``skipped`` and its
        ``reason``, config None. Raises ``Interrupted`` or ``KeyboardInterrupt`` on Ctrl-C
        (``row`` attached)."""
        tags = tags or {}
        try:
            self.config(fields, seed)
        except (ValueError, TypeError, TargetError) as e:
            return {**tags, "verdict": "skipped", "reason": str(e), "seed": seed, "workload": fields.get("workload"),
                    "kraft_version": fields.get("kraft_version")}, None
        kind = run_kind(fields)
        overhead = self.overheads.estimate(kind)
        self.last_miss = f"it needs at least {shortest_s(fields) + overhead:.0f} s"
        if fit(fields, self.budget.remaining(by), overhead) is None:
            return None
        end = self.budget.deadline if by is None else min(self.budget.deadline, by)
        waited = self.budget.waited_s
        with self.budget.lock(self.opts.lock, end - shortest_s(fields) - overhead) as held:
            waited = self.budget.waited_s - waited
            fitted = fit(fields, self.budget.remaining(by), overhead) if held else None   # the wait took time
            if fitted is None:
                if not held:
                    self.last_miss = f"the lock {self.opts.lock} was not free in time"
                return None
            resolved = self.config(fitted, seed)
            row = self._run(resolved, fitted, tags)
            row["lock_wait_s"] = round(waited, 1)
        if row["verdict"] in ("valid", "invalid", "unknown"):
            self.overheads.observe(kind, row["wall_s"], row["time_limit"])
        return row, resolved.flat

    def _run(self, resolved: ResolvedConfig, fields: dict[str, Any], tags: dict[str, Any]) -> dict:
        seen: dict = {}

        def run(config: ResolvedConfig, run_dir: Path) -> tuple[dict, Path]:
            seen["results"], out = self.run_fn(config, run_dir)
            return seen["results"], out

        cfg = resolved.flat
        cell = Cell(cfg.db, cfg.workload, list(cfg.nemesis), cfg.seed, cfg, resolved=resolved)
        started = self.budget.elapsed()
        try:
            rec = run_cell(cell, run)
        except (runner.Interrupted, KeyboardInterrupt) as e:
            e.row = self._row(cfg, fields, getattr(e, "record", None) or {"verdict": "interrupted"}, started, None,
                              tags)
            raise
        return self._row(cfg, fields, rec, started, seen.get("results"), tags)

    def _row(self, cfg: RunConfig, fields: dict, rec: dict, started: float, results: dict | None,
             tags: dict[str, Any]) -> dict:
        detect = None
        if results is not None and rec.get("verdict") == "invalid" and rec.get("store"):
            try:
                detect = first_anomaly_in_run(results, Path(rec["store"]))
            except (OSError, ValueError) as e:
                log.warning("time to detect of %s: %s", rec["store"], e)
        anomalies = rec.get("anomalies") or {}
        row = {**tags, "workload": cfg.workload, "kraft_version": cfg.kraft_version, "seed": cfg.seed,
               "time_limit": limit_s(fields), "verdict": rec.get("verdict", "interrupted"), "valid": rec.get("valid"),
               "anomalies": anomalies, "detect_s": None if detect is None else round(detect, 1),
               "started_s": round(started, 1), "wall_s": rec.get("wall_s"), "store": rec.get("store"),
               "repeat": rec.get("repeat") or cfg.repeat_command(), "error": rec.get("error"),
               "error_kind": rec.get("error_kind"), "summary": rec.get("summary")}
        known = _known(cfg, anomalies)
        if known:
            row["known"] = known
        if "kafka_version" in target_spec(cfg.db).own_fields:
            row["kafka_version"] = cfg.kafka_version
        return row
