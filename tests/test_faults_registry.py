"""faults/registry.py: every fault family's spec is complete and has its injector, and the
registry alone drives the nemesis, the schedule, the fault report, the fault windows, the
plots and the simulator: a family registered here (in a test, without touching any other
module) is applied, stopped, recorded, reported, shaded, drawn and exported."""
from __future__ import annotations

import asyncio
import importlib
import pkgutil
import random
import re

import pytest

import faults
from faults import registry
from faults.registry import FAULTS, SIMULATED, families, fault_spec, named, spec_of
from faults.spec import EXPLICIT, FaultSpec, SimHooks
from nemesis import registry as injectors
from nemesis.faults import Fault, check_kind
from nemesis.injector import Injector
from tests.nemesis_fakes import FakeHistory, drive, make_controller


def test_every_family_spec_is_complete():
    assert FAULTS and all(name == spec.name for name, spec in FAULTS.items())
    for spec in FAULTS.values():
        assert spec.kinds or spec.sim is not None, f"{spec.name}: neither a real nor a simulated kind"
        assert EXPLICIT not in spec.kinds and len(set(spec.kinds)) == len(spec.kinds), spec.name
        assert set(spec.leader_kinds) <= set(spec.kinds), spec.name
        assert spec.colour is None or re.fullmatch(r"#[0-9A-F]{6}", spec.colour), spec.name
        assert spec.kinds_for(5) == [k for k in spec.kinds if spec.usable(k, 5)], spec.name
        assert bool(spec.kinds_for(5)) == bool(spec.kinds), f"{spec.name}: no kind works on 5 nodes"
        if spec.sim is not None:
            assert spec.sim.weight > 0 and spec.sim.kinds, spec.name
            assert set(spec.sim.aims_at_leader) <= set(spec.sim.kinds), spec.name


def test_every_family_module_is_registered_once():
    modules = [m.name for m in pkgutil.iter_modules(faults.__path__) if m.name not in ("spec", "registry")]
    specs = [importlib.import_module(f"faults.{m}").SPEC for m in modules]
    assert sorted(s.name for s in specs) == sorted(FAULTS)
    assert all(FAULTS[s.name] is s for s in specs)


def test_every_real_family_has_its_injector_and_every_simulated_one_its_hooks():
    assert tuple(injectors.INJECTORS) == families()
    for name, inj in injectors.INJECTORS.items():
        assert inj.spec is FAULTS[name]
    assert set(SIMULATED) == {name for name, spec in FAULTS.items() if spec.sim is not None}
    assert len(set(SIMULATED)) == len(SIMULATED)
    assert fault_spec("clock").kinds == () and "clock" not in injectors.INJECTORS     # the simulator's alone
    with pytest.raises(ValueError, match="unknown fault family 'storm'"):
        fault_spec("storm")
    with pytest.raises(ValueError, match="unknown nemesis 'clock'"):
        injectors.injector("clock")


def test_the_hooks_find_what_they_are_promised():
    """The simulator's World has every SimWorld method; the controller every part of it the
    injectors use (nemesis/injector.py's docstring)."""
    from faults.spec import SimWorld
    from nemesis.controller import NemesisController
    from sim.world import World
    promised = [n for n in vars(SimWorld) if not n.startswith("_")]
    assert promised and all(callable(getattr(World, n)) for n in promised if n != "kraft_version")
    _cluster, _sim, _db, ctl = make_controller(3)
    for name in ("nodes", "rng", "db", "disks", "partitioner", "hold", "process_targets", "grudge",
                 "run_background", "packet_start", "packet_stop"):
        assert hasattr(ctl, name), name
    assert isinstance(ctl, NemesisController)


def test_the_named_schedules_name_registered_faults():
    from harness.config.schedules import SCHEDULES
    from nemesis.schedule import validate_fault_names
    for name, schedule in SCHEDULES.items():
        assert validate_fault_names(schedule.nemesis) == list(dict.fromkeys(schedule.nemesis)), name


