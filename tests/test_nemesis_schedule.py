import itertools
import random

import pytest

from nemesis.schedule import (FaultSchedule, Fault, kinds_for, nemesis_generator, parse_fault_names,
                              validate_fault_names)
from nemesis.targeted import start_op, stop_op
from tests.nemesis_fakes import drive


def take(schedule, k):
    return list(itertools.islice(schedule, k))


def test_unknown_name_error_message():
    with pytest.raises(ValueError) as info:
        FaultSchedule(["kill", "foo"], random.Random(1))
    assert str(info.value) == ("unknown nemesis 'foo': choose from partition, kill, pause, stop, crash, packet, "
                               "flap, rolling, wipe, power-loss, membership, lag, catchup, elect, batch")


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
    with pytest.raises(ValueError, match="duration must be > 0 s, got 0"):
        FaultSchedule(["kill"], random.Random(1), duration_s=0)
    with pytest.raises(ValueError, match="interval must be >= 0 s, got -1"):
        FaultSchedule(["kill"], random.Random(1), interval_s=-1)
    with pytest.raises(ValueError, match="at least 2 nodes"):
        FaultSchedule(["partition"], random.Random(1), n_nodes=1)


def test_fault_is_a_value():
    assert Fault("kill", "one") == Fault("kill", "one")


def test_new_families_and_targeted_names_are_scheduled():
    faults = take(FaultSchedule(["packet", "flap", "rolling", "lag", "elect"], random.Random(4), n_nodes=3), 50)
    assert {f.name for f in faults} == {"packet", "flap", "rolling", "lag", "elect"}
    for f in faults:
        assert f.kind in (kinds_for(f.name, 3) if f.name not in ("lag", "elect") else [f.name])
    assert validate_fault_names(["lag", "kill", "lag"]) == ["lag", "kill"]


def test_start_and_stop_ops():
    f = Fault("partition", "nodes", slot="lag", targets=("n1",), params={"x": 1})
    assert start_op(f) == {"f": "start-partition", "value": {"kind": "nodes", "slot": "lag", "targets": ["n1"],
                                                              "x": 1}}
    assert stop_op(f) == {"f": "stop-partition", "value": {"kind": "nodes", "slot": "lag"}}
    assert stop_op(Fault("kill", "one")) == {"f": "stop-kill", "value": {"kind": "one"}}


