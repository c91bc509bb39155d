"""Packet faults: netem settings and commands, and the controller with netem, with the nfqueue
shaper where netem is missing, and with iptables' statistic loss where the shaper cannot start."""
import random

import pytest

from clusters.remote import ExecResult

from nemesis import packet
from nemesis.faults import Fault
from clusters.parallel import NodeErrors
from nemesis.partition import heal_command
from tests.nemesis_fakes import grudge_of, make_controller, shaper_controller

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


def test_packet_without_netem_or_shaper_drops_with_iptables_statistic_in_its_chain():
    for kind in ("delay", "loss", "mixed"):
        cluster, sim, db, c = shaper_controller(seed=5, shaper=False)
        value = c.start(Fault("packet", kind))
        senders = value["targets"]
        assert value["netem"] is False and value["shaper"] is False and 1 <= value["loss_pct"] <= 30
        assert "Operation not permitted" in value["shaper_error"]
        assert all(value[k] == 0 for k in ("delay_ms", "jitter_ms", "duplicate_pct", "reorder_pct"))
        assert set(value.get("not_applied", {})) == {k for k in ("delay_ms", "jitter_ms", "duplicate_pct",
                                                                 "reorder_pct") if value.get("not_applied", {}).get(k)}
        if kind != "loss":
            assert value["not_applied"] and all(v > 0 for v in value["not_applied"].values())
        assert all(sim.qdisc.get(n) is None for n in cluster.nodes)
        assert sim.shapers == {n: {} for n in senders} and not any(sim.queue_rules(n) for n in cluster.nodes)
        match = packet.loss_match(value)
        for n in cluster.nodes:
            want = {("KC-packet", cluster.ip(s), match) for s in senders if s != n}
            assert set(sim.rules(n)) == want
        out = c.stop(Fault("packet", kind))
        assert "shaped" not in out
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


def test_packet_to_names_the_destinations():
    cluster, sim, db, c = make_controller(netem=True)
    value = c.start(Fault("packet", "nodes", slot="lead", targets=("n1", "n2"),
                          params={"effect": "delay", "delay_ms": 150, "jitter_ms": 0, "to": ["n3"]}))
    assert value["to"] == ["n3"] and value["delay_ms"] == 150
    assert {n: dsts for n, (_, dsts) in sim.qdisc.items()} == {"n1": {cluster.ip("n3")}, "n2": {cluster.ip("n3")}}
    with pytest.raises(ValueError, match="to must list nodes"):
        c.start(Fault("packet", "nodes", slot="other", targets=("n4",), params={"to": ["n9"]}))


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


# -- the nfqueue shaper (no netem) ----------------------------------------------------

SHAPER_ZERO = {k: 0 for k in packet.SHAPER_KEYS}


def test_shaper_commands():
    p = {**SHAPER_ZERO, "delay_ms": 200, "jitter_ms": 100}
    start = packet.shaper_start_command("slow-1", 4201, p, 99)
    assert start.startswith("rm -f /tmp/kc-shaper-slow-1.pid ; nohup python3 /tmp/kc-shaper.py --queue 4201 "
                            "--delay-ms 200 --jitter-ms 100 --loss-pct 0 --reorder-pct 0 --seed 99 "
                            "--pidfile /tmp/kc-shaper-slow-1.pid </dev/null >/tmp/kc-shaper-slow-1.log 2>&1 & ")
    assert "while [ ! -s /tmp/kc-shaper-slow-1.pid ]" in start and "exit 1" in start
    stop = packet.shaper_stop_command("slow-1")
    assert stop.startswith("if [ -s /tmp/kc-shaper-slow-1.pid ] ; then p=$(cat /tmp/kc-shaper-slow-1.pid) ; "
                           "kill -TERM $p")
    assert "kill -KILL $p" in stop and stop.endswith("tail -n 1 /tmp/kc-shaper-slow-1.log 2>/dev/null ; true")
    rules = packet.queue_rules("slow-1", 4201, ["10.0.0.3", "10.0.0.2"]).split(" && ")
    assert rules[-2:] == [f"iptables -w -A KC-slow-1-o -d {ip} -j NFQUEUE --queue-num 4201 --queue-bypass"
                          for ip in ("10.0.0.2", "10.0.0.3")]
    assert "iptables -w -I OUTPUT -j KC-slow-1-o" in " && ".join(rules)
    with pytest.raises(ValueError, match="bad fault slot"):
        packet.shaper_files("a b")