def test_named_reads_nemesis_names_and_scenario_steps():
    steps = [{"nemesis": "start-wipe", "value": {}}, {"sleep": 1}, {"nemesis": "stop-wipe"},
             {"nemesis": "start-lag"}]
    assert [s.name for s in named(["partition:bridge", "lag", "kill", "partition"], steps)] == \
        ["partition", "kill", "wipe"]
    assert named(None, None) == []


# -- a family registered in a test ---------------------------------------------------------------

BLINK = FaultSpec("blink", ("one", "leader"), leader_kinds=("leader",), takes_down=True, colour="#123456",
                  label="blinks")


def _blink_injector(calls: list) -> Injector:
    """An injector that pauses its targets and resumes them at the stop, noting its calls."""
    def start(ctl, fault, value, waited) -> bool:
        targets, leader_unknown = ctl.process_targets(fault, waited)
        calls.append(("start", fault.kind, targets, waited.leader if waited is not None else None))
        value["targets"] = targets
        ctl.hold(fault, targets)
        value["blinked"] = [n for n in targets if ctl.db.pause(n)]
        return leader_unknown

    def stop(ctl, fault, targets, out) -> None:
        calls.append(("stop", fault.kind, targets))
        out["unblinked"] = [n for n in targets if ctl.db.resume(n)]
    return Injector(BLINK, start, stop)


@pytest.fixture
def blink(monkeypatch):
    """``blink`` registered for the test: its spec, and its injector (the calls it saw)."""
    calls: list = []
    monkeypatch.setitem(FAULTS, "blink", BLINK)
    monkeypatch.setitem(injectors.INJECTORS, "blink", _blink_injector(calls))
    return calls


def test_a_registered_family_is_applied_stopped_reported_and_plotted(blink):
    from checkers.fault_report import check_fault_report
    from checkers.fault_windows import fault_windows
    from harness.reports.plot_data import PlotData, fault_colour, fault_colours, fault_label
    from nemesis.worker import NemesisWorker

    _cluster, _sim, db, ctl = make_controller(3, leader="n2")
    history = FakeHistory()
    worker = NemesisWorker(ctl, history)
    asyncio.run(worker.invoke({"f": "start-blink", "value": {"kind": "leader"}}))
    assert db.paused == {"n2"} and ctl.active == {"blink": ["n2"]}
    asyncio.run(worker.invoke({"f": "stop-blink", "value": {"kind": "leader"}}))
    assert db.paused == set() and ctl.active == {}
    assert blink == [("start", "leader", ["n2"], "n2"), ("stop", "leader", ["n2"])]   # it waited for the leader
    ops = history.ops
    for op in ops:
        op["time"] = int(op["index"] * 1e9)
    assert [(o["f"], o["type"]) for o in ops] == [("start-blink", "invoke"), ("start-blink", "info"),
                                                  ("stop-blink", "invoke"), ("stop-blink", "info")]
    assert ops[1]["value"] == {"kind": "leader", "targets": ["n2"], "blinked": ["n2"]}
    assert ops[3]["value"] == {"kind": "leader", "targets": ["n2"], "unblinked": ["n2"]}

    report = check_fault_report(ops)
    assert report["kinds"]["blink"]["leader"]["happened"] == 1 and report["totals"]["blink"]["attempted"] == 1
    assert fault_windows(ops).down == {"n2": [(0, int(3e9))]}    # it takes nodes down: start invoke to stop
    assert PlotData.of(ops).fault_intervals() == [("blink", 1.0, 3.0)]
    assert fault_colour("blink") == "#123456" and fault_label("blink") == "blinks"
    assert fault_colours()["blink"] == "#123456"

    class Axes:
        spans: list = []

        def axvspan(self, t0, t1, **kw):
            self.spans.append((t0, t1, kw["color"], kw["label"]))
    from harness.reports.plots import _shade
    ax = Axes()
    _shade(ax, PlotData.of(ops))
    assert ax.spans == [(1.0, 3.0, "#123456", "blinks")]


