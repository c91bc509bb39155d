"""Shrinking (harness/catalogue/shrink.py) and the time to detect (harness/catalogue/detection.py), without a cluster."""
from __future__ import annotations

from harness.catalogue.detection import anomaly_ops, first_anomaly_s
from harness.catalogue.bugs import CATALOGUE
from harness.config.schedules import SCHEDULES
from harness.catalogue.shrink import Unit, ddmin, fault_units, replay_value, shrink, units_to_steps
from kraft.core import unsafe

from .histories.builder import H


def nemesis(h: H, f: str, value: dict, at_ms: int, done: dict | None = None) -> None:
    h.op("invoke", "nemesis", f, value, at_ms=at_ms)
    h.op("info", "nemesis", f, done or value, at_ms=at_ms + 5)


def test_fault_units_pair_starts_and_stops_by_slot_and_resolve_random_targets():
    h = H()
    h.op("invoke", 0, "append", 1, node="n1", at_ms=0)
    nemesis(h, "start-partition", {"kind": "random-halves"}, 1000,
            {"kind": "random-halves", "targets": ["n1", "n2"],
             "grudge": {"n1": ["n3"], "n2": ["n3"], "n3": ["n1", "n2"]}})
    nemesis(h, "start-kill", {"kind": "leader"}, 1500, {"kind": "leader", "targets": ["n2"]})
    nemesis(h, "start-kill", {"kind": "nodes", "slot": "elect", "targets": ["n3"]}, 1600)
    nemesis(h, "stop-kill", {"kind": "leader"}, 2500, {"kind": "leader", "targets": ["n2"]})
    nemesis(h, "stop-partition", {"kind": "random-halves"}, 4000)
    nemesis(h, "start-pause", {"kind": "one"}, 4500, {"kind": "one", "targets": ["n1"]})   # never stopped
    h.op("ok", 0, "append", {"value": 1, "offset": 0, "epoch": 1}, node="n1", at_ms=6000)
    units = fault_units(h.ops)
    assert [(u.family, u.start_s, u.end_s) for u in units] == [
        ("partition", 1.0, 4.0), ("kill", 1.5, 2.5), ("kill", 1.6, 6.0), ("pause", 4.5, 6.0)]
    part, kill_leader, elect, pause = units
    assert part.value == {"kind": "nodes", "grudge": {"n1": ["n3"], "n2": ["n3"], "n3": ["n1", "n2"]}}
    assert kill_leader.value == {"kind": "leader"}                 # aimed at whoever leads
    assert elect.value == {"kind": "nodes", "slot": "elect", "targets": ["n3"]}
    assert pause.value == {"kind": "nodes", "targets": ["n1"]}


def test_replay_values():
    assert replay_value("flap", {"kind": "bridge"}, {"kind": "bridge", "targets": ["n1"]}) == {"kind": "bridge"}
    assert replay_value("packet", {"kind": "loss"}, {"targets": ["n2"], "loss_pct": 9}) == \
        {"kind": "nodes", "targets": ["n2"], "effect": "loss", "loss_pct": 9}
    assert replay_value("crash", {"kind": "majority"}, {"targets": ["n1", "n2", "n3"]}) == {"kind": "majority"}


def test_units_to_steps_interleave_in_time_with_sleeps():
    units = [Unit("kill", {"kind": "nodes", "targets": ["n1"]}, 2.0, 5.0),
             Unit("partition", {"kind": "isolate-leader", "slot": "lag"}, 3.0, 4.0)]
    steps = units_to_steps(units, shift_s=1.0)
    assert steps == [
        {"sleep": 1.0}, {"nemesis": "start-kill", "value": {"kind": "nodes", "targets": ["n1"]}},
        {"sleep": 1.0}, {"nemesis": "start-partition", "value": {"kind": "isolate-leader", "slot": "lag"}},
        {"sleep": 1.0}, {"nemesis": "stop-partition", "value": {"kind": "isolate-leader", "slot": "lag"}},
        {"sleep": 1.0}, {"nemesis": "stop-kill", "value": {"kind": "nodes"}}]


def test_ddmin_finds_a_one_minimal_failing_subset():
    calls = []

    def fails(xs):
        calls.append(list(xs))
        return 3 in xs and 7 in xs

    assert ddmin(list(range(10)), fails) == [3, 7]
    assert all(len(c) < 10 for c in calls)
    assert ddmin([5], lambda xs: True) == [5]


def test_shrink_drops_faults_halves_windows_and_cuts_the_lead_in():
    units = [Unit("kill", {"kind": "leader"}, 10.0, 18.0), Unit("pause", {"kind": "one"}, 12.0, 14.0),
             Unit("partition", {"kind": "isolate-leader"}, 20.0, 30.0)]
    seen = []

    def fails(us, shift):
        seen.append((len(us), shift))
        kill = [u for u in us if u.family == "kill"]
        return bool(kill) and kill[0].end_s - kill[0].start_s >= 2.0

    kept, shift = shrink(units, fails)
    assert [u.family for u in kept] == ["kill"]
    assert kept[0].end_s - kept[0].start_s == 2.0           # 8 -> 4 -> 2; 1 no longer fails
    assert shift == 8.0                                      # the first fault now starts 2 s in


def test_anomaly_ops_and_time_to_detect():
    results = {"valid": False, "anomalies": {"lost-write": 1, "election-safety": 1, "phantom": 0},
               "checkers": {"lost-write": {"anomalies": [{"op": 3, "value": 9}]},
                            "election-safety": {"anomalies": [{"epoch": 2, "leaders": {
                                "1": [{"source": "read", "op": 5}], "2": [{"source": "log", "node": "n2"}]}}]}}}
    assert anomaly_ops(results["checkers"]) == {3, 5}
    h = H()
    for i in range(8):
        h.op("invoke" if i % 2 == 0 else "ok", 0, "append", i, at_ms=1000 * i + 500)
    assert first_anomaly_s(results, h.ops) == 3.0           # op 3 at 3.5 s, history from 0.5 s
    assert first_anomaly_s({"valid": True, "anomalies": {}}, h.ops) is None
    node_only = {"valid": False, "anomalies": {"divergence": 1},
                 "checkers": {"divergence": {"anomalies": [{"nodes": ["n1", "n2"], "offset": 4}]}}}
    assert first_anomaly_s(node_only, h.ops) == 7.0         # no op: the end of the run


def test_the_catalogue_covers_every_switch_with_a_known_schedule():
    covered = {s for b in CATALOGUE for s in b.switches}
    assert covered == set(unsafe.SWITCHES)
    assert all(b.schedule in SCHEDULES and b.klass == unsafe.CLASSES[b.name] for b in CATALOGUE)
    assert len({b.name for b in CATALOGUE}) == len(CATALOGUE) == len(unsafe.SWITCHES)
