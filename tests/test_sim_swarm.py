"""Swarm testing in the simulator (sim/swarm.py): each seed draws its configuration from the
seed alone; given options pin their dimensions; a seed's drawn configuration, pinned on the
command line, repeats it; overlapping voter changes reach the leader's checks."""
from __future__ import annotations

import collections

import pytest

from faults.registry import SIMULATED
from harness.cli.main import build_parser, main
from harness.cli.simulate import options_from
from harness.simulation.judge import judge_history
from sim.api import SimOptions, run_seed, simulate
from sim.schedule import plan_for, run_schedule
from sim.swarm import DIMENSIONS, command_flags, configure, draw
from sim.workloads import WORKLOADS

SWARM = SimOptions(swarm=DIMENSIONS)


def _opts(*argv: str) -> SimOptions:
    return options_from(build_parser().parse_args(["simulate", *argv]))


def test_each_seed_draws_its_configuration_from_the_seed_alone():
    assert [draw(s) for s in range(1, 50)] == [draw(s) for s in range(1, 50)]
    drawn = [SWARM.for_seed(s) for s in range(1, 400)]
    assert all(not o.swarm and o.check() is o for o in drawn)
    seen = collections.defaultdict(set)
    for o in drawn:
        for dim in ("voters", "kraft_version", "workload_name", "brokers", "read_fraction", "client_rate",
                    "fetch_max_records", "admin_clients"):
            seen[dim].add(getattr(o, dim))
        seen["families"].add(o.families)
        assert o.brokers == WORKLOADS[o.workload].brokers          # the brokers follow the workload
        assert o.families and set(o.families) <= set(SIMULATED)
        if o.kraft_version == 0:                                   # wipes and voter changes need kv 1
            assert not {"wipe", "membership"} & set(o.families)
    assert seen["voters"] == {3, 5} and seen["kraft_version"] == {0, 1} and seen["brokers"] == {0, 3}
    assert seen["workload_name"] == set(WORKLOADS) and seen["admin_clients"] == {1, 2, 3}
    assert len(seen["fetch_max_records"]) > 1 and len(seen["read_fraction"]) > 1 and len(seen["families"]) > 20
    # the plan is drawn from the families the seed switched on
    o = next(o for o in drawn if len(o.families) == 1)
    seed = drawn.index(o) + 1
    assert {f.family for f in plan_for(SWARM, seed).faults} <= set(o.families)


def test_given_options_pin_their_dimensions_and_leave_the_others_drawn_as_before():
    free = [SWARM.for_seed(s) for s in range(1, 60)]
    pinned = _opts("--voters", "5", "--read-fraction", "0.3", "--faults", "partition,kill")
    assert pinned.swarm == tuple(d for d in DIMENSIONS if d not in ("voters", "read_fraction", "families"))
    for s, f in enumerate(free, start=1):
        p = pinned.for_seed(s)
        assert (p.voters, p.read_fraction, p.families) == (5, 0.3, ("partition", "kill"))
        assert (p.kraft_version, p.workload, p.fetch_max_records, p.admin_clients) == (
            f.kraft_version, f.workload, f.fetch_max_records, f.admin_clients)
    # pinned brokers choose the workload that runs on them; a pinned workload its brokers
    assert {_opts("--brokers", "3").for_seed(s).workload for s in range(1, 40)} == {"queue"}
    assert {_opts("--brokers", "0").for_seed(s).workload for s in range(1, 40)} == {"append", "kv"}
    assert {_opts("--workload", "queue").for_seed(s).brokers for s in range(1, 40)} == {3}
    assert _opts("--no-swarm") == SimOptions()
    assert _opts("--no-swarm", "--brokers", "3").for_seed(4) == SimOptions(brokers=3)
    assert _opts("--faults", "all", "--no-swarm").families is None and _opts("--faults", "none").families == ()


def test_bad_pins_are_refused_with_exit_3(capsys):
    assert main(["simulate", "--seeds", "1", "--workload", "append", "--brokers", "3"]) == 3
    assert "workload append runs on no broker(s)" in capsys.readouterr().err
    assert main(["simulate", "--seeds", "1", "--admin-clients", "4"]) == 3
    assert main(["simulate", "--seeds", "1", "--kraft-version", "1", "--faults", "nope"]) != 0


def test_a_seeds_drawn_configuration_pinned_on_the_command_line_repeats_it():
    for seed in (3, 11, 26):
        drawn = SWARM.for_seed(seed)
        again = _opts(*command_flags(drawn).split())
        assert again.swarm == () and again == drawn
        assert configure(again, seed) is again
    a = run_seed(SWARM, 26, judge_history)
    b = run_seed(_opts(*command_flags(SWARM.for_seed(26)).split()), 26, judge_history)
    assert a.key() == b.key() and a.options == b.options


def test_the_digest_is_the_same_on_any_number_of_workers():
    one = sorted(o.key() for o in simulate(SWARM, range(1, 7), workers=1, judge=judge_history))
    two = sorted(o.key() for o in simulate(SWARM, range(1, 7), workers=2, judge=judge_history))
    assert one == two


def test_a_failing_seed_prints_the_configuration_it_drew_and_the_commands_that_repeat_it(capsys):
    code = main(["simulate", "--seeds", "40", "--unsafe", "commit-minority", "--stop-at-first", "--workers", "1"])
    out = capsys.readouterr().out
    assert code == 1
    assert "its configuration (drawn): voters " in out
    repeat = next(line for line in out.splitlines() if line.startswith("repeat with: "))
    pinned = next(line for line in out.splitlines() if "its configuration pinned: " in line)
    assert repeat.startswith("repeat with: kraft-chaos simulate --seed ") and "--voters" not in repeat
    assert "--voters" in pinned and "--faults" in pinned and "--admin-clients" in pinned


def test_overlapping_voter_changes_meet_the_leaders_refusal_and_the_checkers_pair_each_window():
    """With two or three admin clients a membership fault removes that many voters at once; the
    leader takes one change at a time and refuses the others until it committed (each admin
    retries), and each change has its own fault window (``slot``) in the history."""
    opts = SimOptions(kraft_version=1, voters=5, admin_clients=3, families=("membership",))
    overlapped = refused = 0
    for seed in range(1, 7):
        r = run_schedule(opts, seed, judge=judge_history, keep=True)
        assert r.ok, (seed, r.first)
        starts = [op for op in r.ops if op["process"] == "nemesis" and op["f"] == "start-membership"
                  and op["type"] == "info"]
        at = collections.Counter(op["time"] for op in starts)
        overlapped += sum(1 for n in at.values() if n > 1)
        slots = {op["value"].get("slot") for op in starts}
        assert {None, "admin-2", "admin-3"} <= slots or not starts
        refused += sum(c.get("attempts", 1) > 1 for op in starts for c in op["value"]["changes"])
    assert overlapped and refused


def test_one_table_describes_each_simulated_workload():
    """sim/workloads.py's WORKLOADS: the brokers, the clients (the data plane's for the queue),
    and each workload's own default share of reads in its schedules."""
    for name, w in WORKLOADS.items():
        assert (w.clients is None) == (w.brokers > 0), name
        if w.clients is not None:
            cls = w.client_class()
            assert callable(cls.issue) and callable(cls.on_reply) and callable(cls.final_read)
        opts = SimOptions(workload=name, brokers=w.brokers).check()
        ops = plan_for(opts, 3).client_ops
        share = sum(1 for _at, _slot, f in ops if f == "read") / len(ops)
        assert abs(share - w.read_fraction) < 0.05, (name, share)
    with pytest.raises(ValueError, match="data plane"):
        WORKLOADS["queue"].client_class()