def test_kill_all_never_matches_its_own_shell():
    # pkill -f matches command lines: the shell running this command must not name kc-shaper
    cmd = packet.SHAPER_KILL_ALL_COMMAND
    assert "kc-shaper" not in cmd and "pkill -TERM -f '[k]c-shaper'" in cmd
    assert "pkill -KILL -f '[k]c-shaper'" in cmd and "rm -f /tmp/[k]c-shaper-*.pid" in cmd


def test_shaper_counts():
    assert packet.shaper_counts('boot\n{"packets": 3, "dropped": 1}\n') == {"packets": 3, "dropped": 1}
    assert packet.shaper_counts("Traceback ...\nOSError: boom\n") == {"log": "OSError: boom"}
    assert packet.shaper_counts("") == {} and packet.shaper_counts("[1]") == {"log": "[1]"}


def test_shaper_and_fallback_params():
    rng = random.Random(1)
    applied, missing = packet.shaper_params({**ZERO, "delay_ms": 80, "jitter_ms": 40, "duplicate_pct": 9,
                                             "reorder_pct": 20, "loss_pct": 3}, rng)
    assert applied == {**ZERO, "delay_ms": 80, "jitter_ms": 40, "reorder_pct": 20, "loss_pct": 3}
    assert missing == {"duplicate_pct": 9}
    applied, missing = packet.shaper_params({**ZERO, "duplicate_pct": 12}, rng)   # nothing left: loss
    assert 5 <= applied["loss_pct"] <= 30 and applied["duplicate_pct"] == 0 and missing == {"duplicate_pct": 12}
    applied, missing = packet.fallback_params({**ZERO, "delay_ms": 80, "jitter_ms": 40}, random.Random(2))
    assert applied == {**ZERO, "loss_pct": applied["loss_pct"]} and 5 <= applied["loss_pct"] <= 30
    assert missing == {"delay_ms": 80, "jitter_ms": 40}
    assert packet.fallback_params({**ZERO, "loss_pct": 7}, rng) == ({**ZERO, "loss_pct": 7}, {})


