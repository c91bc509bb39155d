"""The simulator with ``--brokers`` runs the controller core on every controller node and the
brokers' lifecycle core on every broker (sim/controller_nodes.py, sim/broker_nodes.py):
registration, heartbeats and fencing are messages, not a model. The cluster is built by hand
(as sim/schedule.py builds it) so that a test cuts exactly the link it means to."""
from __future__ import annotations

import random

from kraft.controller.core import ControllerCore
from kraft.controller.messages import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from kraft.core import errors
from kraft.core.events import Replied, Send, SetTimer, TimerFired
from kraft.core.records import METADATA
from kraft.core.unsafe import Unsafe
from sim.controller_nodes import ControllerNode
from sim.data_plane import DataPlane
from sim.broker_nodes import BACKOFF_MS, CHANNEL
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
    lead = next(i for i in QIDS if rt.up(i) and rt.nodes[i].controller.active)
    core = rt.nodes[lead].core
    return [r.payload for r in core.state.log.records[:core.state.hw] if r.type == METADATA]


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


def test_after_the_active_controller_dies_the_brokers_find_the_next_one_in_time():
    """The channel skips a controller that is down, follows the NOT_CONTROLLER hints and tries
    again after a backoff, so every broker's heartbeats reach the new active controller
    before its sessions (3 s from its activation) expire: nobody is fenced."""
    rt, plane, _ = cluster()
    rt.run_until(6000)
    first = next(i for i in QIDS if rt.nodes[i].controller.active)
    rt.stop(first)
    rt.run_until(16000)
    second = next(i for i in QIDS if rt.up(i) and rt.nodes[i].controller.active)
    assert second != first
    sessions = rt.nodes[second].controller.sessions
    assert sorted(sessions) == BROKERS and all(at > 15000 for at in sessions.values())    # renewed lately
    kinds = [p["type"] for p in committed(rt)]
    assert "FenceBrokerRecord" not in kinds
    assert all(not rt.nodes[b].lifecycle.fenced for b in BROKERS)


def test_the_brokers_channel_follows_hints_skips_the_silent_and_gives_up_at_its_deadline():
    """sim/broker_nodes.py's channel, step by step, as kraft/broker/controller_channel.py
    behaves: the hint first, a NOT_CONTROLLER hint followed at once, a controller that gave no
    answer left for the next, a pause of BACKOFF_MS after a round, None after the deadline."""
    rt, plane, _ = cluster()
    b = rt.nodes[4]
    b.hint, b.quorum_leader, b.turn = 2, -1, 0
    start = rt.now
    msg = BrokerHeartbeatRequest(4, 7, 0)
    [send] = b._to_controller(msg, 99)
    assert type(send) is Send and send.to == 2                         # the hinted one first
    [send] = b._controller_reply(Replied(2, msg, BrokerHeartbeatResponse(errors.NOT_CONTROLLER, leader_id=3),
                                         send.gen))
    assert send.to == 3 and b.hint == 3                                # the hint followed at once
    [send] = b._controller_reply(Replied(3, msg, None, send.gen))
    assert send.to in (1, 2)                                           # no answer: the next one
    rest = {send.to}
    [send] = b._controller_reply(Replied(send.to, msg, None, send.gen))
    rest.add(send.to)
    assert rest == {1, 2}
    [timer] = b._controller_reply(Replied(send.to, msg, None, send.gen))
    assert type(timer) is SetTimer and timer.key[0] == CHANNEL and timer.at == start + BACKOFF_MS
    [send] = b.step(TimerFired(timer.key, timer.at))                 # a new round, the hint first
    assert send.to == 3
    rt.now = start + b.core.cfg.request_timeout_ms                   # past the deadline
    for _ in range(3):
        out = b._controller_reply(Replied(send.to, msg, None, send.gen))
        if not out or type(out[0]) is not Send:
            break
        send = out[0]
    assert b.requests == {} and not any(type(e) is SetTimer and e.key[0] == CHANNEL for e in out)
