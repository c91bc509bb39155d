"""A shrunk trace's faults as a scenario file (sim/export.py) that ``kraft-chaos scenario run``
accepts: roles bound from the leader, leader-aimed faults kept as such, clock jumps left out."""
from __future__ import annotations

import types

from harness.config.scenario import load
from sim.api import SimOptions
from sim.export import fault_steps, roles, write_scenario
from sim.schedule import Plan

APPLIED = [
    {"at_ms": 3000.0, "duration_ms": 1500.0, "family": "kill", "kind": "leader", "targets": [2], "params": {},
     "leader": 2},
    {"at_ms": 3500.0, "duration_ms": 2000.0, "family": "partition", "kind": "one-way-one", "targets": [3],
     "params": {}, "leader": 1, "grudge": {1: [3], 2: [3]}},
    {"at_ms": 4000.0, "duration_ms": 100.0, "family": "clock", "kind": "one", "targets": [1],
     "params": {"offset_ms": 5000}, "leader": 1},
    {"at_ms": 4200.0, "duration_ms": 300.0, "family": "packet", "kind": "delay", "targets": [3],
     "params": {"delay_ms": 400, "jitter_ms": 0, "kind": "delay"}, "leader": 1},
]


def test_roles_start_from_the_leader_of_the_first_fault():
    assert roles(APPLIED, [1, 2, 3]) == {2: "S1", 1: "S2", 3: "S3"}
    assert roles([dict(APPLIED[0], leader=None)], [1, 2]) == {1: "n1", 2: "n2"}


def test_steps_keep_the_order_and_gaps_of_the_faults():
    steps, left_out = fault_steps(APPLIED, roles(APPLIED, [1, 2, 3]))
    assert steps[0] == {"nemesis": "start-kill", "value": {"kind": "leader"}}
    assert steps[1] == {"sleep": 0.5}
    assert steps[2] == {"nemesis": "start-partition", "value": {"kind": "nodes", "grudge": {"S2": ["S3"],
                                                                                           "S1": ["S3"]}}}
    packet = next(s for s in steps if s.get("nemesis") == "start-packet")
    assert packet["value"] == {"kind": "nodes", "targets": ["S3"], "delay_ms": 400, "jitter_ms": 0}
    assert [s["nemesis"] for s in steps if "nemesis" in s].count("stop-kill") == 1
    assert len(left_out) == 1 and "clock jump" in left_out[0]
    assert round(sum(s.get("sleep", 0) for s in steps), 3) == 2.5      # 3.0 s -> 5.5 s


def test_the_file_loads_as_a_scenario(tmp_path):
    shrunk = types.SimpleNamespace(
        result=types.SimpleNamespace(applied=APPLIED, first=("committed-lost", "n2 became leader ...")),
        original=Plan((), ((1.0, 0, "append"),) * 3, 30000.0), plan=Plan((), ((1.0, 0, "append"),), 6000.0),
        runs=12, target="committed-lost")
    path = write_scenario(SimOptions(unsafe=("vote-ignores-offset",)), 3, shrunk, tmp_path, "10.111.0.0/24")
    doc = load(path)
    assert doc["run"] == {"seed": 3, "workload": "append", "nodes": 3, "unsafe": ["vote-ignores-offset"],
                          "subnet": "10.111.0.0/24"}
    assert doc["steps"][1]["bind"] == ["S1", "S2", "S3"]
    text = path.read_text()
    assert "left out: clock jump" in text and f"kraft-chaos scenario run {path}" in text
