"""``kraft-chaos simulate`` as a user runs it: the correct build passes 50 seeds, a seed replays
bit for bit, planted switches are found, shrinking keeps the failure with a smaller
schedule, and the export is a scenario file ``kraft-chaos scenario run`` accepts."""
from __future__ import annotations

import dataclasses

import pytest

from harness.cli.main import main
from harness.config.scenario import load
from harness.simulation.judge import judge_history
from sim.api import SimOptions, shrink_and_export, simulate
from sim.schedule import plan_for, run_schedule
from sim.shrink import shrink_seed
from sim.swarm import DIMENSIONS


def test_fifty_seeds_of_the_correct_build_find_nothing():
    outcomes = list(simulate(SimOptions(), range(1, 51), workers=2, judge=judge_history))
    assert sorted(o.seed for o in outcomes) == list(range(1, 51))
    bad = [(o.seed, o.invariant, o.detail) for o in outcomes if not o.ok]
    assert bad == []
    assert all(o.events > 1000 and o.sim_seconds >= 30.0 for o in outcomes)
    assert all(o.verdict is True for o in outcomes)        # the checkers judged every history


def test_kv_seeds_of_the_correct_build_find_nothing_and_the_kv_checkers_judge_them():
    opts = SimOptions(workload="kv")
    outcomes = list(simulate(opts, range(1, 9), workers=2, judge=judge_history))
    assert [(o.seed, o.invariant, o.detail) for o in outcomes if not o.ok] == []
    assert all(o.verdict is True for o in outcomes)
    r = run_schedule(opts, 1, judge=judge_history, keep=True)
    done = {(o["f"], o["type"]) for o in r.ops if o["process"] != "nemesis"}
    assert {("read", "ok"), ("write", "ok"), ("cas", "ok"), ("cas", "fail")} <= done
    clients = [o for o in r.ops if isinstance(o["process"], int) and o["process"] < 10_000]
    assert not any(isinstance(o["value"], dict) for o in clients if o["f"] == "read")  # its clients: no final reads
    finals = [o for o in r.ops if o["f"] == "read" and o["type"] == "ok" and isinstance(o["value"], dict)]
    assert finals and all(o["value"]["final"] and o["process"] >= 10_000 for o in finals)   # the quorum log's
    read = next(o for o in r.ops if o["f"] == "read" and o["type"] == "ok")
    assert read["value"][0].startswith("k") and "applied_offset" in read
    with pytest.raises(ValueError, match="workload"):
        SimOptions(workload="queue").check()
    with pytest.raises(ValueError, match="brokers"):
        SimOptions(workload="kv", brokers=3).check()


def test_the_judge_is_what_the_caller_passes_to_the_workers_or_none():
    """No judge is registered anywhere: without one only the invariants judge (verdict None);
    the one passed reaches the forked workers as it does this process."""
    assert {o.verdict for o in simulate(SimOptions(), range(1, 3), workers=2)} == {None}
    assert {o.verdict for o in simulate(SimOptions(), range(1, 3), workers=2, judge=judge_history)} == {True}
    assert {o.verdict for o in simulate(SimOptions(), range(1, 2), workers=1, judge=judge_history)} == {True}


def test_a_seed_replays_bit_for_bit():
    opts = SimOptions(kraft_version=1)
    a = run_schedule(opts, 7, judge=judge_history, keep=True)
    b = run_schedule(opts, 7, judge=judge_history, keep=True)
    assert a.ops == b.ops and a.nodes == b.nodes and a.trace == b.trace and a.events == b.events
    c = run_schedule(opts, 8, judge=judge_history, keep=True)
    assert c.ops != a.ops
    # in worker processes too: the same outcomes, whatever order they finish in
    planted = SimOptions(unsafe=("commit-minority",))
    first = sorted((o.key() for o in simulate(planted, range(1, 9), judge=judge_history)))
    again = sorted((o.key() for o in simulate(planted, range(1, 9), workers=1, judge=judge_history)))
    assert first == again


@pytest.mark.parametrize("switch, expect, seeds", [
    ("commit-minority", {"committed-lost", "committed-agreement"}, 40),
    ("page-cache-ack", {"acked-produce-lost", "checker:lost-write", "checker:unseen"}, 40),
    ("hw-below-min-isr", {"consumer-above-hw"}, 150),          # only the queue's seeds can show it
    ("no-fetch-validation", {"committed-agreement", "committed-lost"}, 40),
    ("ack-before-commit", {"checker:inconsistent-offsets", "checker:lost-write", "checker:nonmonotonic-read"}, 40),
    ("recover-epoch-from-log", {"checker:epoch-regression", "election-safety"}, 60),
    ("kv-cas-at-propose", {"checker:linearizability"}, 60),    # only the kv workload's seeds can show it
])
def test_a_planted_switch_is_found(switch, expect, seeds):
    opts = SimOptions(unsafe=(switch,), swarm=DIMENSIONS)      # as `simulate --unsafe X`: each seed draws
    found = next((o for o in simulate(opts, range(1, seeds + 1), judge=judge_history) if not o.ok), None)
    assert found is not None, f"{switch} not found in {seeds} seeds"
    assert found.invariant in expect, (found.invariant, found.detail)
    assert found.trace                              # the steps that led to it


