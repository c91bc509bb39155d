"""The hunt's real-cluster phase, driven (:class:`RealRotation`, a part of harness/hunt/loop.py's
``Hunt``): the replay of the simulator's scenario, then the rotation of harness/hunt/portfolio.py,
each run's time limit capped so that one round of the schedules fits the budget left, until no
run fits or :data:`MAX_ERRORS_IN_A_ROW` runs in a row could not be made; the first failed run
shrunk to a scenario (harness/hunt/shrink_real.py) within the budget.
"""
from __future__ import annotations

from pathlib import Path

from harness.config.scenario import ScenarioError, load, retarget
from harness.hunt import portfolio
from harness.hunt.shrink_real import PLACEMENT, shrink_failure
from targets.registry import target_spec

#: real runs in a row that could not be made (a broken engine, a host gone) end the hunt
MAX_ERRORS_IN_A_ROW = 3


class RealRotation:
    """The real-cluster phase of a hunt (harness/hunt/loop.py ``Hunt``, which sets what it reads:
    ``opts`` (HuntOptions), ``budget`` (Budget), ``runner`` (harness/hunt/real_phase.py
    RealRunner), ``order`` (the rotation's schedules), ``report`` (HuntReport) and ``doc``,
    ``echo``, ``stopped``, and ``_add`` and ``_note``)."""

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
