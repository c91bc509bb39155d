"""The hunt (``kraft-chaos hunt``): a time budget spent on the portfolio, phase by phase; the
first failure shrunk to a scenario; the report written as it goes.

1. **Simulation** (harness/hunt/sim_phase.py, judged by our checkers), on the target the
   simulator models, unless ``--no-sim``: within ``SIM_SHARE`` of the budget, rounds of
   growing size (portfolio ``sim_targets``) round-robin over the simulator configurations
   (``sim_configs``: swarm testing, one configuration each seed draws; ``--no-swarm``: four
   fixed ones), each round a batch per configuration that continues its seeds, under the
   lock (it loads both cores); a configuration is one row, merged from its batches.
2. **Replay**: when the simulator found a failure and the hunt goes on, its exported scenario
   runs once on a real cluster.
3. **Real runs** (harness/hunt/real_phase.py): the rotation (harness/hunt/portfolio.py), each
   run's time limit capped so that one round of the schedules fits the budget left, until no
   run fits (or :data:`MAX_ERRORS_IN_A_ROW` runs in a row could not be made).

The first failure (a violated invariant, or an invalid real run) is recorded with the time
into the hunt at which it was known, then shrunk at once: a simulator seed by ``sim.api.shrink_and_export``,
a real run by harness/hunt/shrink_real.py (with the rest of the budget under ``--stop-at-first``,
else with at most half of it). Then the hunt stops (``--stop-at-first``) or goes on. Ctrl-C
(and SIGTERM) tears the current run down (the runner does) and ends the hunt with its report.
"""
from __future__ import annotations

import logging
import signal
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Callable

import sim.api
from harness.config.scenario import ScenarioError, load, retarget
from harness.hunt import portfolio
from harness.hunt.budget import Budget
from harness.hunt.options import HuntOptions
from harness.hunt.real_phase import RealRunner, RunFn
from harness.hunt.report import HuntReport
from harness.hunt.shrink_real import PLACEMENT, shrink_failure
from harness.hunt.sim_phase import SIM_TARGET, merge_rows, run_batch, sim_command, sim_options
from harness.run.runner import Interrupted
from harness.simulation.judge import judge_history
from history import store
from sim.judging import Judge
from targets.registry import target_spec

log = logging.getLogger("kraft_chaos.hunt")

