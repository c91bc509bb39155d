import itertools
import random

import pytest

from nemesis.schedule import FaultSchedule, Fault, kinds_for, parse_fault_names


def take(schedule, k):
    return list(itertools.islice(schedule, k))


def test_unknown_name_error_message():
    with pytest.raises(ValueError) as info:
        FaultSchedule(["kill", "foo"], random.Random(1))
    assert str(info.value) == "unknown nemesis 'foo': choose from kill, partition, pause, crash"


def test_parse_fault_names():
    assert parse_fault_names("kill, partition,kill") == ["kill", "partition"]
    assert parse_fault_names("none") == [] and parse_fault_names("") == []
    assert parse_fault_names("crash") == ["crash"]
    with pytest.raises(ValueError, match="unknown nemesis 'power'"):
        parse_fault_names("kill,power")


def test_same_seed_same_schedule():
    a = take(FaultSchedule(["kill", "partition", "pause"], random.Random(42)), 30)
    b = take(FaultSchedule(["kill", "partition", "pause"], random.Random(42)), 30)
    c = take(FaultSchedule(["kill", "partition", "pause"], random.Random(43)), 30)
    assert a == b
    assert a != c


def test_first_three_faults_cover_all_names_and_never_repeat():
    for seed in range(50):
        faults = take(FaultSchedule(["kill", "partition", "pause"], random.Random(seed)), 30)
        assert {f.name for f in faults[:3]} == {"kill", "partition", "pause"}
        for x, y in zip(faults, faults[1:]):
            assert x.name != y.name


def test_two_names_alternate():
    faults = take(FaultSchedule(["kill", "pause"], random.Random(5)), 20)
    assert all(x.name != y.name for x, y in zip(faults, faults[1:]))


def test_single_name_repeats():
    faults = take(FaultSchedule(["kill"], random.Random(5)), 5)
    assert {f.name for f in faults} == {"kill"}


def test_kinds_are_valid_for_cluster_size():
    for n, ring in ((5, True), (3, False)):
        faults = take(FaultSchedule(["partition"], random.Random(1), n_nodes=n), 300)
        kinds = {f.kind for f in faults}
        assert ("majorities-ring" in kinds) == ring
        assert kinds <= set(kinds_for("partition", n))
        assert {"random-halves", "isolate-one", "isolate-leader", "bridge"} <= kinds
    assert "bridge" not in kinds_for("partition", 2)
    proc = {f.kind for f in take(FaultSchedule(["kill"], random.Random(1)), 100)}
    assert proc == {"one", "minority", "leader"}


def test_timing_and_bad_arguments():
    s = FaultSchedule(["kill"], random.Random(1), interval_s=2, duration_s=3)
    assert (s.interval_s, s.duration_s) == (2.0, 3.0)
    with pytest.raises(ValueError, match="no faults"):
        FaultSchedule([], random.Random(1))
    with pytest.raises(ValueError, match="duration_s"):
        FaultSchedule(["kill"], random.Random(1), duration_s=0)
    with pytest.raises(ValueError, match="interval_s"):
        FaultSchedule(["kill"], random.Random(1), interval_s=-1)
    with pytest.raises(ValueError, match="at least 2 nodes"):
        FaultSchedule(["partition"], random.Random(1), n_nodes=1)


def test_fault_is_a_value():
    assert Fault("kill", "one") == Fault("kill", "one")
