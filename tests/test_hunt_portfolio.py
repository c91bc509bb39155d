"""The hunt's portfolio and budget (harness/hunt/portfolio.py, budget.py): the schedules a hunt
rotates through, the rotation over workloads and kraft.versions, the runs' settings and caps,
what fits in the time left, and the lock within a deadline. Pure logic; nothing runs."""
from __future__ import annotations

import dataclasses
import fcntl
import itertools
import threading
import time

import pytest

from harness.catalogue.bugs import CATALOGUE
from harness.catalogue.kafka_bugs import KAFKA_CANDIDATES, KAFKA_CATALOGUE
from harness.config import values
from harness.config.resolved import resolve
from harness.config.run import RunConfig
from harness.config.schedules import SCHEDULES
from harness.hunt import portfolio as pf
from harness.hunt.budget import Budget, Overheads, lock_until
from harness.hunt.options import HuntOptions
from targets.registry import target_spec

KRAFT_WLS = ("append", "kv", "queue")


def test_the_schedules_are_the_default_then_every_catalogued_one_of_the_target_in_a_seeded_order():
    kraft = pf.hunt_schedules("kraft", 1)
    assert kraft[0] == "default" and len(kraft) == len(set(kraft))
    assert set(kraft) == {"default"} | {b.schedule for b in CATALOGUE}
    kafka = pf.hunt_schedules("kafka", 1)
    hunted = {s for c in KAFKA_CANDIDATES for s in c.schedules}
    assert {"kafka-txn-coordinator-pause", "kafka-txn-coordinator-kill"} <= hunted
    assert kafka[0] == "kafka-default" and set(kafka) == {"kafka-default"} | {b.schedule for b in KAFKA_CATALOGUE} | hunted
    assert all(SCHEDULES[s].db == "kafka" for s in kafka)
    # the same seed, the same order; other seeds, other orders of the same schedules
    assert pf.hunt_schedules("kraft", 1) == kraft
    others = {tuple(pf.hunt_schedules("kraft", s)) for s in range(2, 8)}
    assert len(others | {tuple(kraft)}) > 1 and all(o[0] == "default" and set(o) == set(kraft) for o in others)


def test_which_workloads_a_schedule_runs():
    assert pf.schedule_workloads("default", KRAFT_WLS) == list(KRAFT_WLS)
    assert pf.schedule_workloads("queue-crash", KRAFT_WLS) == ["queue"]      # written for the queue
    assert pf.schedule_workloads("isr-shrink", KRAFT_WLS) == ["queue"]       # a scenario: its own
    assert pf.schedule_workloads("queue-crash", ("append", "kv")) == []
    assert pf.schedule_workloads("kafka-fence", ("metadata", "queue")) == ["metadata", "queue"]
    assert pf.schedule_workloads("kafka-wiped-voter", ("metadata", "queue")) == ["metadata"]
    order = pf.rotation_order("kraft", ("append",), 3)
    assert "queue-crash" not in dict(order) and all(wls == ["append"] for _, wls in order)
    with pytest.raises(ValueError, match="no schedule of --db kraft runs the workloads"):
        pf.rotation_order("kraft", (), 1)


def test_the_rotation_meets_every_schedule_workload_and_kraft_version_with_seeds_from_the_hunts():
    order = pf.rotation_order("kraft", KRAFT_WLS, 7)
    plays = list(itertools.islice(pf.rotation("kraft", KRAFT_WLS, 7), 2 * len(KRAFT_WLS) * len(order)))
    assert [p.n for p in plays] == list(range(len(plays)))
    assert [p.seed for p in plays] == [7 + p.n for p in plays]
    assert [p.schedule for p in plays[:len(order)]] == [s for s, _ in order]      # a round: each schedule once
    for name, wls in order:
        met = {(p.workload, p.kraft_version) for p in plays if p.schedule == name}
        assert met == {(w, v) for w in wls for v in (0, 1)}, name
    # one round mixes workloads and kraft.versions rather than running one at a time
    first = plays[:len(order)]
    assert {p.workload for p in first} == set(KRAFT_WLS) and {p.kraft_version for p in first} == {0, 1}
    # deterministic
    assert plays == list(itertools.islice(pf.rotation("kraft", KRAFT_WLS, 7), len(plays)))


def test_a_scenario_that_fixes_its_kraft_version_keeps_it():
    plays = list(itertools.islice(pf.rotation("kafka", ("metadata", "queue"), 2), 48))
    assert {p.kraft_version for p in plays if p.schedule == "kafka-remove-partitioned"} == {1}
    assert {p.kraft_version for p in plays if p.schedule == "kafka-wiped-voter"} == {0}