def test_serial_mode_is_fault_schedule_order_and_timing():
    names = ["kill", "partition", "pause", "crash"]
    ops = drive(nemesis_generator(names, random.Random(21), "serial", 10, 5, n_nodes=5), 400)
    expected = take(FaultSchedule(names, random.Random(21), 10, 5, n_nodes=5), len(ops) // 2)
    assert len(ops) >= 50
    for k, fault in enumerate(expected):
        (t1, start), (t2, stop) = ops[2 * k], ops[2 * k + 1]
        assert (t1, t2) == (15.0 * k + 10, 15.0 * k + 15)       # calm 10 s, fault 5 s, again
        assert start == start_op(fault) and stop == stop_op(fault)


def test_serial_mode_with_no_interval_starts_at_once():
    ops = drive(nemesis_generator(["kill"], random.Random(2), "serial", 0, 3), 10)
    assert [(t, op["f"]) for t, op in ops[:4]] == [(0.0, "start-kill"), (3.0, "stop-kill"),
                                                    (3.0, "start-kill"), (6.0, "stop-kill")]


def windows(ops):
    """Each fault as ``(family, start time, stop time)``; asserts a family never starts twice
    before stopping (one slot each)."""
    open_, out = {}, []
    for t, op in ops:
        phase, fam = op["f"].split("-", 1)
        if phase == "start":
            assert fam not in open_, f"{fam} started twice at {t}"
            open_[fam] = t
        else:
            out.append((fam, open_.pop(fam), t))
    return out


def test_overlap_mode_overlaps_faults_of_several_families():
    names = ["kill", "partition", "pause", "packet"]
    ops = drive(nemesis_generator(names, random.Random(5), "overlap", 10, 10, n_nodes=5), 1000)
    wins = windows(ops)
    assert {fam for fam, _, _ in wins} == set(names)
    lengths = [t2 - t1 for _fam, t1, t2 in wins]
    # duration uniform in [d/2, 3d/2), or one time in four long: [2d, 3d)
    assert all(5 <= d < 15 or 20 <= d < 30 for d in lengths)
    assert any(d < 15 for d in lengths) and any(d >= 20 for d in lengths)
    for fam in names:                                # calm before each: uniform in [0, 2 * interval)
        mine = [w for w in wins if w[0] == fam]
        assert mine[0][1] < 20
        assert all(0 <= b[1] - a[2] < 20 for a, b in zip(mine, mine[1:]))
    overlaps = {frozenset((a[0], b[0])) for a in wins for b in wins
                if a[0] != b[0] and a[1] < b[1] < a[2]}
    assert len(overlaps) >= 3
    # at some instant three faults held at once
    assert any(sum(1 for w in wins if w[1] <= t < w[2]) >= 3 for t, _ in ops)
    for _, op in ops:
        if op["f"].startswith("start-"):
            assert op["value"]["kind"] in kinds_for(op["f"][6:], 5)


def test_overlap_mode_same_seed_same_ops():
    def ops(seed):
        return drive(nemesis_generator(["kill", "flap", "packet"], random.Random(seed), "overlap", 5, 5), 300)
    assert ops(8) == ops(8) and ops(8) != ops(9)


def test_overlap_and_serial_differ_from_each_other():
    serial = drive(nemesis_generator(["kill", "pause"], random.Random(1), "serial", 5, 5), 200)
    overlap = drive(nemesis_generator(["kill", "pause"], random.Random(1), "overlap", 5, 5), 200)
    assert not any(a[1] < b[1] < a[2] for a in windows(serial) for b in windows(serial) if a != b)
    assert any(a[1] < b[1] < a[2] for a in windows(overlap) for b in windows(overlap) if a != b)


@pytest.mark.parametrize("args,msg", [
    (([], "serial"), "no nemesis enabled"),
    ((["kill"], "random"), "unknown nemesis mode 'random'"),
    ((["kill", "quake"], "serial"), "unknown nemesis 'quake'"),
    ((["partition"], "overlap", 10, 10, 1), "at least 2 nodes"),
    ((["partition"], "serial", 10, 10, 1), "at least 2 nodes"),
    ((["kill"], "overlap", -1, 10), "interval must be >= 0"),
    ((["kill"], "serial", 1, 0), "duration must be > 0"),
])
def test_nemesis_generator_rejects_bad_arguments(args, msg):
    names, mode, *rest = args
    with pytest.raises(ValueError, match=msg):
        nemesis_generator(names, random.Random(1), mode, *rest)


def test_overlap_gives_a_family_named_twice_a_slot_per_timeline():
    from tests.nemesis_fakes import make_controller
    from nemesis.worker import parse_op
    ops = drive(nemesis_generator(["partition", "partition:isolate-leader"], random.Random(1), "overlap",
                                  2, 3), 120)
    slots = {(op["f"], op["value"].get("slot")) for _, op in ops}
    assert slots == {("start-partition", None), ("stop-partition", None),
                     ("start-partition", "partition2"), ("stop-partition", "partition2")}
    assert all(op["value"]["kind"] == "isolate-leader" for _, op in ops
               if op["f"] == "start-partition" and op["value"].get("slot") == "partition2")
    cluster, sim, db, c = make_controller(leader="n1")    # never "already active"
    for _, op in ops:
        phase, fault = parse_op(op)
        (c.start if phase == "start" else c.stop)(fault)


def test_in_window_starts_a_fault_only_where_it_ends_in_its_window():
    from nemesis.schedule import InWindow
    gate = InWindow(calm_s=14, window_s=7, length_s=3, offset_s=1)
    assert gate.start_at(0) == 15            # calm: the next window's start plus the offset
    assert gate.start_at(15) == 15           # in a window, with room: now
    assert gate.start_at(19.5) == 36         # too late to end by 21: the next window (35) + 1
    assert gate.start_at(21) == 36
    late = InWindow(14, 7, 3, offset_s=6)    # an offset is clipped so that the fault still fits
    assert late.start_at(0) == 14 + 4
    assert InWindow(14, 7, 30).length_s == 7


def test_windows_mode_alternates_calm_and_windows_of_overlapping_faults():
    names = ["kill:one+minority", "partition:random-halves+isolate-one", "pause:one", "packet"]
    ops = drive(nemesis_generator(names, random.Random(3), "windows", 14, 7, n_nodes=5), 300)
    wins = windows(ops)
    assert {fam for fam, _, _ in wins} == {"kill", "partition", "pause", "packet"}
    for fam, t1, t2 in wins:                 # every fault within one window [14 + 21k, 21 + 21k]
        k = (t1 - 14) // 21
        assert 14 + 21 * k <= t1 < t2 <= 21 + 21 * k + 1e-9, (fam, t1, t2)
    used = {int((t1 - 14) // 21) for _f, t1, _t2 in wins}
    assert len(used) >= 12                   # nearly every one of the 14 windows in 300 s
    # faults overlap within a window, and the calm between windows holds none
    assert any(sum(1 for w in wins if w[1] <= t < w[2]) >= 2 for t, _ in ops)
    assert not any(w[1] <= 14 + 21 * k - 1 < w[2] for w in wins for k in range(1, 14))


def test_windows_mode_drops_what_could_not_start_in_its_window():
    from types import SimpleNamespace

    def view(t):        # a leader in the calm only: faults that wait for one never get it in time
        return SimpleNamespace(leader="n1" if t % 21 < 14 else None, nodes={}, log_end={},
                               high_watermark=0, epoch=int(t // 21), elections=int(t // 21), lagging=None)
    names = ["partition", "kill", "pause", "crash", "flap", "elect", "lag"]
    ops = drive(nemesis_generator(names, random.Random(1), "windows", 14, 7, n_nodes=5), 130, view=view)
    starts = [(t, op) for t, op in ops if op["f"].startswith("start-")]
    assert len(starts) >= 12
    assert all(14 <= t % 21 < 21 for t, _ in starts)         # nothing starts in the calm
    assert not any(op["value"]["kind"] in ("leader", "isolate-leader") for _, op in starts)
    assert len(windows(ops)) == len(starts)                  # and whatever started stopped
