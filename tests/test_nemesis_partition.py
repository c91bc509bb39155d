"""nemesis.partition: iptables rules in a chain per fault slot, healed per slot or all at once."""
import pytest

from clusters.remote import ExecResult
from nemesis import grudge as g
from clusters.parallel import NodeErrors
from nemesis.partition import (HEAL_ALL_COMMAND, Partitioner, chain, drop_commands, ensure_chain_command,
                               heal_command)
from tests.nemesis_fakes import FakeCluster, FakeRemote, grudge_of, sim_cluster


def test_chain_per_slot_and_bad_slots():
    assert chain("partition") == "KC-partition"
    assert chain("lag") == "KC-lag" and chain("a_b-9") == "KC-a_b-9"
    assert chain("lag", outgoing=True) == "KC-lag-o"
    assert len(chain("x" * 23, outgoing=True)) == 28
    for bad in ["", "two words", "x" * 24, "semi;colon", None]:
        with pytest.raises(ValueError, match="bad fault slot"):
            chain(bad)


def test_commands_exact():
    assert heal_command("flap") == ("{ iptables -w -F KC-flap 2>/dev/null || true; } && "
                                    "{ iptables -w -F KC-flap-o 2>/dev/null || true; }")
    # only our chains: on the ssh backend the node's firewall is its host's own
    assert "KC-*" in HEAL_ALL_COMMAND and "iptables -w -F \"$c\"" in HEAL_ALL_COMMAND
    assert ensure_chain_command("lag") == (
        "{ iptables -w -N KC-lag 2>/dev/null || true; } && "
        "{ iptables -w -C INPUT -j KC-lag 2>/dev/null || iptables -w -I INPUT -j KC-lag; }")
    assert ensure_chain_command("lag", outgoing=True) == (
        "{ iptables -w -N KC-lag-o 2>/dev/null || true; } && "
        "{ iptables -w -C OUTPUT -j KC-lag-o 2>/dev/null || iptables -w -I OUTPUT -j KC-lag-o; }")


def test_a_one_way_partition_drops_on_the_senders_output():
    cluster, sim = sim_cluster(3)
    grudge = g.one_way(cluster.nodes, "n2")          # n2's packets lost, n2 still hears n1, n3
    assert drop_commands(grudge, cluster.ip, outgoing=True) == {
        "n1": [], "n2": ["iptables -w -A KC-partition-o -d 10.77.0.11 -j DROP",
                         "iptables -w -A KC-partition-o -d 10.77.0.13 -j DROP"], "n3": []}
    Partitioner(cluster).apply(grudge, outgoing=True)
    assert cluster.remote.execs("n1") == [] and sim.drops("n1") == set()   # nothing on receivers
    assert grudge_of(cluster, sim) == {n: set(d) for n, d in grudge.items()}
    Partitioner(cluster).heal()
    assert grudge_of(cluster, sim) == {n: set() for n in cluster.nodes}


def test_drop_commands_exact():
    cluster = FakeCluster(3)
    cmds = drop_commands(g.isolate(cluster.nodes, "n2"), cluster.ip)
    assert cmds == {
        "n1": ["iptables -w -A KC-partition -s 10.77.0.12 -j DROP"],
        "n2": ["iptables -w -A KC-partition -s 10.77.0.11 -j DROP",
               "iptables -w -A KC-partition -s 10.77.0.13 -j DROP"],
        "n3": ["iptables -w -A KC-partition -s 10.77.0.12 -j DROP"],
    }


def test_drop_commands_slot_and_match():
    cluster = FakeCluster(3)
    cmds = drop_commands({"n1": {"n3"}, "n2": set(), "n3": set()}, cluster.ip, slot="packet",
                         match="-m statistic --mode random --probability 0.20")
    assert cmds == {"n1": ["iptables -w -A KC-packet -s 10.77.0.13 "
                           "-m statistic --mode random --probability 0.20 -j DROP"],
                    "n2": [], "n3": []}


def test_drop_commands_unknown_node_and_bad_slot():
    with pytest.raises(ValueError, match="unknown node"):
        drop_commands({"n1": {"n7"}}, lambda n: "1.2.3.4")
    with pytest.raises(ValueError, match="bad fault slot"):
        drop_commands({"n1": set()}, lambda n: "1.2.3.4", slot="no spaces")