#: the simulator a hunt runs (the API of sim/README.md) unless :class:`Hunt` is given another
SIMULATOR: ModuleType | None = sim.api
#: :class:`Hunt`'s ``sim_api`` when none is given: :data:`SIMULATOR`
DEFAULT = object()
#: real runs in a row that could not be made (a broken engine, a host gone) end the hunt
MAX_ERRORS_IN_A_ROW = 3
#: why the simulation phase ended early: its share of the budget, or the lock not free in it
NO_TIME, NO_LOCK = "time", "lock"


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def arm_sigterm() -> object | None:
    """On the main thread, make SIGTERM end the hunt as Ctrl-C does (a CI job's time-out still
    gets the report); returns the handler it replaced (None off the main thread). The runner
    sets its own handlers for the length of a run and leaves SIGTERM's default after it, so
    the hunt arms this again after every run."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _interrupt)


def row_line(row: dict) -> str:
    """One progress line: ``[n] phase schedule workload kvN seed S: VERDICT anomalies (W s) store``."""
    found = ", ".join(f"{k} {n}" for k, n in (row.get("anomalies") or {}).items())
    at = f" at {row['detect_s']:.1f} s" if row.get("detect_s") is not None else ""
    wall = f" ({row['wall_s']:.0f} s)" if isinstance(row.get("wall_s"), (int, float)) else ""
    return (f"[{row['n']}] {row['phase']} {row['schedule']} {row['workload']} kv{row['kraft_version']} "
            f"seed {row['seed']}: {row['verdict'].upper()}{' ' + found if found else ''}{at}{wall} "
            f"{row.get('error') or row.get('store') or row.get('detail') or ''}".rstrip())


class Hunt:
    """One hunt of ``opts`` (checked here: ``ValueError`` naming what is wrong), its report
    written into ``out``. ``run`` makes a real run (default: the runner; a stand-in in tests),
    ``sim_api`` is the simulator's API (default :data:`SIMULATOR`; a stand-in in tests; None:
    no simulation, reported ``unavailable``), ``judge`` the judge of its histories (default our
    checkers), ``clock`` a monotonic clock (s)."""

    def __init__(self, opts: HuntOptions, out: Path, run: RunFn | None = None, sim_api: ModuleType | object | None = DEFAULT,
                 echo: Callable[[str], None] = print, clock: Callable[[], float] = time.monotonic,
                 judge: Judge | None = judge_history):
        opts.check()
        self.order = portfolio.rotation_order(opts.db, opts.workloads, opts.seed)
        self.opts, self.echo = opts, echo
        self.budget = Budget(opts.minutes * 60.0, clock)
        self.runner = RealRunner(opts, self.budget, run)
        self.api, self.judge = SIMULATOR if sim_api is DEFAULT else sim_api, judge
        self.api_why = None if self.api is not None else "no simulator given"
        self.report = HuntReport(out, {"command": opts.repeat_command(), "db": opts.db, "seed": opts.seed,
                                       "minutes": opts.minutes, "workloads": list(opts.workloads),
                                       "unsafe": list(opts.unsafe), "kafka_version": opts.kafka_version,
                                       "stop_at_first": opts.stop_at_first,
                                       "schedules": [s for s, _ in self.order]}, opts.junit)
        self.stopped = False
        self._noted: set[str] = set()
        # the simulation phase: each configuration's batches, its row, the first failure's scenario
        self.sim_configs = portfolio.sim_configs(opts.swarm)
        self._batches: dict[portfolio.SimConfig, list[dict]] = {cfg: [] for cfg in self.sim_configs}
        self._sim_rows: dict[portfolio.SimConfig, dict] = {}
        self._scenario: Path | None = None

    @property
    def doc(self) -> dict:
        return self.report.doc

    # -- the hunt ------------------------------------------------------------

    def run(self) -> dict:
        """Spend the budget (module docstring); returns the ``hunt.json`` document (its
        ``exit_code`` the command's). Ctrl-C ends it with ``interrupted`` set."""
        self.echo(f"hunt: --db {self.opts.db}, {self.opts.minutes:g} min, seed {self.opts.seed}; "
                  f"report in {self.report.out}")
        self.echo(f"repeat with: {self.opts.repeat_command()}")
        before = arm_sigterm()
        try:
            scenario = self.sim_phase()
            if not self.stopped:
                self.real_phase(scenario)
        except (Interrupted, KeyboardInterrupt) as e:
            row = getattr(e, "row", None)
            if row is not None:
                self._add(row)
            self.doc["interrupted"] = True
            self.echo("interrupted: the current run was torn down; writing the report of what ran")
        finally:
            self.doc["finished"] = store.timestamp()
            self.doc["lock_wait_s"] = round(self.budget.waited_s, 1)
            self.report.save(wall_s=self.budget.elapsed())
            if before is not None:
                signal.signal(signal.SIGTERM, before)
        return self.doc

    def _add(self, row: dict) -> dict:
        arm_sigterm()
        self.doc["lock_wait_s"] = round(self.budget.waited_s, 1)
        row = self.report.add(row)
        self.echo(row_line(row))
        return row

    def _note(self, text: str) -> None:
        if text not in self._noted:
            self._noted.add(text)
            self.report.note(text)
            self.echo(f"note: {text}")

    # -- simulation -------------------------------------------------------------

    def sim_phase(self) -> Path | None:
        """The simulator's seeds; returns the scenario its first failure was exported to, or None.

        Round ``k`` brings each configuration still in (:attr:`sim_configs` order: swarm, or the
        fixed ones with ``--no-swarm``) up
        to ``portfolio.sim_targets()[k]`` seeds with one batch that continues its seed range:
        a bug only a later configuration shows is found seconds into the hunt, not after the
        earlier ones' seeds. Each batch takes the lock; its deadline is its equal part of what
        is left of the share among the batches left in the round (so a round the share cuts
        short still gives each configuration its part), never past the share's end. A
        configuration leaves when its seeds are done or the simulator raised; the phase ends
        with the share, when every configuration has left, or at the first failure under
        ``--stop-at-first``. A configuration's row is added after its first batch (round 1
        runs them in order, so the rows are in :attr:`sim_configs` order) and
        updated in place after each later one; the first failure is shrunk as soon as it
        comes (:meth:`sim_failure`)."""
        if self.opts.db != SIM_TARGET:
            status, why = "not-for-target", f"the simulator models --db {SIM_TARGET} only"
        elif not self.opts.sim:
            status, why = "off", "--no-sim"
        elif self.api is None:
            status, why = "unavailable", self.api_why
        else:
            status, why = "ran", None
        self.doc["sim"] = {"status": status, "reason": why}
        if status != "ran":
            self.echo(f"simulation: {status}: {why}")
            return None
        configs = self.sim_configs
        end = self.budget.start + portfolio.SIM_SHARE * self.budget.seconds
        targets = portfolio.sim_targets()
        left: list[portfolio.SimConfig] = list(configs)        # the configurations still in

        def done(cfg: portfolio.SimConfig) -> int:
            return sum(b["seeds"] for b in self._batches[cfg])

        for k, target in enumerate(targets):
            plan = [cfg for cfg in left if done(cfg) < target]
            for i, cfg in enumerate(plan):
                if self.budget.clock() >= end:
                    return self._sim_end(NO_TIME)
                with self.budget.lock(self.opts.lock, end) as held:
                    if not held:
                        return self._sim_end(NO_LOCK)
                    now = self.budget.clock()
                    by = min(end, now + (end - now) / (len(plan) - i))
                    ran = done(cfg)
                    # a configuration's first failing seed is echoed, not every batch's
                    echo = self.echo if not any(b["anomalies"] for b in self._batches[cfg]) else lambda m: None
                    try:
                        batch, first = run_batch(
                            self.api, cfg, self.opts.unsafe, self.opts.seed + ran, target - ran, by,
                            self.opts.stop_at_first, self.budget.elapsed, echo,
                            on_failure=lambda partial, first, cfg=cfg: self._sim_found(cfg, partial, first),
                            warm=not any(self._batches.values()),        # the phase's first seed
                            judge=self.judge)
                    except KeyboardInterrupt as e:      # the batch's row joins its configuration's
                        if getattr(e, "row", None) is not None:
                            self._batches[cfg].append(e.row)    # type: ignore[attr-defined]
                            if cfg in self._sim_rows:           # updated in place; run() adds no other
                                self._sim_row(cfg)
                                e.row = None                    # type: ignore[attr-defined]
                            else:
                                e.row = self._sim_merged(cfg)   # type: ignore[attr-defined]
                        raise
                    self._batches[cfg].append(batch)
                    row = self._sim_row(cfg)
                    if batch["verdict"] == "error" or done(cfg) >= portfolio.SIM_SEEDS:
                        left.remove(cfg)
                    if first is not None and self.doc["first_failure"] is None:
                        self._scenario = self.sim_failure(cfg, row, first)
                    if first is not None and self.opts.stop_at_first:
                        self.stopped = True
                        return self._sim_end(None)
            self.echo(f"simulation round {k + 1} of {len(targets)} done at {self.budget.elapsed():.0f} s: "
                      + ", ".join(f"{c.tag()} {done(c)}" for c in configs) + " seeds")
            if not left:
                break
        return self._sim_end(None)

    def _sim_merged(self, cfg: portfolio.SimConfig, partial: dict | None = None) -> dict:
        batches = self._batches[cfg] + ([partial] if partial is not None else [])
        return merge_rows(cfg, self.opts.unsafe, self.opts.seed, batches, round(self.budget.elapsed(), 1))

    def _sim_row(self, cfg: portfolio.SimConfig, partial: dict | None = None) -> dict:
        """The report's row of ``cfg`` merged from its batches (and ``partial``, a batch under
        way): added when it has none yet, else updated in place (its ``n`` kept); saved."""
        merged = self._sim_merged(cfg, partial)
        self.doc["lock_wait_s"] = round(self.budget.waited_s, 1)
        row = self._sim_rows.get(cfg)
        if row is None:
            row = self._sim_rows[cfg] = self.report.add(merged)
            return row
        n = row["n"]
        row.clear()
        row.update(merged, n=n)
        self.report.save()
        return row

    def _sim_found(self, cfg: portfolio.SimConfig, partial: dict, first: dict) -> None:
        """A batch's first failure, as it comes (the batch goes on after): the hunt's first
        failure, shrunk at once, when there is none yet."""
        if self.doc["first_failure"] is None:
            self._scenario = self.sim_failure(cfg, self._sim_row(cfg, partial), first)

    def _sim_end(self, why: str | None) -> Path | None:
        """End the phase: a configuration that never ran is a note (``why`` :data:`NO_LOCK`) or
        a skipped row (:data:`NO_TIME`; not under ``--stop-at-first``'s end); echo the rows."""
        for cfg in self.sim_configs:
            if cfg in self._sim_rows or self.stopped:
                continue
            if why == NO_LOCK:
                self._note(f"simulation {cfg.tag()}: not run, the lock was not free before "
                           f"the simulation's share of the budget ended")
            else:
                self._sim_row(cfg)
        if why == NO_LOCK:
            self._note("the simulation stopped: the lock was not free before its share of the budget ended")
        for row in self._sim_rows.values():
            self.echo(row_line(row))
        return self._scenario

    def sim_failure(self, cfg: portfolio.SimConfig, row: dict, first: dict) -> Path | None:
        """Record the simulator's first failure and export its shrunk scenario; returns its path."""
        ff = {"row": row["n"], "phase": "sim", "elapsed_s": first["elapsed_s"], "detect_s": None,
              "lock_wait_s": round(self.budget.waited_s, 1),
              "what": f"simulation {cfg.label()}, "
                      f"{first.get('configuration') if cfg.swarm else f'kraft.version {cfg.kraft_version}'}, "
                      f"seed {first['seed']}: "
                      f"{first['invariant']}: {first['detail']}",
              "repeat": sim_command(cfg, self.opts.unsafe, first["seed"], 1), "scenario": None}
        self.doc["first_failure"] = ff
        self.report.save()
        out = self.report.out / f"sim-seed{first['seed']}"
        out.mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        try:
            path = Path(self.api.shrink_and_export(sim_options(cfg, self.opts.unsafe), first["seed"], out,
                                                   judge=self.judge))
        except Exception as e:  # noqa: BLE001 - recorded; the hunt goes on without a scenario
            ff["shrink_error"] = f"{type(e).__name__}: {e}"
            self.echo(f"could not shrink and export seed {first['seed']}: {ff['shrink_error']}")
            self.report.save()
            return None
        ff.update(scenario=str(path), replay=f"kraft-chaos scenario run {path}",
                  shrink={"wall_s": round(time.monotonic() - t0, 1)})
        self.echo(f"scenario: {path}")
        self.report.save()
        return path

    # -- real runs --------------------------------------------------------------

    def real_phase(self, scenario: Path | None) -> None:
        """The replay of the simulator's scenario, then the rotation until no run fits."""
        if scenario is not None and self.replay(scenario) and self.opts.stop_at_first:
            return
        cap = portfolio.time_cap(self.budget.remaining(), len(self.order), self.runner.overheads.estimate("quorum"))
        self.doc["time_cap_s"] = cap
        period = 2 * len(self.order) * len(self.opts.workloads)     # every (schedule, workload, kv) once
        misses = errors = 0
        for play in portfolio.rotation(self.opts.db, self.opts.workloads, self.opts.seed):
            fields = portfolio.run_fields(play, cap, self.opts.overrides())
            done = self.runner.run(fields, play.seed, tags={"phase": "real", "schedule": portfolio.describe(play, fields)})
            what = f"{portfolio.describe(play, fields)}, {play.workload}, kraft.version {play.kraft_version}"
            if done is None or done[0]["verdict"] == "skipped":
                if done is not None:
                    self._note(f"{what}: not run: {done[0]['reason']}")
                misses += 1
                spent = self.budget.remaining() < portfolio.MIN_RUN_S + self.runner.overheads.estimate("quorum")
                if misses >= period or (done is None and spent):
                    self._note(f"the hunt ends with {self.budget.remaining():.0f} s of its budget left: no further "
                               f"run fits ({self.runner.last_miss or 'none could be run'})")
                    return
                continue
            misses = 0
            row, cfg = done
            row = self._add(row)
            errors = errors + 1 if row["verdict"] == "error" else 0
            if errors >= MAX_ERRORS_IN_A_ROW:
                self._note(f"{errors} runs in a row could not be made (the last: {row['error']}): the hunt stops")
                return
            if row["verdict"] == "invalid":
                if self.doc["first_failure"] is None:
                    self.real_failure(row, cfg)
                if self.opts.stop_at_first:
                    self.stopped = True
                    return

    def replay(self, path: Path) -> bool:
        """Replay the simulator's scenario ``path`` on a real cluster once; True when the real
        cluster failed too (recorded as ``first_failure.reproduced``: the row)."""
        try:
            doc = load(path)
            run = retarget(doc["run"], self.opts.db)
        except (ScenarioError, OSError, ValueError) as e:
            self._note(f"the simulator's scenario {path} cannot be replayed: {e}")
            return False
        seed = run.get("seed", self.opts.seed)
        fields = {k: v for k, v in run.items() if k not in PLACEMENT}
        fields.setdefault("workload", target_spec(self.opts.db).default_workload)
        fields.update(self.opts.overrides(), nemesis=[], scenario=doc["steps"], scenario_file=str(path))
        done = self.runner.run(fields, seed, tags={"phase": "replay", "schedule": f"scenario {path.name}"})
        if done is None or done[0]["verdict"] == "skipped":
            self._note(f"the simulator's scenario {path} was not replayed: "
                       f"{done[0]['reason'] if done else 'no time left in the budget'}")
            return False
        row = self._add(done[0])
        ff = self.doc["first_failure"]
        if row["verdict"] == "invalid":
            ff["reproduced"] = row["n"]
            self.report.save()
            return True
        return False

    def real_failure(self, row: dict, cfg) -> None:
        """Record the first failed real run and shrink it into a scenario within the budget."""
        ff = {"row": row["n"], "phase": row["phase"], "elapsed_s": round(self.budget.elapsed(), 1),
              "lock_wait_s": round(self.budget.waited_s, 1),
              "detect_s": row.get("detect_s"), "store": row.get("store"), "repeat": row.get("repeat"),
              "what": f"{row['phase']} run {row['n']}: {row['schedule']}, {row['workload']}, kraft.version "
                      f"{row['kraft_version']}, seed {row['seed']}: "
                      + ", ".join(f"{k} {n}" for k, n in row["anomalies"].items()),
              "scenario": None}
        self.doc["first_failure"] = ff
        self.report.save()
        by = None if self.opts.stop_at_first else self.budget.clock() + self.budget.remaining() / 2

        def attempt(fields: dict, seed: int) -> dict | None:
            done = self.runner.run(fields, seed, by=by, tags={"phase": "shrink", "schedule": f"failure-{row['n']}"})
            return done[0] if done is not None and done[0]["verdict"] != "skipped" else None

        def progress(doc: dict) -> None:
            ff.update(scenario=doc["scenario"], scenario_full=doc["scenario_full"],
                      replay=f"kraft-chaos scenario run {doc['scenario']}",
                      shrink={k: doc.get(k) for k in ("faults_before", "faults_after", "wall_s")}
                      | {"attempts": len(doc["attempts"]), "runs": doc["attempts"]})
            self.report.save()

        try:
            shrink_failure(cfg, Path(row["store"]), set(row["anomalies"]), attempt, self.report.out,
                           f"failure-{row['n']}", max_runs=self.opts.shrink_runs, echo=self.echo, progress=progress)
        except (OSError, ValueError) as e:
            ff["shrink_error"] = f"{type(e).__name__}: {e}"
            self.echo(f"could not shrink {row['store']}: {ff['shrink_error']}")
            self.report.save()
            return
        self.echo(f"scenario: {ff['scenario']}")
