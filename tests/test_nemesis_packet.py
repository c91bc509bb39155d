"""Packet faults: netem settings and commands, and the controller with and without netem."""
import random

import pytest

from nemesis import packet
from nemesis.faults import Fault
from nemesis.partition import heal_command
from tests.nemesis_fakes import grudge_of, make_controller

ZERO = {"delay_ms": 0, "jitter_ms": 0, "loss_pct": 0, "duplicate_pct": 0, "reorder_pct": 0}


@pytest.mark.parametrize("kind,used", [("delay", {"delay_ms", "jitter_ms"}), ("loss", {"loss_pct"}),
                                       ("duplicate", {"duplicate_pct"}),
                                       ("reorder", {"delay_ms", "reorder_pct"}), ("mixed", set(ZERO))])
def test_netem_params_per_kind(kind, used):
    for seed in range(20):
        p = packet.netem_params(kind, random.Random(seed))
        assert set(p) == set(ZERO)
        assert {k for k, v in p.items() if v} == used
    assert packet.netem_params(kind, random.Random(3)) == packet.netem_params(kind, random.Random(3))


def test_netem_params_ranges_and_unknown_kind():
    d = packet.netem_params("delay", random.Random(1))
    assert 50 <= d["delay_ms"] <= 300 and d["jitter_ms"] == d["delay_ms"] // 2
    assert 5 <= packet.netem_params("loss", random.Random(1))["loss_pct"] <= 30
    with pytest.raises(ValueError, match="unknown packet kind 'jam'"):
        packet.netem_params("jam", random.Random(1))


def test_netem_args():
    assert packet.netem_args({**ZERO, "delay_ms": 100, "jitter_ms": 50}) == "delay 100ms 50ms"
    assert packet.netem_args({**ZERO, "loss_pct": 7, "duplicate_pct": 3}) == "loss 7% duplicate 3%"
    assert packet.netem_args({**ZERO, "delay_ms": 30, "reorder_pct": 40}) == "delay 30ms reorder 40%"
    assert packet.netem_args({**ZERO, "reorder_pct": 40}) == "delay 0ms"      # reorder needs a delay
    assert packet.netem_args(ZERO) == "delay 0ms"


def test_netem_command_filters_each_destination():
    cmd = packet.netem_command(["10.0.0.3", "10.0.0.2"], {**ZERO, "loss_pct": 10})
    parts = cmd.split(" && ")
    assert parts[0] == packet.HEAL_COMMAND
    assert "tc qdisc add dev eth0 parent 1:2 handle 20: netem loss 10%" in parts
    filters = [p for p in parts if p.startswith("tc filter")]
    assert filters == [f"tc filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dst {ip}/32 flowid 1:2"
                       for ip in ("10.0.0.2", "10.0.0.3")]


def test_loss_match():
    assert packet.loss_match({"loss_pct": 20}) == "-m statistic --mode random --probability 0.20"


def test_packet_with_netem_shapes_each_sender_towards_every_other_node():
    for seed in range(8):
        cluster, sim, db, c = make_controller(seed=seed, netem=True)
        value = c.start(Fault("packet", "delay"))
        senders = value["targets"]
        assert senders and set(senders) <= set(cluster.nodes) and "netem" not in value
        assert 50 <= value["delay_ms"] <= 300
        for n in cluster.nodes:
            if n in senders:
                args, dsts = sim.qdisc[n]
                assert args == packet.netem_args(value)
                assert dsts == {cluster.ip(d) for d in cluster.nodes if d != n}
            else:
                assert sim.qdisc.get(n) is None
                assert [x for x in cluster.remote.execs(n) if x.startswith("tc qdisc del dev eth0")] == []
        assert grudge_of(cluster, sim) == {n: set() for n in cluster.nodes}     # no iptables rules
        assert c.active == {"packet": senders}
        out = c.stop(Fault("packet", "delay"))
        assert out == {"kind": "delay", "targets": senders}
        assert all(sim.qdisc.get(n) is None for n in cluster.nodes)
        assert all(packet.HEAL_COMMAND in cluster.remote.execs(n) for n in senders)
        assert c.active == {}


def test_netem_is_probed_once():
    cluster, sim, db, c = make_controller(netem=True)
    c.start(Fault("packet", "loss"))
    c.stop(Fault("packet", "loss"))
    c.start(Fault("packet", "mixed"))
    assert sim.probes == 1 and cluster.remote.execs("n1")[0] == packet.PROBE_COMMAND


def test_packet_without_netem_drops_with_iptables_statistic_in_its_chain():
    for kind in ("delay", "loss", "mixed"):
        cluster, sim, db, c = make_controller(seed=5, netem=False)
        value = c.start(Fault("packet", kind))
        senders = value["targets"]
        assert value["netem"] is False and 1 <= value["loss_pct"] <= 30
        assert all(sim.qdisc.get(n) is None for n in cluster.nodes)
        match = packet.loss_match(value)
        for n in cluster.nodes:
            want = {("KC-packet", cluster.ip(s), match) for s in senders if s != n}
            assert set(sim.rules(n)) == want
        c.stop(Fault("packet", kind))
        assert grudge_of(cluster, sim) == {n: set() for n in cluster.nodes}
        assert all(cluster.remote.execs(n)[-1] == heal_command("packet") for n in cluster.nodes)
        assert not [x for x in cluster.remote.execs() if x == packet.HEAL_COMMAND]   # no tc to undo


def test_explicit_packet_targets_and_effect():
    cluster, sim, db, c = make_controller(netem=True)
    value = c.start(Fault("packet", "nodes", slot="slow", targets=("n2",), params={"effect": "duplicate"}))
    assert value["targets"] == ["n2"] and value["slot"] == "slow" and value["effect"] == "duplicate"
    assert value["duplicate_pct"] > 0 and value["delay_ms"] == 0
    assert set(sim.qdisc) == {"n2"} and sim.qdisc["n2"][0] == f"duplicate {value['duplicate_pct']}%"
    with pytest.raises(ValueError, match="explicit targets"):
        c.start(Fault("packet", "nodes", targets=("n8",)))


def test_packet_and_partition_overlap_in_their_own_chains():
    cluster, sim, db, c = make_controller(seed=2, netem=False)
    p = c.start(Fault("partition", "nodes", targets=("n1",)))
    q = c.start(Fault("packet", "loss"))
    assert grudge_of(cluster, sim, "KC-partition") == {n: set(v) for n, v in p["grudge"].items()}
    c.stop(Fault("partition", "nodes"))
    assert grudge_of(cluster, sim, "KC-partition") == {n: set() for n in cluster.nodes}
    by_ip = {cluster.ip(n): n for n in cluster.nodes}
    for n in cluster.nodes:          # the packet slot's rules are untouched
        assert {by_ip[ip] for ip in sim.drops(n, "KC-packet")} == set(q["targets"]) - {n}
