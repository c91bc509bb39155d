"""The hunt's simulation phase, driven (:class:`SimRounds`, a part of harness/hunt/loop.py's
``Hunt``): rounds of growing size over the simulator configurations (harness/hunt/portfolio.py
``sim_configs``, ``sim_targets``), each round a batch per configuration
(harness/hunt/sim_phase.py ``run_batch``) that continues its seeds under the lock within the
phase's share of the budget (``portfolio.SIM_SHARE``), each configuration one row of the report
merged from its batches, and the first failure shrunk and exported as a scenario at once
(``shrink_and_export`` of the simulator's API).
"""
from __future__ import annotations

import time
from pathlib import Path

from harness.hunt import portfolio
from harness.hunt.report import row_line
from harness.hunt.sim_phase import SIM_TARGET, merge_rows, run_batch, sim_command, sim_options

#: why the simulation phase ended early: its share of the budget, or the lock not free in it
NO_TIME, NO_LOCK = "time", "lock"


class SimRounds:
    """The simulation phase of a hunt (harness/hunt/loop.py ``Hunt``, which sets what it reads:
    ``opts`` (HuntOptions), ``budget`` (Budget), ``report`` (HuntReport) and ``doc`` (its
    document), ``echo``, ``api`` (the simulator's API or None) and ``api_why``, ``judge``,
    ``stopped``, ``sim_configs``, ``_batches`` ({config: [batch rows]}), ``_sim_rows``
    ({config: row}), ``_scenario`` (the first failure's scenario path or None), and ``_note``)."""

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
