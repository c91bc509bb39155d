import random

import pytest

from nemesis.controller import NemesisController
from tests.nemesis_fakes import FakeCluster, FakeDB
from nemesis.grudge import sees
from nemesis.parallel import NodeErrors
from nemesis.partition import HEAL_COMMAND
from nemesis.schedule import Fault


def make(n=5, leader="n3", seed=1):
    cluster = FakeCluster(n)
    db = FakeDB(cluster.nodes)
    leader_fn = leader if callable(leader) else (lambda: leader)
    return cluster, db, NemesisController(cluster, db, leader_fn, random.Random(seed))


def iptables_rules(cluster):
    """{node: set of dropped source IPs} from the recorded execs."""
    rules = {}
    for call in cluster.remote.calls:
        _, node, cmd = call[:3]
        if cmd == HEAL_COMMAND:
            rules[node] = set()
            continue
        for part in cmd.split(" && "):
            assert part.startswith("iptables -A INPUT -s ") and part.endswith(" -j DROP -w")
            rules.setdefault(node, set()).add(part.split()[4])
    return rules


def test_kill_leader_then_restart():
    cluster, db, c = make(leader="n3")
    value = c.start(Fault("kill", "leader"))
    assert value == {"kind": "leader", "targets": ["n3"]}
    assert db.calls == [("kill", "n3")]
    assert "n3" not in db.running
    assert c.stop(Fault("kill", "leader")) == {"kind": "leader", "targets": ["n3"]}
    assert db.calls[-1] == ("start", "n3")
    assert db.running == set(cluster.nodes)
    assert c.active == {}


def test_kill_minority_kills_two_of_five():
    cluster, db, c = make()
    value = c.start(Fault("kill", "minority"))
    assert len(value["targets"]) == 2
    assert db.running == set(cluster.nodes) - set(value["targets"])
    c.stop(Fault("kill", "minority"))
    assert sorted(n for m, n in db.calls if m == "start") == sorted(value["targets"])


def test_leader_unknown_is_reported():
    cluster, db, c = make(leader=None)
    value = c.start(Fault("pause", "leader"))
    assert value["leader_unknown"] is True and len(value["targets"]) == 1
    assert db.paused == set(value["targets"])


def test_find_leader_exception_counts_as_unknown():
    def boom():
        raise ConnectionError("no node answered")
    cluster, db, c = make(leader=boom)
    assert c.start(Fault("kill", "leader"))["leader_unknown"] is True


def test_pause_and_resume():
    cluster, db, c = make()
    value = c.start(Fault("pause", "one"))
    assert db.paused == set(value["targets"]) and len(value["targets"]) == 1
    c.stop(Fault("pause", "one"))
    assert db.paused == set()
    assert db.calls[-1] == ("resume", value["targets"][0])


def test_kill_of_dead_node_reports_no_process():
    cluster, db, c = make(leader="n2")
    db.running.discard("n2")
    assert c.start(Fault("kill", "leader"))["no_process"] == ["n2"]


def test_isolate_leader_partition_commands():
    cluster, db, c = make(leader="n2")
    value = c.start(Fault("partition", "isolate-leader"))
    assert value["targets"] == ["n2"]
    assert value["grudge"]["n2"] == ["n1", "n3", "n4", "n5"]
    assert value["grudge"]["n1"] == ["n2"]
    rules = iptables_rules(cluster)
    assert rules["n2"] == {"10.77.0.11", "10.77.0.13", "10.77.0.14", "10.77.0.15"}
    for n in ["n1", "n3", "n4", "n5"]:
        assert rules[n] == {"10.77.0.12"}
    c.stop(Fault("partition", "isolate-leader"))
    assert all(cluster.remote.execs(n)[-1] == HEAL_COMMAND for n in cluster.nodes)


@pytest.mark.parametrize("kind", ["random-halves", "isolate-one", "majorities-ring", "bridge"])
def test_partition_kinds_apply_their_grudge(kind):
    cluster, db, c = make()
    value = c.start(Fault("partition", kind))
    grudge = {n: set(v) for n, v in value["grudge"].items()}
    rules = iptables_rules(cluster)
    for n in cluster.nodes:
        assert rules.get(n, set()) == {cluster.ip(x) for x in grudge[n]}
    if kind == "random-halves":
        assert set(value["targets"]) == sees(grudge, value["targets"][0]) and len(value["targets"]) == 2
    if kind == "bridge":
        assert len(value["targets"]) == 1 and grudge[value["targets"][0]] == set()
    if kind == "majorities-ring":
        assert value["targets"] == cluster.nodes


def test_same_seed_same_faults():
    values = []
    for _ in range(2):
        cluster, db, c = make(seed=9)
        v = []
        for f in [Fault("partition", "random-halves"), Fault("kill", "minority"), Fault("partition", "bridge")]:
            v.append(c.start(f))
            c.stop(f)
        values.append(v)
    assert values[0] == values[1]


def test_double_start_rejected_and_unknown_kind():
    cluster, db, c = make()
    c.start(Fault("kill", "one"))
    with pytest.raises(ValueError, match="already active"):
        c.start(Fault("kill", "one"))
    with pytest.raises(ValueError, match="unknown pause kind 'half'"):
        c.start(Fault("pause", "half"))
    with pytest.raises(ValueError, match="unknown partition kind"):
        c.start(Fault("partition", "sideways"))


def test_stop_inactive_is_noop():
    cluster, db, c = make()
    assert c.stop(Fault("kill", "one")) == {"kind": "one", "targets": []}
    assert db.calls == [] and cluster.remote.calls == []


def test_failed_stop_keeps_fault_for_heal_all():
    cluster, db, c = make(leader="n1")
    c.start(Fault("kill", "leader"))
    db.down.add("n1")
    with pytest.raises(NodeErrors):
        c.stop(Fault("kill", "leader"))
    assert c.active == {"kill": ["n1"]}
    result = c.heal_all()
    assert "n1" in result["errors"] and c.active == {"kill": ["n1"]}
    db.down.clear()
    assert c.heal_all() == {"restarted": ["n1"], "errors": {}}
    assert c.active == {}


def test_heal_all_is_idempotent_and_heals_everything():
    cluster, db, c = make(leader="n4")
    c.start(Fault("partition", "isolate-one"))
    c.start(Fault("kill", "leader"))
    c.start(Fault("pause", "minority"))
    first = c.heal_all()
    assert first["errors"] == {} and first["restarted"] == ["n4"]
    assert db.running == set(cluster.nodes) and db.paused == set()
    assert c.active == {}
    for n in cluster.nodes:
        assert cluster.remote.execs(n)[-1] == HEAL_COMMAND
    before = (set(db.running), set(db.paused))
    second = c.heal_all()
    assert second == {"restarted": [], "errors": {}}
    assert (set(db.running), set(db.paused)) == before
