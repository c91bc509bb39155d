"""The simulator with ``--brokers`` runs the controller core on every controller node and the
brokers' lifecycle core on every broker (sim/controller_nodes.py, sim/broker_nodes.py):
registration, heartbeats and fencing are messages, not a model."""
from __future__ import annotations

import random

from kraft.controller.core import ControllerCore
from kraft.core.records import METADATA
from kraft.core.unsafe import Unsafe
from sim.api import SimOptions
from sim.controller_nodes import ControllerNode
from sim.faults import FaultSpec
from sim.quorum_nodes import quorum_nodes
from sim.runtime import Runtime
from sim.schedule import Plan, run_schedule

OPTS = SimOptions(brokers=3, sim_seconds=16)


def metadata(r, node: str = "n1") -> list[dict]:
    return [p for _, _, t, p in r.nodes[node][0] if t == METADATA]


def ops(end_ms: float) -> tuple:
    return tuple((float(t), t // 100 % 5, "append" if t % 300 else "read") for t in range(3000, int(end_ms), 100))


def test_a_quiet_run_registers_unfences_and_creates_the_topic_once():
    r = run_schedule(OPTS, 3, Plan((), ops(16000), 16000.0), keep=True)
    assert r.ok and r.violation is None
    recs = metadata(r)
    kinds = [p["type"] for p in recs]
    assert sorted(p["brokerId"] for p in recs if p["type"] == "RegisterBrokerRecord") == [4, 5, 6]
    assert sorted(p["id"] for p in recs if p["type"] == "UnfenceBrokerRecord") == [4, 5, 6]
    assert kinds.count("TopicRecord") == 1 and kinds.count("PartitionRecord") == 2
    assert "FenceBrokerRecord" not in kinds                   # heartbeats keep every session alive
    assert all(metadata(r, n) == recs for n in ("n2", "n3"))  # the same committed metadata everywhere
    sends = [op for op in r.ops if op["f"] == "send" and op["type"] == "ok"]
    assert len(sends) > 50


def test_a_broker_cut_off_misses_its_heartbeats_is_fenced_then_unfenced():
    pick = next(p for p in range(1000) if random.Random(p).randrange(6) == 3)      # n4, the first broker
    cut = FaultSpec(5000.0, 6000.0, "partition", "isolate-one", (("pick", pick),))
    r = run_schedule(OPTS, 3, Plan((cut,), ops(16000), 16000.0), keep=True)
    assert r.ok, r.first
    assert r.applied[0]["targets"] == [4]
    recs = metadata(r)
    fence = next(i for i, p in enumerate(recs) if p["type"] == "FenceBrokerRecord")
    assert recs[fence]["id"] == 4
    changes = [p for p in recs[fence + 1:] if p["type"] == "PartitionChangeRecord"]
    assert changes and all(4 not in p["isr"] and p["leader"] != 4 for p in changes[:2])
    assert any(p["type"] == "UnfenceBrokerRecord" and p["id"] == 4 for p in recs[fence:])   # back after the heal


def test_every_controller_node_runs_a_controller_core_and_one_is_active():
    rt = Runtime(1)
    nodes = quorum_nodes(rt, 3, 0, Unsafe.of(()), node_class=ControllerNode)
    rt.run_until(5000)
    assert all(isinstance(n.controller, ControllerCore) for n in nodes)
    active = [n.id for n in nodes if n.controller.active]
    assert len(active) == 1 and rt.nodes[active[0]].core.leader_epoch_committed()
