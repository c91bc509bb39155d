"""``kraft-chaos hunt``'s loop (harness/hunt/loop.py, sim_rounds.py, real_rotation.py) with a
stand-in for real runs and a fake simulator: the budget is never overrun, the rotation's
coverage, the first failure shrunk into a scenario (real and simulated), the replay of the
simulator's scenario, stop or go on, Ctrl-C, errors and the exit codes. Time is a fake clock that each run or seed advances: no timing
assertion, only what the hunt decides."""
from __future__ import annotations

import dataclasses
import json
import os
import shlex
import signal
import types
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from clusters.errors import ClusterError
from faults.registry import families, fault_spec
from harness.cli.main import build_parser
from harness.config.resolved import resolve
from harness.config.run import scenario_config
from harness.config.scenario import load
from harness.hunt import portfolio
from harness.hunt.loop import Hunt
from harness.hunt.options import HuntOptions
from harness.hunt.real_rotation import MAX_ERRORS_IN_A_ROW
from harness.run.runner import Interrupted
from harness.simulation.judge import judge_history
from sim.swarm import DIMENSIONS

#: what a stand-in run takes besides its time limit (virtual s)
FAKE_OVERHEAD_S = 20.0


class Clock:
    """A fake monotonic clock (s)."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def run_faults(cfg) -> list[tuple[str, dict]]:
    """The faults a stand-in run plays: ``(family, done value)``, from a scenario's steps or
    ``--nemesis`` (its families; the targeted faults, which play as other families, left out)."""
    if cfg.scenario is not None:
        return [(s["nemesis"].split("-", 1)[1], {**s.get("value", {})}) for s in cfg.scenario
                if s.get("nemesis", "").startswith("start-")]
    names = [name.split(":")[0] for name in cfg.nemesis]
    return [(f, {"kind": fault_spec(f).kinds[0], "targets": [f"n{i % 3 + 1}"]}) for i, f in enumerate(names)
            if f in families()]


class FakeCluster:
    """A ``run(config, run_dir)`` stand-in (``config`` resolved; each call is recorded as the
    fields of its ``config.flat``, with ``started`` and ``ended`` on the clock): takes the run's
    time limit (a scenario's budget) plus
    :data:`FAKE_OVERHEAD_S` of the clock; writes a history whose faults are the run's; is
    invalid (lost-write, naming the start of a kill, else the first op) when ``fails(families)``
    says so; ``raises``:
    an exception to raise at a call (1-based) instead."""

    def __init__(self, clock: Clock, fails=lambda families: False, verdict=None, raises: dict | None = None):
        self.clock, self.fails, self.verdict, self.raises = clock, fails, verdict, raises or {}
        self.calls: list = []          # a namespace of each run's fields, started and ended on the clock

    def __call__(self, resolved, run_dir: Path):
        cfg = types.SimpleNamespace(**dataclasses.asdict(resolved.flat))
        self.calls.append(cfg)
        if len(self.calls) in self.raises:
            raise self.raises[len(self.calls)]
        start = self.clock.t
        self.clock.t += portfolio.limit_s(dataclasses.asdict(resolved.flat)) + FAKE_OVERHEAD_S
        cfg.ended = self.clock.t
        cfg.started = start
        faults = run_faults(cfg)
        ops = [{"process": 0, "type": "invoke", "f": "append", "value": 1, "t": 0.0},
               {"process": 0, "type": "ok", "f": "append", "value": {"value": 1, "offset": 0, "epoch": 1}, "t": 0.5}]
        for i, (family, value) in enumerate(faults):
            t = 2.0 + 3 * i
            kind = {"kind": value["kind"]}
            ops += [{"process": "nemesis", "type": "invoke", "f": f"start-{family}", "value": kind, "t": t},
                    {"process": "nemesis", "type": "info", "f": f"start-{family}", "value": value, "t": t + 0.1},
                    {"process": "nemesis", "type": "invoke", "f": f"stop-{family}", "value": kind, "t": t + 2},
                    {"process": "nemesis", "type": "info", "f": f"stop-{family}", "value": {}, "t": t + 2.1}]
        named = next((i for i, op in enumerate(ops) if op["f"] == "start-kill" and op["type"] == "info"), 1)
        with open(run_dir / "history.jsonl", "w") as fh:
            for i, op in enumerate(ops):
                t = op.pop("t")
                fh.write(json.dumps({"index": i, "time": int(t * 1e9), **op}) + "\n")
        if self.verdict is not None:
            return {"valid": self.verdict, "anomalies": {}}, run_dir
        bad = self.fails([f for f, _ in faults])
        return ({"valid": not bad, "anomalies": {"lost-write": int(bad), "phantom": 0},
                 "checkers": {"lost-write": {"anomalies": [{"op": named}] if bad else []}}}, run_dir)


def kill_fails(families) -> bool:
    return "kill" in families


@dataclasses.dataclass(frozen=True)
class SimOptions:
    voters: int = 3
    brokers: int = 0
    kraft_version: int = 0
    unsafe: tuple = ()
    sim_seconds: float = 30.0


@dataclasses.dataclass(frozen=True)
class SeedOutcome:
    seed: int
    ok: bool
    invariant: str | None
    detail: str | None
    events: int
    sim_seconds: float
    wall_s: float


@dataclasses.dataclass
class SimCall:
    """One call of the fake ``simulate``: its options, workers, deadline, the seeds asked for
    and the clock when it came."""
    opts: SimOptions
    workers: int
    deadline: float | None
    seeds: range
    t: float

    @property
    def config(self) -> tuple[int, int]:
        return self.opts.brokers, self.opts.kraft_version


def batches(sim) -> list[SimCall]:
    """The fake simulator's calls, one per batch: a batch's first seed run in the hunt's own
    process (``workers`` 1, the phase's first batch) joined to the rest of it."""
    out: list[SimCall] = []
    for c in sim.calls:
        last = out[-1] if out else None
        if last is not None and last.workers == 1 and last.config == c.config and last.seeds.stop == c.seeds.start:
            out[-1] = SimCall(c.opts, c.workers, c.deadline, range(last.seeds.start, c.seeds.stop), last.t)
        else:
            out.append(c)
    return out


def fake_sim(clock: Clock, bad: dict | None = None, per_seed_s: float = 0.5, raises: Exception | None = None,
             interrupt_at: tuple | None = None):
    """A ``sim.api`` stand-in: each seed takes ``per_seed_s`` of the clock; the seeds in
    ``bad[(brokers, kraft_version)]`` violate ``at-most-one-leader``; a failing seed exports a
    scenario with one kill (``exported``: options, seed, path and the clock then).
    ``interrupt_at`` ``(brokers, kraft_version, seed)``: Ctrl-C instead of that seed.
    ``judges``: the judge each call of ``simulate`` and ``shrink_and_export`` was given."""
    api = types.SimpleNamespace(SimOptions=SimOptions, calls=[], exported=[], judges=[])

    def simulate(opts, seeds, workers=2, deadline=None, judge=None):
        api.calls.append(SimCall(opts, workers, deadline, seeds, clock.t))
        api.judges.append(judge)
        if raises is not None:
            raise raises
        for s in seeds:
            if deadline is not None and clock.t >= deadline:
                return
            if interrupt_at == (opts.brokers, opts.kraft_version, s):
                raise KeyboardInterrupt()
            clock.t += per_seed_s
            hit = s in (bad or {}).get((opts.brokers, opts.kraft_version), ())
            yield SeedOutcome(s, not hit, "at-most-one-leader" if hit else None,
                              "two leaders in epoch 4 at 12.5 s" if hit else None, 900, 30.0, per_seed_s)

    def shrink_and_export(opts, seed, out_dir, judge=None):
        api.judges.append(judge)
        path = Path(out_dir) / f"seed-{seed}.toml"
        path.write_text('[run]\nseed = %d\nnodes = 3\n\n[[step]]\nnemesis = "start-kill"\nvalue = { kind = "leader" }\n\n'
                        '[[step]]\nsleep = 2\n\n[[step]]\nnemesis = "stop-kill"\nvalue = { kind = "leader" }\n' % seed)
        api.exported.append((opts, seed, path, clock.t))
        return path

    api.simulate, api.shrink_and_export = simulate, shrink_and_export
    return api


def hunt(tmp_path, clock, run, sim=None, **opts) -> Hunt:
    """A hunt of the fixed simulator configurations (``--no-swarm``: four, so the rounds
    interleave them) unless told ``swarm=True``."""
    o = HuntOptions(**{"seed": 11, "store": str(tmp_path / "store"), "swarm": False, **opts})
    return Hunt(o, tmp_path / "report", run=run, sim_api=sim, echo=lambda m: None, clock=clock)


def test_a_clean_hunt_covers_the_rotation_and_never_runs_past_its_budget(tmp_path):
    clock = Clock()
    run = FakeCluster(clock)
    h = hunt(tmp_path, clock, run)
    doc = h.run()
    deadline = h.budget.deadline
    assert doc["exit_code"] == 0 and doc["first_failure"] is None and not doc["interrupted"]
    assert all(c.ended <= deadline for c in run.calls)
    assert deadline - clock.t < portfolio.MIN_RUN_S + 30.0       # the budget was spent, not left over
    rows = doc["rows"]
    assert [r["phase"] for r in rows] == ["real"] * len(rows) and {r["verdict"] for r in rows} == {"valid"}
    assert rows[0]["schedule"] == "default"
    assert {r["schedule"].split(" ")[0] for r in rows} == {s for s, _ in h.order}    # every schedule once at least
    seeds = [r["seed"] for r in rows]      # seed + n for the n-th play; near the end one that no longer fits is skipped
    assert seeds == sorted(set(seeds)) and seeds[:len(h.order)] == [11 + i for i in range(len(h.order))]
    assert {r["workload"] for r in rows} == {"append", "kv", "queue"} and {r["kraft_version"] for r in rows} == {0, 1}
    assert all(r["time_limit"] <= portfolio.RUN_CAP_S for r in rows if not r["schedule"].startswith("isr-shrink"))
    assert doc["sim"] == {"status": "unavailable", "reason": "no simulator given"}
    out = tmp_path / "report"
    assert json.loads((out / "hunt.json").read_text())["rows"] == rows
    text = (out / "hunt.txt").read_text()
    assert "simulation: unavailable" in text and "first failure: none" in text and "repeat with: kraft-chaos hunt" in text
    suite = ET.parse(out / "hunt.xml").getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == (str(len(rows)), "0", "0")
    assert suite.find("testcase").get("classname") == "kraft-chaos.matrix.hunt-real.append"


def test_stop_at_first_shrinks_the_failed_run_into_a_scenario_that_still_fails(tmp_path):
    clock = Clock()
    run = FakeCluster(clock, fails=kill_fails)
    h = hunt(tmp_path, clock, run, stop_at_first=True, junit=str(tmp_path / "ci" / "hunt.xml"))
    doc = h.run()
    assert doc["exit_code"] == 1
    (row,) = doc["rows"]                       # the first run (default: every fault) fails; no further run
    assert row["verdict"] == "invalid" and row["anomalies"] == {"lost-write": 1}
    ff = doc["first_failure"]
    assert ff["row"] == 1 and ff["phase"] == "real" and ff["elapsed_s"] == round(run.calls[0].ended - 1000.0, 1)
    assert ff["detect_s"] == 5.1 and "lost-write 1" in ff["what"]    # the op the anomaly names: kill's start
    full, shrunk = load(ff["scenario_full"]), load(ff["scenario"])
    starts = lambda d: [s["nemesis"] for s in d["steps"] if s.get("nemesis", "").startswith("start-")]  # noqa: E731
    assert starts(full) == [f"start-{n}" for n in ("partition", "kill", "pause", "crash", "flap")]
    assert starts(shrunk) == ["start-kill"]
    assert ff["shrink"]["faults_before"] == 5 and ff["shrink"]["faults_after"] == 1
    attempts = ff["shrink"]["runs"]
    assert len(attempts) == len(run.calls) - 1 and attempts[-1]["fails"]
    assert all(c.scenario is not None and c.seed == 11 and c.ended <= h.budget.deadline for c in run.calls[1:])
    cfg = scenario_config(shrunk, Path(ff["scenario"]))
    resolve(cfg)                                   # the scenario file is a run the registries accept
    assert cfg.seed == 11 and cfg.workload == row["workload"]
    text = (tmp_path / "report" / "hunt.txt").read_text()
    assert f"first failure: {ff['elapsed_s']:.0f} s into the hunt" in text and "shrunk: 5 fault(s) -> 1" in text
    assert f"replay with: kraft-chaos scenario run {ff['scenario']}" in text
    suite = ET.parse(tmp_path / "ci" / "hunt.xml").getroot().find("testsuite")     # --junit's copy
    assert (suite.get("tests"), suite.get("failures")) == ("1", "1")


def test_without_stop_it_goes_on_and_shrinks_only_the_first_failure_with_half_of_what_is_left(tmp_path):
    clock = Clock()
    run = FakeCluster(clock, fails=kill_fails)
    h = hunt(tmp_path, clock, run, minutes=40)
    doc = h.run()
    rows = doc["rows"]
    assert doc["exit_code"] == 1 and len(rows) > 3
    assert sum(r["verdict"] == "invalid" for r in rows) > 1 and doc["first_failure"]["row"] == 1
    first_end = run.calls[0].ended
    shrink_by = first_end + (h.budget.deadline - first_end) / 2
    attempts = [c for c in run.calls[1:] if c.scenario is not None and c.seed == 11]    # the first run's replays
    assert attempts and all(c.ended <= shrink_by for c in attempts)
    assert len([p for p in (tmp_path / "report").glob("failure-*.toml")]) == 2   # full and shrunk, of the first only
    assert all(c.ended <= h.budget.deadline for c in run.calls)


CONFIGS = [(c.brokers, c.kraft_version) for c in portfolio.FIXED_CONFIGS]


def test_simulation_seeds_first_in_rounds_within_their_share_then_real_runs(tmp_path):
    clock = Clock()
    sim = fake_sim(clock)
    run = FakeCluster(clock)
    h = hunt(tmp_path, clock, run, sim=sim, unsafe=("no-check-quorum",), minutes=8)
    doc = h.run()
    assert doc["exit_code"] == 0 and doc["sim"]["status"] == "ran"
    sims = [r for r in doc["rows"] if r["phase"] == "sim"]
    assert [(r["schedule"], r["kraft_version"]) for r in sims] == [
        ("quorum", 0), ("quorum", 1), ("quorum+3 brokers", 0), ("quorum+3 brokers", 1)]
    assert doc["rows"][:4] == sims and all(r["phase"] == "real" for r in doc["rows"][4:]) and len(doc["rows"]) > 4
    assert all(c.opts.unsafe == ("no-check-quorum",) for c in sim.calls)
    assert set(sim.judges) == {judge_history}           # our checkers judge every simulated history
    # a 120 s share at 0.5 s a seed: rounds of 10 and 40 seeds per configuration in turn, then a
    # third round (100 asked) that the share cuts: each configuration gets an equal part of its rest
    share = portfolio.SIM_SHARE * h.budget.seconds
    end = h.budget.start + share
    # the phase's first seed runs in the hunt's process (its workers are forked warm), the rest in two
    assert (sim.calls[0].workers, sim.calls[0].seeds) == (1, range(11, 12)) and sim.calls[1].seeds == range(12, 21)
    assert all(c.workers == 2 for c in sim.calls[1:])
    done = batches(sim)
    assert [c.config for c in done] == CONFIGS * 3
    assert [len(c.seeds) for c in done] == [10] * 4 + [40] * 4 + [100] * 4
    assert all(c.deadline <= end for c in done) and done[-1].deadline == end
    assert [c.deadline for c in done[8:]] == [end - 15, end - 10, end - 5, end]
    for cfg in CONFIGS:         # each batch continues its configuration's seeds where the last one ended
        assert [c.seeds.start for c in done if c.config == cfg] == [11, 21, 61]
    assert run.calls[0].started <= end + 0.5          # the real runs begin after the share
    # one row per configuration, its batches merged: nothing of the share was lost to the rounds
    assert all(r["seeds"] == 60 and r["batches"] == 3 and r["verdict"] == "valid" for r in sims)
    assert sum(r["seeds"] for r in sims) == share / 0.5
    assert all(r["seed"] == "11..70" and r["events"] == 60 * 900 and r["sim_seconds"] == 60 * 30.0 for r in sims)
    assert [r["started_s"] for r in sims] == [0.0, 5.0, 10.0, 15.0]         # of their first batch
    assert sims[2]["repeat"] == ("kraft-chaos simulate --seeds 60 --first-seed 11 --no-swarm --voters 3 --brokers 3 "
                                 "--kraft-version 0 --unsafe no-check-quorum")


def test_with_time_enough_each_configuration_runs_all_its_seeds_in_the_rounds(tmp_path):
    clock = Clock()
    sim = fake_sim(clock, per_seed_s=0.01)
    doc = hunt(tmp_path, clock, FakeCluster(clock), sim=sim, minutes=8).run()
    sims = [r for r in doc["rows"] if r["phase"] == "sim"]
    targets = portfolio.sim_targets()
    assert [c.config for c in batches(sim)] == CONFIGS * len(targets)
    for cfg in CONFIGS:
        ranges = [c.seeds for c in batches(sim) if c.config == cfg]
        assert [len(r) for r in ranges] == [b - a for a, b in zip([0, *targets], targets)]
        assert [s for r in ranges for s in r] == list(range(11, 11 + portfolio.SIM_SEEDS))     # contiguous, each once
    assert all(r["seeds"] == portfolio.SIM_SEEDS and r["seed"] == "11..1010" and r["verdict"] == "valid" for r in sims)
    assert all(f"--seeds {portfolio.SIM_SEEDS} --first-seed 11 " in r["repeat"] for r in sims)
    assert doc["rows"][4]["phase"] == "real"          # the phase ended when the seeds were done


def test_a_bug_only_a_broker_configuration_shows_is_found_in_seconds_and_shrunk_at_once(tmp_path):
    clock = Clock()
    sim = fake_sim(clock, bad={(3, 0): {13, 100}})
    run = FakeCluster(clock, fails=kill_fails)
    h = hunt(tmp_path, clock, run, sim=sim, minutes=20)
    doc = h.run()
    share = portfolio.SIM_SHARE * h.budget.seconds
    ff = doc["first_failure"]
    # one batch per configuration in turn would have reached the brokers after half the share
    # (150 s); the first round gives the quorum configurations 10 seeds each (5 s) first
    assert ff["phase"] == "sim" and "quorum+3 brokers, kraft.version 0, seed 13" in ff["what"]
    assert ff["elapsed_s"] == 10 * 0.5 * 2 + 3 * 0.5 and ff["elapsed_s"] < share / 20
    before = batches(sim)[:2]
    assert [(c.config, len(c.seeds)) for c in before] == [((0, 0), 10), ((0, 1), 10)]
    # shrunk and exported as soon as it came, mid-batch, while the phase went on
    ((opts, seed, path, at),) = sim.exported
    assert (opts.brokers, opts.kraft_version, seed) == (3, 0, 13) and at == h.budget.start + ff["elapsed_s"]
    assert ff["scenario"] == str(path)
    sims = [r for r in doc["rows"] if r["phase"] == "sim"]
    assert [r["verdict"] for r in sims] == ["valid", "valid", "invalid", "valid"]
    assert ff["row"] == sims[2]["n"] == 3
    assert sims[2]["anomalies"] == {"at-most-one-leader": 2} and sims[2]["failing_seeds"] == [13, 100]
    assert sims[2]["detail"] == "seed 13: at-most-one-leader: two leaders in epoch 4 at 12.5 s"
    assert all(r["seeds"] > 10 and r["batches"] > 1 for r in sims)       # the other configurations still ran on
    assert doc["rows"][4]["phase"] == "replay" and ff["reproduced"] == 5


def test_a_simulated_failure_is_exported_replayed_on_a_real_cluster_and_the_hunt_goes_on(tmp_path):
    clock = Clock()
    sim = fake_sim(clock, bad={(0, 1): {14, 20}})
    run = FakeCluster(clock, fails=kill_fails)
    doc = hunt(tmp_path, clock, run, sim=sim).run()
    sims = [r for r in doc["rows"] if r["phase"] == "sim"]
    assert [r["verdict"] for r in sims] == ["valid", "invalid", "valid", "valid"]
    assert sims[1]["anomalies"] == {"at-most-one-leader": 2} and sims[1]["failing_seeds"] == [14, 20]
    ff = doc["first_failure"]
    assert ff["phase"] == "sim" and ff["row"] == 2 and "seed 14: at-most-one-leader" in ff["what"]
    assert "simulate --seed 14 " in ff["repeat"]
    # the repeat command is one `kraft-chaos simulate` takes
    args = build_parser().parse_args(shlex.split(ff["repeat"])[1:])
    assert (args.seed, args.kraft_version) == (14, 1)
    ((opts, seed, path, _),) = sim.exported            # only the first failure is shrunk
    assert (opts.kraft_version, opts.brokers, seed) == (1, 0, 14) and ff["scenario"] == str(path)
    replay = doc["rows"][4]
    assert replay["phase"] == "replay" and replay["verdict"] == "invalid" and ff["reproduced"] == replay["n"]
    assert run.calls[0].scenario == load(path)["steps"] and run.calls[0].seed == 14 and run.calls[0].nodes == 3
    assert [r["phase"] for r in doc["rows"][5:]] == ["real"] * (len(doc["rows"]) - 5)
    assert doc["exit_code"] == 1


def test_by_default_the_simulation_is_swarm_testing_one_configuration_each_seed_draws(tmp_path):
    clock = Clock()
    sim = fake_sim(clock, bad={(0, 0): {17}})      # the stand-in keys by the options as given (swarm: defaults)
    doc = hunt(tmp_path, clock, FakeCluster(clock, fails=kill_fails), sim=sim, swarm=True).run()
    sims = [r for r in doc["rows"] if r["phase"] == "sim"]
    assert [(r["schedule"], r["kraft_version"], r["verdict"]) for r in sims] == [("swarm", "drawn", "invalid")]
    assert all(c.opts.swarm == DIMENSIONS for c in sim.calls)           # every dimension drawn by each seed
    ff = doc["first_failure"]
    assert ff["repeat"] == "kraft-chaos simulate --seed 17" and "simulation swarm" in ff["what"]
    args = build_parser().parse_args(shlex.split(ff["repeat"])[1:])
    assert args.seed == 17 and not args.no_swarm and args.voters is None and args.kraft_version is None
    ((opts, seed, _path, _),) = sim.exported
    assert opts.swarm == DIMENSIONS and seed == 17
    assert "--no-swarm" in HuntOptions(seed=1, swarm=False).repeat_command()
    assert "--no-swarm" not in HuntOptions(seed=1).repeat_command()


def test_a_simulated_failure_with_stop_at_first_ends_the_hunt(tmp_path):
    clock = Clock()
    sim = fake_sim(clock, bad={(3, 0): {12}})
    run = FakeCluster(clock)
    doc = hunt(tmp_path, clock, run, sim=sim, stop_at_first=True).run()
    assert [r["verdict"] for r in doc["rows"]] == ["valid", "valid", "invalid"]
    assert doc["rows"][2]["seeds"] == 2             # no seed awaited after the failing one
    assert doc["first_failure"]["row"] == 3 and doc["first_failure"]["elapsed_s"] == 11.0     # 10 + 10 + 2 seeds
    assert [len(c.seeds) for c in batches(sim)] == [10, 10, 10]
    assert run.calls == [] and doc["exit_code"] == 1 and doc["first_failure"]["scenario"].endswith("seed-12.toml")
    assert len(sim.exported) == 1 and sim.judges[-1] is judge_history      # the shrink judges as the seeds were


def test_by_default_the_hunt_runs_the_simulator_judged_by_our_checkers(tmp_path):
    import sim.api
    h = Hunt(HuntOptions(seed=1, store=str(tmp_path / "s")), tmp_path / "r", run=FakeCluster(Clock()))
    assert h.api is sim.api and h.judge is judge_history and h.api_why is None


def test_with_a_broken_simulator_the_hunt_still_runs_and_says_so(tmp_path):
    clock = Clock()
    doc = hunt(tmp_path, clock, FakeCluster(clock), sim=fake_sim(clock, raises=RuntimeError("core dumped")),
               minutes=6).run()
    sims = [r for r in doc["rows"] if r["phase"] == "sim"]
    assert len(sims) == 4 and {r["verdict"] for r in sims} == {"error"} and "core dumped" in sims[0]["error"]
    assert any(r["phase"] == "real" and r["verdict"] == "valid" for r in doc["rows"])
    assert doc["exit_code"] == 5


def test_no_sim_and_another_target_skip_the_simulator(tmp_path):
    clock = Clock()
    sim = fake_sim(clock)
    doc = Hunt(HuntOptions(seed=3, store=str(tmp_path / "s"), minutes=3, sim=False), tmp_path / "r",
               run=FakeCluster(clock), sim_api=sim, echo=lambda m: None, clock=clock).run()
    assert doc["sim"] == {"status": "off", "reason": "--no-sim"} and sim.calls == []
    assert "simulation: off: --no-sim" in (tmp_path / "r" / "hunt.txt").read_text()


@pytest.mark.parametrize("at", [runner_exc for runner_exc in (Interrupted("SIGINT"), KeyboardInterrupt())],
                         ids=["during-a-run", "between-runs"])
def test_ctrl_c_ends_the_hunt_with_the_report_of_what_ran(tmp_path, at):
    clock = Clock()
    run = FakeCluster(clock, raises={3: at})
    doc = hunt(tmp_path, clock, run).run()
    assert doc["interrupted"] and doc["exit_code"] == 130
    assert [r["verdict"] for r in doc["rows"]] == ["valid", "valid", "interrupted"]
    h = hunt(tmp_path / "again", Clock(), FakeCluster(Clock()))
    assert doc["rows"][2]["phase"] == "real" and doc["rows"][2]["schedule"].split()[0] == h.order[2][0]
    saved = json.loads((tmp_path / "report" / "hunt.json").read_text())
    assert saved["interrupted"] and saved["finished"] and len(saved["rows"]) == 3
    assert "(interrupted)" in (tmp_path / "report" / "hunt.txt").read_text()


def test_sigterm_ends_the_hunt_as_ctrl_c_does_and_its_handler_is_restored(tmp_path):
    clock = Clock()
    run = FakeCluster(clock)
    real = run.__call__

    def terminated_at_the_third(cfg, run_dir):
        if len(run.calls) == 2:
            os.kill(os.getpid(), signal.SIGTERM)      # a CI job's time-out, between runs
        return real(cfg, run_dir)

    before = signal.getsignal(signal.SIGTERM)
    doc = hunt(tmp_path, clock, terminated_at_the_third).run()
    assert doc["interrupted"] and doc["exit_code"] == 130 and len(doc["rows"]) == 3
    assert doc["rows"][-1]["verdict"] == "interrupted"
    assert signal.getsignal(signal.SIGTERM) is before


@pytest.mark.parametrize("run_kw, code", [({"verdict": "unknown"}, 2),
                                          ({"raises": {i: ClusterError("no engine") for i in range(1, 99)}}, 4),
                                          ({"raises": {i: RuntimeError("bug") for i in range(1, 99)}}, 5)])
def test_unknowns_and_runs_that_could_not_be_made(tmp_path, run_kw, code):
    clock = Clock()
    doc = hunt(tmp_path, clock, FakeCluster(clock, **run_kw), minutes=4).run()
    assert doc["exit_code"] == code and doc["rows"]
    if "raises" in run_kw:       # runs that cannot be made take no time: the hunt stops after a few
        assert [r["verdict"] for r in doc["rows"]] == ["error"] * MAX_ERRORS_IN_A_ROW
        assert any("3 runs in a row could not be made" in n for n in doc["notes"])


def test_a_kafka_hunt_skips_what_its_release_cannot_and_names_known_bugs(tmp_path):
    clock = Clock()
    run = FakeCluster(clock, fails=lambda families: "partition" in families)
    doc = hunt(tmp_path, clock, run, db="kafka", kafka_version="3.7.2", minutes=45).run()
    rows = doc["rows"]
    assert doc["sim"]["status"] == "not-for-target" and {r["kraft_version"] for r in rows} == {0}
    assert all(r["kafka_version"] == "3.7.2" and r["schedule"].startswith("kafka-") for r in rows)
    assert any("kafka-remove-partitioned" in n and "not run" in n for n in doc["notes"])
    failed = [r for r in rows if r["verdict"] == "invalid"]
    # a static quorum's wiped voter (metadata), the last ISR member's power loss (queue): each
    # workload's lost-write is its own checker's; Jepsen's checker (txn) has no known one here
    expect = {"metadata": {"lost-write": ["KAFKA-14077"]}, "queue": {"lost-write": ["KAFKA-15332"]}, "txn": None}
    assert failed and {r["workload"] for r in failed} == set(expect)
    assert all(r.get("known") == expect[r["workload"]] for r in failed)
    assert "lost-write 1 (known: KAFKA-14077)" in (tmp_path / "report" / "hunt.txt").read_text()
    assert all(c.kafka_version == "3.7.2" and c.db == "kafka" for c in run.calls)


def test_a_batch_that_ran_no_seed_is_skipped_and_a_violation_stands_if_the_simulator_then_fails():
    from harness.hunt.sim_phase import run_batch
    clock = Clock()
    sim = fake_sim(clock)
    cfg = portfolio.FIXED_CONFIGS[0]
    row, first = run_batch(sim, cfg, (), 1, 50, deadline=clock.t - 1, stop_at_first=False, elapsed=lambda: 0.0,
                           echo=lambda m: None)
    assert (row["verdict"], row["seeds"], first) == ("skipped", 0, None) and "no seed ran" in row["reason"]

    def broken_after_a_violation(opts, seeds, workers=2, deadline=None, judge=None):
        yield SeedOutcome(1, False, "hw-monotonic", "n2's high watermark went from 9 to 7", 10, 30.0, 0.1)
        raise RuntimeError("worker died")

    sim.simulate = broken_after_a_violation
    row, first = run_batch(sim, cfg, (), 1, 50, deadline=clock.t + 100, stop_at_first=False, elapsed=lambda: 3.0,
                           echo=lambda m: None)
    assert row["verdict"] == "invalid" and row["error"] == "RuntimeError: worker died"
    assert first == {"seed": 1, "invariant": "hw-monotonic", "detail": "n2's high watermark went from 9 to 7",
                     "elapsed_s": 3.0, "configuration": "quorum kv0"}


def test_merged_rows_sum_their_batches_over_one_contiguous_range():
    from harness.hunt.sim_phase import LISTED_SEEDS, merge_rows, run_batch
    clock = Clock()
    sim = fake_sim(clock, bad={(3, 1): set(range(15, 40))})
    cfg = portfolio.SimConfig(3, 1)
    a, first = run_batch(sim, cfg, ("page-cache-ack",), 11, 10, clock.t + 100, False, lambda: 1.0, lambda m: None)
    b, _ = run_batch(sim, cfg, ("page-cache-ack",), 21, 40, clock.t + 100, False, lambda: 2.0, lambda m: None)
    assert first["seed"] == 15 and (a["seed"], b["seed"]) == ("11..20", "21..60")
    row = merge_rows(cfg, ("page-cache-ack",), 11, [a, b])
    assert (row["seeds"], row["seed"], row["batches"], row["verdict"]) == (50, "11..60", 2, "invalid")
    assert row["anomalies"] == {"at-most-one-leader": 25} and row["failing_seeds"] == list(range(15, 15 + LISTED_SEEDS))
    assert row["detail"] == a["detail"] and row["started_s"] == 1.0 and row["events"] == 50 * 900
    assert row["repeat"] == ("kraft-chaos simulate --seeds 50 --first-seed 11 --no-swarm --voters 3 --brokers 3 "
                             "--kraft-version 1 --unsafe page-cache-ack")
    ok = {**b, "anomalies": {}, "failing_seeds": [], "detail": None, "verdict": "valid"}
    late = {**ok, "seeds": 0, "verdict": "skipped", "reason": "no seed ran"}
    assert merge_rows(cfg, (), 11, [ok, late])["verdict"] == "valid"          # a last batch cut by the share
    broken = {**late, "verdict": "error", "error": "RuntimeError: x", "error_kind": "harness"}
    assert merge_rows(cfg, (), 11, [ok, broken])["verdict"] == "error"
    assert merge_rows(cfg, (), 11, [a, {**broken, "verdict": "interrupted"}])["verdict"] == "invalid"   # it stands
    none = merge_rows(cfg, (), 11, [], started_s=7.0)
    assert (none["verdict"], none["seeds"], none["started_s"], none["seed"]) == ("skipped", 0, 7.0, "11..11")


@pytest.mark.parametrize("at, seeds", [((0, 1, 30), 19), ((3, 0, 15), 4)], ids=["later-batch", "first-batch"])
def test_ctrl_c_in_the_simulation_keeps_one_row_per_configuration(tmp_path, at, seeds):
    clock = Clock()
    sim = fake_sim(clock, interrupt_at=at)
    doc = hunt(tmp_path, clock, FakeCluster(clock), sim=sim).run()
    assert doc["interrupted"] and doc["exit_code"] == 130
    rows = doc["rows"]
    broken = [r for r in rows if r["verdict"] == "interrupted"]
    assert [(r["schedule"], r["kraft_version"]) for r in rows] == [(c.label(), c.kraft_version) for c in
                                                                   portfolio.FIXED_CONFIGS][:len(rows)]
    assert len(broken) == 1 and (broken[0]["kraft_version"], broken[0]["seeds"]) == (at[1], seeds)
    assert broken[0]["seed"] == f"11..{10 + seeds}" and broken[0]["n"] == 1 + CONFIGS.index(at[:2])
    assert [r["n"] for r in rows] == list(range(1, len(rows) + 1))
    assert json.loads((tmp_path / "report" / "hunt.json").read_text())["rows"] == rows


def test_a_configuration_whose_simulator_fails_leaves_and_the_others_go_on(tmp_path):
    clock = Clock()
    sim = fake_sim(clock)
    simulate = sim.simulate

    tries = []

    def fails_for_brokers_at_kv1(opts, seeds, workers=2, deadline=None, judge=None):
        tries.append((opts.brokers, opts.kraft_version))
        if (opts.brokers, opts.kraft_version) == (3, 1) and seeds.start > 11:
            raise RuntimeError("worker died")          # its second batch
        return simulate(opts, seeds, workers, deadline, judge)

    sim.simulate = fails_for_brokers_at_kv1
    doc = hunt(tmp_path, clock, FakeCluster(clock), sim=sim, minutes=6).run()
    sims = [r for r in doc["rows"] if r["phase"] == "sim"]
    assert [r["verdict"] for r in sims] == ["valid", "valid", "valid", "error"]
    assert sims[3]["seeds"] == 10 and sims[3]["error"] == "RuntimeError: worker died" and sims[3]["batches"] == 2
    assert all(r["seeds"] > 50 for r in sims[:3])      # they had its part of the share
    assert tries.count((3, 1)) == 2 and tries.count((0, 0)) > 2        # not tried again
    assert doc["exit_code"] == 5


def test_a_warm_batch_runs_its_first_seed_in_this_process_and_the_rest_in_workers():
    from harness.hunt.sim_phase import SIM_WORKERS, run_batch
    clock = Clock()
    sim = fake_sim(clock, bad={(0, 0): {1}})
    cfg = portfolio.FIXED_CONFIGS[0]
    row, first = run_batch(sim, cfg, (), 1, 5, clock.t + 100, False, lambda: 0.0, lambda m: None, warm=True)
    assert [(c.workers, c.seeds) for c in sim.calls] == [(1, range(1, 2)), (SIM_WORKERS, range(2, 6))]
    assert (row["seeds"], row["seed"], first["seed"]) == (5, "1..5", 1)
    sim.calls.clear()
    row, first = run_batch(sim, cfg, (), 1, 5, clock.t + 100, True, lambda: 0.0, lambda m: None, warm=True)
    assert [c.workers for c in sim.calls] == [1] and (row["seeds"], first["seed"]) == (1, 1)    # stopped at once