def test_apply_creates_the_chain_then_appends_rules_on_nodes_with_rules_only():
    cluster, sim = sim_cluster(3)
    Partitioner(cluster).apply({"n1": {"n3"}, "n2": set(), "n3": {"n1"}})
    remote = cluster.remote
    assert remote.execs("n1") == [ensure_chain_command("partition")
                                  + " && iptables -w -A KC-partition -s 10.77.0.13 -j DROP"]
    assert remote.execs("n2") == []
    assert remote.execs("n3") == [ensure_chain_command("partition")
                                  + " && iptables -w -A KC-partition -s 10.77.0.11 -j DROP"]
    assert grudge_of(cluster, sim) == {"n1": {"n3"}, "n2": set(), "n3": {"n1"}}


def test_apply_joins_several_rules_in_one_exec():
    cluster, sim = sim_cluster(3)
    Partitioner(cluster).apply(g.isolate(cluster.nodes, "n1"), slot="s1")
    assert cluster.remote.execs("n1") == [
        ensure_chain_command("s1") + " && iptables -w -A KC-s1 -s 10.77.0.12 -j DROP"
        " && iptables -w -A KC-s1 -s 10.77.0.13 -j DROP"]
    assert sim.rules("n1") == [("KC-s1", "10.77.0.12", ""), ("KC-s1", "10.77.0.13", "")]


def test_slots_are_healed_independently():
    cluster, sim = sim_cluster(3)
    p = Partitioner(cluster)
    p.apply(g.isolate(cluster.nodes, "n1"), slot="a")
    p.apply(g.one_way(cluster.nodes, "n3"), slot="b")
    assert grudge_of(cluster, sim) == {"n1": {"n2", "n3"}, "n2": {"n1", "n3"}, "n3": {"n1"}}
    p.heal("a")
    assert grudge_of(cluster, sim) == {"n1": {"n3"}, "n2": {"n3"}, "n3": set()}
    assert grudge_of(cluster, sim, "KC-a") == {n: set() for n in cluster.nodes}
    p.heal("b")
    assert grudge_of(cluster, sim) == {n: set() for n in cluster.nodes}


def test_heal_flushes_the_slot_chain_on_every_node_and_is_idempotent():
    cluster = FakeCluster(5)
    Partitioner(cluster).heal()
    Partitioner(cluster).heal("flap", nodes=["n2"])
    for n in cluster.nodes:
        want = [heal_command("partition")] + ([heal_command("flap")] if n == "n2" else [])
        assert cluster.remote.execs(n) == want


def test_heal_all_flushes_every_chain_and_a_later_apply_jumps_again():
    cluster, sim = sim_cluster(3)
    p = Partitioner(cluster)
    p.apply(g.isolate(cluster.nodes, "n2"), slot="a")
    p.apply(g.isolate(cluster.nodes, "n3"), slot="b")
    p.heal_all()
    assert all(cluster.remote.execs(n)[-1] == HEAL_ALL_COMMAND for n in cluster.nodes)
    assert grudge_of(cluster, sim) == {n: set() for n in cluster.nodes}
    assert all(("-j", "KC-a") not in sim.chains[n]["INPUT"] for n in cluster.nodes)
    p.apply(g.isolate(cluster.nodes, "n1"), slot="a")      # INPUT was flushed: the jump comes back
    assert grudge_of(cluster, sim) == {"n1": {"n2", "n3"}, "n2": {"n1"}, "n3": {"n1"}}


def test_failure_names_node_and_other_nodes_still_applied():
    remote = FakeRemote(lambda node, cmd: ExecResult(1, "", "no iptables") if node == "n2" else None)
    cluster = FakeCluster(3, remote)
    with pytest.raises(NodeErrors, match="n2") as info:
        Partitioner(cluster).apply(g.complete_grudge([["n1"], ["n2"], ["n3"]]))
    assert set(info.value.errors) == {"n2"}
    assert remote.execs("n1") and remote.execs("n3")


def test_heal_failure_names_the_unreachable_node():
    cluster = FakeCluster(3)
    cluster.remote.down.add("n3")
    with pytest.raises(NodeErrors, match="n3") as info:
        Partitioner(cluster).heal("partition")
    assert set(info.value.errors) == {"n3"} and set(info.value.results) == {"n1", "n2"}
