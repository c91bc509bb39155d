import pytest

from clusters.remote import ExecResult
from nemesis import grudge as g
from tests.nemesis_fakes import FakeCluster, FakeRemote
from nemesis.parallel import NodeErrors
from nemesis.partition import HEAL_COMMAND, Partitioner, drop_commands


def test_drop_commands_exact():
    cluster = FakeCluster(3)
    cmds = drop_commands(g.isolate(cluster.nodes, "n2"), cluster.ip)
    assert cmds == {
        "n1": ["iptables -A INPUT -s 10.77.0.12 -j DROP -w"],
        "n2": ["iptables -A INPUT -s 10.77.0.11 -j DROP -w", "iptables -A INPUT -s 10.77.0.13 -j DROP -w"],
        "n3": ["iptables -A INPUT -s 10.77.0.12 -j DROP -w"],
    }


def test_drop_commands_unknown_node():
    with pytest.raises(ValueError, match="unknown node"):
        drop_commands({"n1": {"n7"}}, lambda n: "1.2.3.4")


def test_apply_runs_one_exec_per_node_with_rules():
    cluster = FakeCluster(3)
    grudge = {"n1": {"n3"}, "n2": set(), "n3": {"n1"}}
    Partitioner(cluster).apply(grudge)
    remote = cluster.remote
    assert remote.execs("n1") == ["iptables -A INPUT -s 10.77.0.13 -j DROP -w"]
    assert remote.execs("n2") == []
    assert remote.execs("n3") == ["iptables -A INPUT -s 10.77.0.11 -j DROP -w"]


def test_apply_joins_several_rules():
    cluster = FakeCluster(3)
    Partitioner(cluster).apply(g.isolate(cluster.nodes, "n1"))
    assert cluster.remote.execs("n1") == [
        "iptables -A INPUT -s 10.77.0.12 -j DROP -w && iptables -A INPUT -s 10.77.0.13 -j DROP -w"]


def test_heal_flushes_every_node():
    cluster = FakeCluster(5)
    Partitioner(cluster).heal()
    for n in cluster.nodes:
        assert cluster.remote.execs(n) == [HEAL_COMMAND]
    assert HEAL_COMMAND == "iptables -F INPUT -w && iptables -F OUTPUT -w"


def test_failure_names_node_and_other_nodes_still_applied():
    remote = FakeRemote(lambda node, cmd: ExecResult(1, "", "no iptables") if node == "n2" else None)
    cluster = FakeCluster(3, remote)
    with pytest.raises(NodeErrors, match="n2") as info:
        Partitioner(cluster).apply(g.complete_grudge([["n1"], ["n2"], ["n3"]]))
    assert set(info.value.errors) == {"n2"}
    assert remote.execs("n1") and remote.execs("n3")
