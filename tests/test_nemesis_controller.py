"""NemesisController: process faults, the slot lifecycle, stop and heal_all."""
import pytest

from nemesis.faults import Fault
from clusters.parallel import NodeErrors
from nemesis.partition import HEAL_ALL_COMMAND, heal_command
from tests.nemesis_fakes import grudge_of, make_controller


def make(n=5, leader="n3", seed=1):
    cluster, _sim, db, c = make_controller(n, leader, seed)
    return cluster, db, c


def test_kill_leader_then_restart():
    cluster, db, c = make(leader="n3")
    value = c.start(Fault("kill", "leader"))
    assert value == {"kind": "leader", "targets": ["n3"]}
    assert db.calls == [("kill", "n3")]
    assert "n3" not in db.running
    assert c.active == {"kill": ["n3"]}
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


def test_explicit_nodes_targets_for_process_faults():
    cluster, db, c = make()
    value = c.start(Fault("pause", "nodes", targets=("n4", "n2")))
    assert value == {"kind": "nodes", "targets": ["n2", "n4"]}      # in cluster order
    assert db.paused == {"n2", "n4"}
    c.stop(Fault("pause", "nodes"))
    assert db.paused == set()
    value = c.start(Fault("kill", "nodes", slot="lag", targets=("n5",)))
    assert value == {"kind": "nodes", "slot": "lag", "targets": ["n5"]}
    assert c.active == {"lag": ["n5"]} and db.running == set(cluster.nodes) - {"n5"}


@pytest.mark.parametrize("targets", [("n9",), ("n1", "n9"), ()])
def test_explicit_targets_must_be_nodes(targets):
    cluster, db, c = make()
    with pytest.raises(ValueError, match="explicit targets"):
        c.start(Fault("kill", "nodes", targets=targets))
    assert c.active == {} and db.calls == []


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


def test_same_seed_same_faults():
    values = []
    for _ in range(2):
        cluster, db, c = make(seed=9)
        v = []
        for f in [Fault("partition", "random-halves"), Fault("kill", "minority"), Fault("partition", "bridge"),
                  Fault("partition", "diamond"), Fault("packet", "mixed")]:
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
    with pytest.raises(ValueError, match="unknown nemesis 'flood'"):
        c.start(Fault("flood", "one"))
    assert c.active == {"kill": c.active["kill"]} and len(c.active["kill"]) == 1


def test_same_family_in_another_slot_may_overlap():
    cluster, db, c = make()
    a = c.start(Fault("kill", "nodes", targets=("n1",)))
    b = c.start(Fault("kill", "nodes", slot="k2", targets=("n2",)))
    assert (a["targets"], b["targets"]) == (["n1"], ["n2"])
    assert c.active == {"kill": ["n1"], "k2": ["n2"]}
    c.stop(Fault("kill", "nodes", slot="k2"))
    assert db.running == set(cluster.nodes) - {"n1"} and c.active == {"kill": ["n1"]}
    assert [f.key for f in c.active_faults()] == ["kill"]


def test_stop_inactive_is_noop_and_stop_is_idempotent():
    cluster, db, c = make()
    assert c.stop(Fault("kill", "one")) == {"kind": "one", "targets": []}
    assert db.calls == [] and cluster.remote.calls == []
    value = c.start(Fault("kill", "one"))
    c.stop(Fault("kill", "one"))
    calls = list(db.calls)
    assert c.stop(Fault("kill", "one")) == {"kind": "one", "targets": []}
    assert db.calls == calls and db.running == set(cluster.nodes) and value["targets"]


def test_a_start_that_applied_nothing_frees_its_slot():
    cluster, db, c = make(n=2)
    with pytest.raises(ValueError, match="at least 3"):
        c.start(Fault("partition", "diamond"))
    assert c.active == {}
    assert c.start(Fault("partition", "isolate-one"))["targets"]


def test_failed_start_keeps_the_fault_for_stop():
    cluster, db, c = make(leader="n1")
    db.down.add("n1")
    with pytest.raises(NodeErrors, match="n1"):
        c.start(Fault("kill", "leader"))
    assert c.active == {"kill": ["n1"]}
    db.down.clear()
    assert c.stop(Fault("kill", "leader"))["targets"] == ["n1"]
    assert c.active == {}


def test_failed_stop_keeps_fault_for_heal_all():
    cluster, db, c = make(leader="n1")
    c.start(Fault("kill", "leader"))
    db.down.add("n1")
    with pytest.raises(NodeErrors, match="n1"):
        c.stop(Fault("kill", "leader"))
    assert c.active == {"kill": ["n1"]}
    result = c.heal_all()
    assert "n1" in result["errors"] and c.active == {"kill": ["n1"]}
    db.down.clear()
    assert c.heal_all() == {"restarted": ["n1"], "errors": {}}
    assert c.active == {}


def test_partition_stop_flushes_only_its_chain():
    cluster, sim, db, c = make_controller(leader="n2")
    c.start(Fault("partition", "isolate-leader"))
    c.stop(Fault("partition", "isolate-leader"))
    assert all(cluster.remote.execs(n)[-1] == heal_command("partition") for n in cluster.nodes)
    assert grudge_of(cluster, sim) == {n: set() for n in cluster.nodes}


def test_heal_all_is_idempotent_and_heals_everything():
    cluster, sim, db, c = make_controller(leader="n4")
    c.start(Fault("partition", "isolate-one"))
    c.start(Fault("partition", "diamond", slot="p2"))
    c.start(Fault("kill", "leader"))
    c.start(Fault("pause", "minority"))
    first = c.heal_all()
    assert first["errors"] == {} and first["restarted"] == ["n4"]
    assert db.running == set(cluster.nodes) and db.paused == set()
    assert c.active == {}
    assert grudge_of(cluster, sim) == {n: set() for n in cluster.nodes}
    for n in cluster.nodes:
        assert HEAL_ALL_COMMAND in cluster.remote.execs(n)
    before = (set(db.running), set(db.paused))
    second = c.heal_all()
    assert second == {"restarted": [], "errors": {}}
    assert (set(db.running), set(db.paused)) == before


def test_heal_all_tolerates_an_unreachable_node_and_heals_the_others():
    cluster, sim, db, c = make_controller(leader="n1")
    c.start(Fault("partition", "isolate-leader"))
    c.start(Fault("pause", "nodes", targets=("n2", "n3")))
    cluster.remote.down.add("n3")
    db.down.add("n3")
    result = c.heal_all()
    assert set(result["errors"]) == {"n3"} and result["errors"]["n3"].startswith("flush: ")
    assert db.paused == {"n3"}
    assert {n: d for n, d in grudge_of(cluster, sim).items() if n != "n3"} == {
        "n1": set(), "n2": set(), "n4": set(), "n5": set()}
    assert set(c.active) == {"partition", "pause"}      # kept, for the next try