@pytest.mark.parametrize("db, workloads", [("kraft", KRAFT_WLS), ("kafka", ("metadata", "queue"))])
def test_every_play_of_the_rotation_is_a_run_the_registries_accept(db, workloads):
    order = pf.rotation_order(db, workloads, 5)
    for play in itertools.islice(pf.rotation(db, workloads, 5), 2 * len(workloads) * len(order)):
        fields = pf.run_fields(play, 60.0)
        cfg = resolve(RunConfig(seed=play.seed, **fields)).flat   # raises for anything a real run would refuse
        assert (cfg.workload, cfg.kraft_version, cfg.db) == (play.workload, play.kraft_version, db)
        if cfg.workload == "queue":    # brokers (kafka always has them), and faults reach them too
            assert cfg.nemesis_targets in ("all", "clients")
            assert cfg.brokers or not target_spec(db).optional_brokers


def test_run_fields_cap_add_kip853_faults_at_kraft_version_1_and_take_overrides():
    kv0 = pf.run_fields(pf.Play(0, "default", "kv", 0, 9), 60.0, {"unsafe": ["no-check-quorum"]})
    assert kv0["time_limit"] == 60.0 and SCHEDULES["default"].time_limit == 120.0
    assert kv0["nemesis"] == list(SCHEDULES["default"].nemesis) and kv0["unsafe"] == ["no-check-quorum"]
    assert (kv0["workload"], kv0["kraft_version"]) == ("kv", 0)
    kv1 = pf.run_fields(pf.Play(1, "crash", "append", 1, 9), 60.0)
    assert kv1["nemesis"] == ["crash", "kill", "membership", "wipe"] and kv1["time_limit"] == 40.0
    assert pf.describe(pf.Play(1, "crash", "append", 1, 9), kv1) == "crash +membership,wipe"
    assert pf.describe(pf.Play(0, "default", "kv", 0, 9), kv0) == "default"
    # faults that reach the brokers get no wipes or voter changes (a wiped broker is no voter to replace)
    # nor a workload without a final committed quorum log (the membership checker would be unknown)
    assert not set(pf.KV1_FAULTS) & set(pf.run_fields(pf.Play(6, "crash", "kv", 1, 9), 60.0)["nemesis"])
    for play in (pf.Play(4, "crash", "queue", 1, 9), pf.Play(5, "queue-crash", "queue", 1, 9)):
        assert not set(pf.KV1_FAULTS) & set(pf.run_fields(play, 60.0)["nemesis"])
    scen = pf.run_fields(pf.Play(2, "isr-shrink", "queue", 1, 9), 30.0)
    assert scen["nemesis"] == [] and scen["scenario"] and pf.limit_s(scen) > 30.0    # a scenario is never cut
    assert pf.run_kind(scen) == "brokers" and pf.run_kind(kv0) == "quorum"
    assert pf.run_kind(pf.run_fields(pf.Play(3, "default", "queue", 0, 9), 60.0)) == "brokers"


def test_the_time_cap_spreads_the_budget_over_a_round_within_bounds():
    assert pf.time_cap(900.0, 10, 30.0) == 60.0
    assert pf.time_cap(100_000.0, 10, 30.0) == pf.RUN_CAP_S
    assert pf.time_cap(100.0, 10, 30.0) == pf.MIN_RUN_S


def test_fit_cuts_the_time_limit_to_what_is_left_never_a_scenario_and_never_below_the_minimum():
    f = pf.run_fields(pf.Play(0, "default", "append", 0, 1), 60.0)
    assert pf.fit(f, 200.0, 30.0) is f
    cut = pf.fit(f, 75.5, 30.0)
    assert cut["time_limit"] == 45.0 and f["time_limit"] == 60.0
    assert pf.fit(f, pf.MIN_RUN_S + 29.0, 30.0) is None
    scen = pf.run_fields(pf.Play(0, "isr-shrink", "queue", 0, 1), 60.0)
    assert pf.fit(scen, pf.limit_s(scen) + 30.0, 30.0) is scen
    assert pf.fit(scen, pf.limit_s(scen) + 29.0, 30.0) is None