def test_packet_without_netem_runs_the_shaper_on_each_sender():
    source = packet.SHAPER_SOURCE.read_text()
    for seed in range(8):
        cluster, sim, db, c = shaper_controller(seed=seed)
        value = c.start(Fault("packet", "delay"))
        senders = value["targets"]
        assert value["netem"] is False and value["shaper"] == "nfqueue" and value["queue"] == packet.QUEUE_BASE
        assert 50 <= value["delay_ms"] <= 300 and value["jitter_ms"] == value["delay_ms"] // 2
        assert value["loss_pct"] == value["duplicate_pct"] == value["reorder_pct"] == 0
        assert "not_applied" not in value and "shaper_error" not in value
        assert c.active == {"packet": senders}
        calls = cluster.remote.calls
        for n in cluster.nodes:
            mine = [k for k in calls if k[1] == n]
            if n not in senders:
                assert sim.shapers.get(n, {}) == {} and sim.queue_rules(n) == []
                assert not [k for k in mine if k[0] == "put"]
                continue
            put = [i for i, k in enumerate(calls) if k[:3] == ("put", n, packet.SHAPER_PATH)]
            start = [i for i, k in enumerate(calls) if k[0] == "exec" and k[1] == n and "nohup" in k[2]]
            rules = [i for i, k in enumerate(calls) if k[0] == "exec" and k[1] == n and "NFQUEUE" in k[2]]
            assert len(put) == len(start) == len(rules) == 1 and put[0] < start[0] < rules[0]
            assert calls[put[0]][3] == source
            run = sim.shapers[n]["packet"]
            assert run["queue"] == packet.QUEUE_BASE
            assert run["args"] == {k: float(value[k]) for k in packet.SHAPER_KEYS}
            assert sim.queue_rules(n) == [("KC-packet-o", cluster.ip(d), packet.QUEUE_BASE)
                                          for d in cluster.nodes if d != n]
        seeds = [sim.shapers[n]["packet"]["seed"] for n in senders]
        assert len(set(seeds)) == len(seeds)
        assert grudge_of(cluster, sim) == {n: set() for n in cluster.nodes}     # nothing cut
        assert all(sim.qdisc.get(n) is None for n in cluster.nodes)

        before = len(calls)
        out = c.stop(Fault("packet", "delay"))
        assert out["targets"] == senders and set(out["shaped"]) == set(senders)
        assert all(out["shaped"][n]["queue"] == packet.QUEUE_BASE for n in senders)
        assert sim.shapers == {n: {} for n in senders}
        assert not any(sim.queue_rules(n) for n in cluster.nodes) and c.active == {}
        for n in senders:      # the chain is flushed before the shaper stops
            later = [k[2] for k in calls[before:] if k[0] == "exec" and k[1] == n]
            assert later == [heal_command("packet"), packet.shaper_stop_command("packet")]
        # the same seed gives the same fault, shaper seeds included
        _c2, sim2, _db2, c2 = shaper_controller(seed=seed)
        assert c2.start(Fault("packet", "delay")) == value
        assert {n: s["packet"]["seed"] for n, s in sim2.shapers.items()} == dict(zip(senders, seeds))


def test_shaper_cannot_duplicate_and_says_so():
    cluster, sim, db, c = shaper_controller(seed=3)
    value = c.start(Fault("packet", "duplicate"))
    assert value["shaper"] == "nfqueue" and value["duplicate_pct"] == 0
    assert value["not_applied"]["duplicate_pct"] > 0 and 5 <= value["loss_pct"] <= 30
    c.stop(Fault("packet", "duplicate"))
    value = c.start(Fault("packet", "mixed"))
    assert value["duplicate_pct"] == 0 and value["not_applied"]["duplicate_pct"] > 0
    assert value["reorder_pct"] > 0 and value["delay_ms"] > 0 and value["loss_pct"] > 0
    n = value["targets"][0]
    assert sim.shapers[n]["packet"]["args"]["reorder_pct"] == value["reorder_pct"]


def test_overlapping_packet_slots_get_their_own_queues():
    cluster, sim, db, c = shaper_controller(seed=1)
    a = c.start(Fault("packet", "nodes", targets=("n1",), params={"effect": "delay"}))
    b = c.start(Fault("packet", "nodes", slot="slow", targets=("n1", "n2"), params={"effect": "loss"}))
    assert (a["queue"], b["queue"]) == (packet.QUEUE_BASE, packet.QUEUE_BASE + 1)
    assert set(sim.shapers["n1"]) == {"packet", "slow"} and set(sim.shapers["n2"]) == {"slow"}
    assert {(ch, q) for ch, _d, q in sim.queue_rules("n1")} == {("KC-packet-o", a["queue"]),
                                                                ("KC-slow-o", b["queue"])}
    c.stop(Fault("packet", "nodes"))
    assert set(sim.shapers["n1"]) == {"slow"}
    assert {(ch, q) for ch, _d, q in sim.queue_rules("n1")} == {("KC-slow-o", b["queue"])}
    again = c.start(Fault("packet", "nodes", slot="p3", targets=("n3",), params={"effect": "delay"}))
    assert again["queue"] == packet.QUEUE_BASE          # freed by the stop