def test_the_history_is_our_format_and_names_the_faults():
    r = run_schedule(SimOptions(kraft_version=1), 3, keep=True)
    from history.ops import op_problem
    assert [op_problem(op) for op in r.ops if op_problem(op)] == []
    assert [op["index"] for op in r.ops] == list(range(len(r.ops)))
    times = [op["time"] for op in r.ops]
    assert times == sorted(times)
    fs = {op["f"] for op in r.ops}
    assert {"append", "read", "describe-quorum", "heal"} <= fs
    assert any(f.startswith("start-") for f in fs)
    finals = [op for op in r.ops if op["f"] == "read" and op["type"] == "ok" and op["value"]["final"]]
    assert any(op["value"]["linearizable"] for op in finals)                 # the leader's
    assert {op["node"] for op in finals if not op["value"]["linearizable"]} == {"n1", "n2", "n3"}


def test_shrink_keeps_the_failure_with_a_smaller_schedule(tmp_path):
    opts = SimOptions(unsafe=("commit-minority",))
    seed = next(o.seed for o in simulate(opts, range(1, 41), judge=judge_history) if not o.ok)
    r = shrink_seed(opts, seed, judge=judge_history, max_runs=120)
    assert r.result.first[0] == r.target
    assert len(r.plan.faults) + len(r.plan.client_ops) < len(r.original.faults) + len(r.original.client_ops)
    assert len(r.plan.client_ops) < len(r.original.client_ops)
    path = shrink_and_export(opts, seed, tmp_path, judge=judge_history)
    doc = load(path)
    assert doc["run"]["unsafe"] == ["commit-minority"]
    assert any("nemesis" in s for s in doc["steps"]) or "left out" in path.read_text()


def test_the_command_line_exit_codes(capsys, tmp_path):
    assert main(["simulate", "--seeds", "2", "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "2 seed(s), 0 violation(s)" in out and "digest" in out and "events/s" in out
    assert main(["simulate", "--seeds", "2", "--brokers", "12"]) == 3
    assert main(["simulate", "--seeds", "2", "--voters", "4"]) == 3
    assert main(["simulate", "--seeds", "2", "--unsafe", "nope"]) == 3
    code = main(["simulate", "--seeds", "20", "--unsafe", "commit-minority", "--stop-at-first",
                 "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1
    assert "first failing seed" in out and "repeat with: kraft-chaos simulate --seed" in out
    assert (tmp_path / "summary.json").is_file() and list(tmp_path.glob("seed-*/history.jsonl"))


def test_the_plan_is_data_drawn_from_the_seed():
    a, b = plan_for(SimOptions(kraft_version=1), 5), plan_for(SimOptions(kraft_version=1), 5)
    assert a == b and a.faults and a.client_ops
    assert {f.family for f in plan_for(SimOptions(), 5).faults}.isdisjoint({"wipe", "membership"})
    short = dataclasses.replace(a, faults=(), client_ops=a.client_ops[:3])
    assert run_schedule(SimOptions(kraft_version=1), 5, short).ok


def test_brokers_of_the_correct_build_lose_nothing_and_the_queue_checkers_judge_them():
    outcomes = list(simulate(SimOptions(brokers=3), range(1, 9), judge=judge_history))
    assert [(o.seed, o.invariant) for o in outcomes if not o.ok] == []
    r = run_schedule(SimOptions(brokers=3), 2, judge=judge_history, keep=True)
    sends = [op for op in r.ops if op["f"] == "send" and op["type"] == "ok"]
    drains = [op for op in r.ops if op["f"] == "poll" and op["type"] == "ok" and op["value"].get("final")]
    assert len(sends) > 100 and drains and r.verdict is True
    faulted = {t for op in r.ops if op["process"] == "nemesis" and op["type"] == "info"
               for t in (op["value"].get("targets") or [])}
    assert faulted & {"n4", "n5", "n6"}                 # faults reach the brokers too


def test_a_restarted_partition_leader_does_not_lead_its_old_epoch_again():
    """Seed 60 (kraft.version 1): broker n4, leading t-0, lost power and restarted within its
    session; led the same leader epoch again it re-appended other values at offsets its
    followers held (what BrokerRegistration's new epoch prevents). The controller now makes a
    restarted broker register again before it hears of any partition."""
    r = run_schedule(SimOptions(brokers=3, kraft_version=1), 60, judge=judge_history)
    assert r.ok, r.first


def test_the_controller_lock_frees_when_its_leader_dies_with_a_write():
    """Seed 117: the quorum's leader died holding the controller's write; no answer ever came
    and no broker was ever unfenced again, so the drain stopped below acknowledged records
    (unseen), in the simulator's former model of the controller. The controller core's
    write in flight lives and dies with its node (a new active controller starts with none)."""
    r = run_schedule(SimOptions(brokers=3), 117, judge=judge_history)
    assert r.ok and r.verdict is True, (r.first, r.anomalies)
