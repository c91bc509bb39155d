"""The hunt (``kraft-chaos hunt``): a time budget spent on the portfolio, phase by phase; the
first failure shrunk to a scenario; the report written as it goes.

1. **Simulation** (harness/hunt/sim_rounds.py, its batches harness/hunt/sim_phase.py, judged
   by our checkers), on the target the simulator models, unless ``--no-sim``: within
   ``SIM_SHARE`` of the budget, rounds of growing size (portfolio ``sim_targets``) round-robin
   over the simulator configurations (``sim_configs``: swarm testing, one configuration each
   seed draws; ``--no-swarm``: four fixed ones), each round a batch per configuration that
   continues its seeds, under the lock (it loads both cores); a configuration is one row,
   merged from its batches.
2. **Replay** (harness/hunt/real_rotation.py): when the simulator found a failure and the hunt
   goes on, its exported scenario runs once on a real cluster.
3. **Real runs** (harness/hunt/real_rotation.py, each run harness/hunt/real_phase.py): the
   rotation (harness/hunt/portfolio.py), each run's time limit capped so that one round of the
   schedules fits the budget left, until no run fits (or ``MAX_ERRORS_IN_A_ROW`` runs in a row
   could not be made).

The first failure (a violated invariant, or an invalid real run) is recorded with the time
into the hunt at which it was known, then shrunk at once: a simulator seed by ``sim.api.shrink_and_export``,
a real run by harness/hunt/shrink_real.py (with the rest of the budget under ``--stop-at-first``,
else with at most half of it). Then the hunt stops (``--stop-at-first``) or goes on. Ctrl-C
(and SIGTERM) tears the current run down (the runner does) and ends the hunt with its report.
:class:`Hunt` holds the hunt's state and its start and end; its two phases are
:class:`harness.hunt.sim_rounds.SimRounds` and :class:`harness.hunt.real_rotation.RealRotation`.
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
from harness.hunt import portfolio
from harness.hunt.budget import Budget
from harness.hunt.options import HuntOptions
from harness.hunt.real_phase import RealRunner, RunFn
from harness.hunt.real_rotation import RealRotation
from harness.hunt.report import HuntReport, row_line
from harness.hunt.sim_rounds import SimRounds
from harness.run.runner import Interrupted
from harness.simulation.judge import judge_history
from history import store
from sim.judging import Judge

log = logging.getLogger("kraft_chaos.hunt")

#: the simulator a hunt runs (the API of sim/README.md) unless :class:`Hunt` is given another
SIMULATOR: ModuleType | None = sim.api
#: :class:`Hunt`'s ``sim_api`` when none is given: :data:`SIMULATOR`
DEFAULT = object()


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


class Hunt(SimRounds, RealRotation):
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