def test_a_shaper_failing_on_one_sender_stops_the_others_and_falls_back():
    cluster, sim, db, c = shaper_controller(seed=2)
    cluster.remote.handler = lambda node, cmd: (
        ExecResult(1, "", "python3: not found") if node == "n2" and "nohup" in str(cmd) else sim(node, cmd))
    value = c.start(Fault("packet", "nodes", targets=("n1", "n2", "n3"), params={"effect": "delay"}))
    assert value["shaper"] is False and "n2" in value["shaper_error"] and "python3: not found" in value["shaper_error"]
    assert value["delay_ms"] == 0 and value["not_applied"]["delay_ms"] > 0 and value["loss_pct"] > 0
    assert not any(sim.shapers.get(n) for n in cluster.nodes)          # n1's and n3's were stopped
    assert not any(sim.queue_rules(n) for n in cluster.nodes)
    assert grudge_of(cluster, sim)["n4"] == {"n1", "n2", "n3"}
    c.stop(Fault("packet", "nodes"))
    assert grudge_of(cluster, sim) == {n: set() for n in cluster.nodes}
    # the queue was given back: the next fault gets the first one
    cluster.remote.handler = sim
    assert c.start(Fault("packet", "loss"))["queue"] == packet.QUEUE_BASE


def test_failed_shaper_stop_keeps_the_fault_for_heal_all_which_kills_every_shaper():
    cluster, sim, db, c = shaper_controller(seed=4)
    value = c.start(Fault("packet", "nodes", targets=("n1", "n4"), params={"effect": "delay"}))
    c.start(Fault("packet", "nodes", slot="slow", targets=("n2",), params={"effect": "loss"}))
    cluster.remote.down.add("n4")
    with pytest.raises(NodeErrors, match="n4"):
        c.stop(Fault("packet", "nodes"))
    assert set(c.active) == {"packet", "slow"}
    cluster.remote.down.clear()
    result = c.heal_all()
    assert result["errors"] == {} and c.active == {}
    assert not any(sim.shapers.get(n) for n in cluster.nodes)
    for n in cluster.nodes:
        assert packet.SHAPER_KILL_ALL_COMMAND in cluster.remote.execs(n)
        assert sim.queue_rules(n) == []
    assert c.start(Fault("packet", "delay"))["queue"] == packet.QUEUE_BASE
    assert value["queue"] == packet.QUEUE_BASE


def test_heal_all_kills_shapers_only_where_netem_is_missing():
    cluster, sim, db, c = make_controller(netem=True)
    c.start(Fault("packet", "delay"))
    c.heal_all()
    assert packet.SHAPER_KILL_ALL_COMMAND not in cluster.remote.execs()
    cluster, sim, db, c = shaper_controller()
    c.start(Fault("kill", "one"))          # netem never probed: no shaper can have started
    c.heal_all()
    assert packet.SHAPER_KILL_ALL_COMMAND not in cluster.remote.execs()


def test_settings_named_by_the_fault_replace_the_drawn_ones():
    assert packet.given_params({"delay_ms": 200, "jitter_ms": 0.0, "effect": "delay"}) == {"delay_ms": 200,
                                                                                           "jitter_ms": 0}
    for bad in ({"delay_ms": -1}, {"loss_pct": 101}, {"jitter_ms": "5"}, {"loss_pct": True}):
        with pytest.raises(ValueError, match="packet fault"):
            packet.given_params(bad)
    cluster, sim, db, c = shaper_controller()
    value = c.start(Fault("packet", "nodes", targets=("n1", "n2", "n3", "n4", "n5"),
                          params={"effect": "delay", "delay_ms": 200, "jitter_ms": 0}))
    assert (value["delay_ms"], value["jitter_ms"], value["shaper"]) == (200, 0, "nfqueue")
    assert sim.shapers["n3"]["packet"]["args"] == {**{k: 0.0 for k in packet.SHAPER_KEYS}, "delay_ms": 200.0}
    cluster, sim, db, c = make_controller(netem=True)
    value = c.start(Fault("packet", "loss", params={"loss_pct": 12}))
    assert value["loss_pct"] == 12 and sim.qdisc[value["targets"][0]][0] == "loss 12%"