class Clock:
    def __init__(self, t: float = 100.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_budget_and_learnt_overheads():
    clock = Clock()
    b = Budget(600.0, clock)
    assert (b.remaining(), b.elapsed()) == (600.0, 0.0)
    clock.t += 500.0
    assert b.fits(100.0) and not b.fits(100.5) and b.remaining(by=clock.t + 20) == 20.0
    clock.t += 200.0
    assert b.remaining() == 0.0
    with pytest.raises(ValueError):
        Budget(0.0)
    o = Overheads({"quorum": 30.0, "brokers": 45.0})
    o.observe("quorum", wall_s=70.0, limit_s=50.0)      # 20 s: less than expected, kept at 30
    assert o.estimate("quorum") == 30.0
    o.observe("quorum", wall_s=130.0, limit_s=60.0)     # a slower set-up is learnt
    assert o.estimate("quorum") == 70.0 and o.estimate("brokers") == 45.0
    assert o.estimate("other") == 70.0                  # an unknown kind: the largest


def test_the_lock_is_waited_for_only_until_the_deadline_and_the_budget_counts_the_wait(tmp_path):
    path = tmp_path / "cluster.lock"
    with lock_until(str(path), deadline=time.monotonic() + 10) as held:
        assert held
        with open(path) as other:        # someone else's open file: the lock is taken
            with pytest.raises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    with open(path) as other:            # released after the block
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with lock_until(str(path), deadline=time.monotonic() + 0.2) as held:
            assert held is False         # another holder past the deadline: nothing is started
        budget = Budget(600.0)
        with budget.lock(str(path), latest=time.monotonic() + 0.2) as held:
            assert held is False
        assert budget.waited_s > 0
    # the waiter given up on does not keep the lock once the other holder lets go
    with lock_until(str(path), deadline=time.monotonic() + 10) as held:
        assert held
    with lock_until(None, deadline=0.0) as held:
        assert held


def test_a_waiter_queues_beside_blocking_holders_and_gets_the_lock_when_freed(tmp_path):
    path = tmp_path / "cluster.lock"
    other = open(path, "a+")
    fcntl.flock(other, fcntl.LOCK_EX)
    threading.Timer(0.3, lambda: (fcntl.flock(other, fcntl.LOCK_UN), other.close())).start()
    with lock_until(str(path), deadline=time.monotonic() + 30) as held:
        assert held
        with open(path) as probe, pytest.raises(BlockingIOError):
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_options_are_checked_against_the_registries_and_repeat():
    o = HuntOptions(seed=4, unsafe=("no-check-quorum",), stop_at_first=True, sim=False, subnet="10.131.0.0/24")
    o.check()
    assert o.workloads == KRAFT_WLS and o.overrides() == {"unsafe": ["no-check-quorum"]}
    assert o.repeat_command() == ("kraft-chaos hunt --db kraft --minutes 20 --seed 4 --workload append --workload kv "
                                  "--workload queue --unsafe no-check-quorum --stop-at-first --no-sim "
                                  "--subnet 10.131.0.0/24 --lock none")          # options with no lock
    # the command's default lock is no flag; another file is named
    assert "--lock" not in dataclasses.replace(o, lock=values.DEFAULT_LOCK).repeat_command()
    assert dataclasses.replace(o, lock="/tmp/x.lock").repeat_command().endswith("--subnet 10.131.0.0/24 --lock /tmp/x.lock")
    assert o.placement() == {"store": "store", "cluster": "auto", "subnet": "10.131.0.0/24"}
    for bad, needle in ((HuntOptions(seed=1, db="kafka", unsafe=("no-fsync",)), "--unsafe does not apply to --db kafka"),
                        (HuntOptions(seed=1, kafka_version="3.9.2"), "--kafka-version does not apply to --db kraft"),
                        (HuntOptions(seed=1, workloads=("metadata",)), "does not run on --db kraft"),
                        (HuntOptions(seed=1, workloads=("bank",)), "unknown workload 'bank'"),
                        (HuntOptions(seed=1, minutes=0), "--minutes must be > 0"),
                        (HuntOptions(seed=1, db="etcd"), "unknown --db 'etcd'")):
        with pytest.raises(ValueError, match=needle):
            bad.check()
    k = HuntOptions(seed=1, db="kafka", kafka_version="3.9.2")
    k.check()
    assert k.workloads == ("metadata", "queue", "txn") and k.overrides() == {"kafka_version": "3.9.2"}


def test_the_simulation_rounds_grow_and_add_up_to_the_seeds_of_a_configuration():
    targets = pf.sim_targets()
    assert targets[-1] == pf.SIM_SEEDS == sum(pf.SIM_ROUNDS) and targets == sorted(set(targets))
    assert targets[0] <= 25                     # the last configuration starts a few seconds in
    sizes = [b - a for a, b in zip([0, *targets], targets)]
    assert sizes == list(pf.SIM_ROUNDS) and sizes == sorted(sizes)
    assert pf.sim_targets(120) == [10, 50, 120] and pf.sim_targets(5) == [5]
    assert pf.sim_targets(1500) == [10, 50, 150, 400, 1000, 1500]
