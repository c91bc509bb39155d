"""The simulator with ``--brokers`` runs the controller core on every controller node and the
brokers' lifecycle core on every broker (sim/controller_nodes.py, sim/broker_nodes.py):
registration, heartbeats and fencing are messages, not a model. The cluster is built by hand
(as sim/schedule.py builds it) so that a test cuts exactly the link it means to."""
from __future__ import annotations

import random

from kraft.controller.core import ControllerCore
from kraft.core.records import METADATA
from kraft.core.unsafe import Unsafe
from sim.controller_nodes import ControllerNode
from sim.data_plane import DataPlane
from sim.invariants import QuorumInvariants
from sim.quorum_nodes import quorum_nodes
from sim.recording import Recording
from sim.runtime import Runtime

QIDS, BROKERS = [1, 2, 3], [4, 5, 6]


def cluster(seed: int = 3) -> tuple[Runtime, DataPlane, Recording]:
    """3 controllers and 3 brokers; a client op every 100 ms from 3 s on."""
    rt = Runtime(seed)
    rec = Recording(lambda: rt.now)
    qinv = QuorumInvariants(lambda: rt.now)
    quorum_nodes(rt, 3, 0, Unsafe.of(()), node_class=ControllerNode)
    plane = DataPlane(rt, rec, random.Random(seed), QIDS, 3, Unsafe.of(()), qinv, 5)
    rt.on_client = lambda token, msg: plane.on_reply(token, msg) or plane.clients.on_reply(token, msg)
    for t in range(3000, 16000, 100):
        rt.at(float(t), lambda t=t: plane.clients.issue(t // 100 % 5, "append" if t % 300 else "read"))
    return rt, plane, rec


def committed(rt: Runtime) -> list[dict]:
    lead = next(i for i in QIDS if rt.nodes[i].controller.active)
    core = rt.nodes[lead].core
    return [r.payload for r in core.log.records[:core.hw] if r.type == METADATA]


def test_every_controller_node_runs_a_controller_core_and_only_the_leaders_is_active():
    rt, plane, _ = cluster()
    rt.run_until(5000)
    nodes = [rt.nodes[i] for i in QIDS]
    assert all(isinstance(n.controller, ControllerCore) for n in nodes)
    active = [n.id for n in nodes if n.controller.active]
    assert len(active) == 1 and rt.nodes[active[0]].core.leader_epoch_committed()


def test_a_quiet_run_registers_unfences_and_creates_the_topic_once():
    rt, plane, rec = cluster()
    rt.run_until(16000)
    recs = committed(rt)
    kinds = [p["type"] for p in recs]
    assert sorted(p["brokerId"] for p in recs if p["type"] == "RegisterBrokerRecord") == BROKERS
    assert sorted(p["id"] for p in recs if p["type"] == "UnfenceBrokerRecord") == BROKERS
    assert kinds.count("TopicRecord") == 1 and kinds.count("PartitionRecord") == 2
    assert "FenceBrokerRecord" not in kinds                    # heartbeats keep every session alive
    sends = [op for op in rec.ops if op["f"] == "send" and op["type"] == "ok"]
    assert len(sends) > 50
    assert all(rt.nodes[b].lifecycle.broker_epoch >= 0 and not rt.nodes[b].lifecycle.fenced for b in BROKERS)


def test_a_broker_cut_off_misses_its_heartbeats_is_fenced_then_unfenced():
    rt, plane, _ = cluster()
    others = [i for i in QIDS + BROKERS if i != 4]
    rt.at(5000.0, lambda: rt.net.grudge({**{o: [4] for o in others}, 4: others}))     # n4 alone
    rt.at(11000.0, rt.net.heal_cuts)
    rt.run_until(16000)
    recs = committed(rt)
    fence = next(i for i, p in enumerate(recs) if p["type"] == "FenceBrokerRecord")
    assert recs[fence]["id"] == 4
    changes = [p for p in recs[fence + 1:] if p["type"] == "PartitionChangeRecord"]
    assert len(changes) >= 2 and all(4 not in p["isr"] and p["leader"] != 4 for p in changes[:2])
    assert any(p["type"] == "UnfenceBrokerRecord" and p["id"] == 4 for p in recs[fence:])    # back after the heal
    assert [p["id"] for p in recs if p["type"] == "FenceBrokerRecord"] == [4]