def test_a_registered_family_is_scheduled_and_checked(blink):
    from nemesis.schedule import nemesis_generator, parse_fault_names
    assert parse_fault_names("blink:leader,kill") == ["blink:leader", "kill"]
    check_kind("blink", "one")
    with pytest.raises(ValueError, match="unknown blink kind 'all'"):
        check_kind("blink", "all")
    ops = drive(nemesis_generator(["blink:one"], random.Random(1), "serial", 1.0, 1.0, 3), 10.0)
    assert [op["f"] for _t, op in ops][:4] == ["start-blink", "stop-blink"] * 2
    assert all(op["value"]["kind"] == "one" for _t, op in ops)


def test_an_unregistered_family_is_unknown_everywhere():
    from checkers.fault_windows import fault_windows
    from harness.reports.plot_data import fault_colour, fault_label
    with pytest.raises(ValueError, match="unknown nemesis 'blink'"):
        check_kind("blink", "one")
    _cluster, _sim, _db, ctl = make_controller(3, leader="n2")
    with pytest.raises(ValueError, match="unknown nemesis 'blink'"):
        ctl.start(Fault("blink", "one"))
    assert spec_of("blink") is None and fault_colour("blink") == "#DDDDDD" and fault_label("blink") == "blink"
    ops = [{"index": 0, "time": 0, "type": "invoke", "process": "nemesis", "f": "start-blink", "value": {}},
           {"index": 1, "time": 1, "type": "info", "process": "nemesis", "f": "start-blink",
            "value": {"targets": ["n1"]}}]
    assert fault_windows(ops).down == {}       # an older history's unknown family harms nobody


# -- a family registered for the simulator ------------------------------------------------------


def _sim_start(world, fault, started) -> None:
    for t in started.targets:
        world.pause_node(t)
    started.value["blinked"] = [world.name(t) for t in started.targets]


def _sim_stop(world, fault, targets) -> None:
    for t in targets:
        world.resume_node(t)


SIM_BLINK = FaultSpec("blink", (), takes_down=True, sim=SimHooks(
    1000, ("one",), _sim_start, _sim_stop, draw=lambda kind, rng: {"blinks": rng.randrange(1, 4)},
    export_params=lambda params: {"blinks": params["blinks"]}))


def test_a_registered_family_is_drawn_applied_recorded_and_exported_by_the_simulator(monkeypatch):
    from sim.api import SimOptions
    from sim.export import fault_steps
    from sim.schedule import plan_for, run_schedule

    monkeypatch.setitem(FAULTS, "blink", SIM_BLINK)
    monkeypatch.setattr(registry, "SIMULATED", SIMULATED + ("blink",))
    opts = SimOptions(sim_seconds=8.0)
    plan = plan_for(opts, 5)
    blinks = [f for f in plan.faults if f.family == "blink"]
    assert blinks and len(blinks) >= len(plan.faults) // 2          # its weight dwarfs the others'
    assert all(f.kind == "one" and 1 <= f.param("blinks") <= 3 for f in blinks)
    result = run_schedule(opts, 5, keep=True)
    starts = [o for o in result.ops if o["f"] == "start-blink" and o["type"] == "info"]
    stops = [o for o in result.ops if o["f"] == "stop-blink" and o["type"] == "info"]
    assert len(starts) == len(stops) == len(blinks)
    assert all(o["value"]["blinked"] == o["value"]["targets"] and len(o["value"]["targets"]) == 1 for o in starts)
    steps, left_out = fault_steps([a for a in result.applied if a["family"] == "blink"])
    first = next(s for s in steps if s.get("nemesis") == "start-blink")
    assert first["value"] == {"kind": "nodes", "targets": first["value"]["targets"],
                              "blinks": blinks[0].param("blinks")}
    assert left_out == []
