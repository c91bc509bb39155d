"""NemesisController partitions: every kind's grudge as installed, one-way and diamond cuts,
explicit groups, and partitions in different slots at once."""
import pytest

from faults.partition import KINDS as PARTITION_KINDS
from nemesis.faults import Fault, kinds_for
from nemesis.grudge import sees
from tests.nemesis_fakes import FakeDB, grudge_of, make_controller, sim_cluster

NONE = {f"n{i}": set() for i in range(1, 6)}


def value_grudge(value):
    return {n: set(v) for n, v in value["grudge"].items()}


def test_isolate_leader_rules():
    cluster, sim, db, c = make_controller(leader="n2")
    value = c.start(Fault("partition", "isolate-leader"))
    assert value["targets"] == ["n2"] and "leader_unknown" not in value
    assert value["grudge"]["n2"] == ["n1", "n3", "n4", "n5"]
    assert value["grudge"]["n1"] == ["n2"]
    assert sim.drops("n2") == {"10.77.0.11", "10.77.0.13", "10.77.0.14", "10.77.0.15"}
    for n in ["n1", "n3", "n4", "n5"]:
        assert sim.rules(n) == [("KC-partition", "10.77.0.12", "")]
    c.stop(Fault("partition", "isolate-leader"))
    assert grudge_of(cluster, sim) == NONE


@pytest.mark.parametrize("kind", kinds_for("partition", 5))
def test_every_kind_installs_its_grudge(kind):
    cluster, sim, db, c = make_controller(leader="n3")
    value = c.start(Fault("partition", kind))
    grudge = value_grudge(value)
    assert set(grudge) == set(cluster.nodes)
    assert grudge_of(cluster, sim) == grudge
    assert grudge_of(cluster, sim, "KC-partition") == grudge
    if kind == "random-halves":
        assert set(value["targets"]) == sees(grudge, value["targets"][0]) and len(value["targets"]) == 2
    if kind == "bridge":
        assert len(value["targets"]) == 1 and grudge[value["targets"][0]] == set()
    if kind == "majorities-ring":
        assert value["targets"] == cluster.nodes
    if kind in ("isolate-leader", "one-way-leader", "leader-diamond"):
        assert value["targets"][0] == "n3"
    c.stop(Fault("partition", kind))
    assert grudge_of(cluster, sim) == NONE


def test_kinds_cover_the_declared_ones():
    assert set(kinds_for("partition", 5)) == set(PARTITION_KINDS)
    assert set(kinds_for("partition", 3)) == set(PARTITION_KINDS) - {"majorities-ring"}
    assert set(kinds_for("partition", 2)) == {"random-halves", "isolate-one", "isolate-leader",
                                              "one-way-leader", "one-way-one"}
    assert kinds_for("partition", 1) == []


def test_one_way_leader_is_asymmetric():
    cluster, sim, db, c = make_controller(leader="n4")
    value = c.start(Fault("partition", "one-way-leader"))
    assert value["targets"] == ["n4"]
    # what n4 sends is lost; n4 drops nothing, so it still hears them
    assert grudge_of(cluster, sim) == {"n1": {"n4"}, "n2": {"n4"}, "n3": {"n4"}, "n4": set(), "n5": {"n4"}}
    assert value_grudge(value) == grudge_of(cluster, sim)
    # ... dropped on n4's own way out (OUTPUT), not on the receivers
    assert {dst for _c, dst, _m in sim.out_rules("n4")} == {cluster.ip(n) for n in ("n1", "n2", "n3", "n5")}
    assert all(sim.drops(n) == set() for n in cluster.nodes)


def test_one_way_one_picks_a_node_and_cuts_only_its_sending():
    seen = set()
    for seed in range(12):
        cluster, sim, db, c = make_controller(seed=seed)
        value = c.start(Fault("partition", "one-way-one"))
        (target,) = value["targets"]
        seen.add(target)
        got = grudge_of(cluster, sim)
        assert got[target] == set()
        assert all(got[n] == {target} for n in cluster.nodes if n != target)
    assert len(seen) > 1


def test_one_way_leader_without_a_leader_says_so():
    cluster, sim, db, c = make_controller(leader=None)
    value = c.start(Fault("partition", "one-way-leader"))
    assert value["leader_unknown"] is True and len(value["targets"]) == 1


def test_diamond_cuts_only_the_pair():
    pairs = set()
    for seed in range(12):
        cluster, sim, db, c = make_controller(seed=seed)
        value = c.start(Fault("partition", "diamond"))
        a, b = value["targets"]
        assert a != b and value["targets"] == sorted(value["targets"], key=cluster.nodes.index)
        want = {**NONE, a: {b}, b: {a}}
        assert grudge_of(cluster, sim) == want == value_grudge(value)
        pairs.add((a, b))
    assert len(pairs) > 1


def test_leader_diamond_cuts_the_leader_from_one_other():
    cluster, sim, db, c = make_controller(leader="n5", seed=4)
    value = c.start(Fault("partition", "leader-diamond"))
    leader, other = value["targets"]
    assert leader == "n5" and other != "n5"
    assert grudge_of(cluster, sim) == {**NONE, "n5": {other}, other: {"n5"}}


def test_explicit_nodes_cut_that_group_off():
    cluster, sim, db, c = make_controller()
    value = c.start(Fault("partition", "nodes", targets=("n5", "n1")))
    assert value["targets"] == ["n1", "n5"] and value["kind"] == "nodes"
    assert grudge_of(cluster, sim) == {"n1": {"n2", "n3", "n4"}, "n5": {"n2", "n3", "n4"},
                                       "n2": {"n1", "n5"}, "n3": {"n1", "n5"}, "n4": {"n1", "n5"}}


@pytest.mark.parametrize("targets", [("n9",), (), None])
def test_explicit_partition_targets_must_be_nodes(targets):
    cluster, sim, db, c = make_controller()
    with pytest.raises(ValueError, match="explicit targets"):
        c.start(Fault("partition", "nodes", targets=targets))
    assert c.active == {} and cluster.remote.calls == []


def test_partitions_in_two_slots_overlap_and_heal_alone():
    cluster, sim, db, c = make_controller(leader="n1")
    a = c.start(Fault("partition", "isolate-leader"))
    b = c.start(Fault("partition", "nodes", slot="lag", targets=("n3",)))
    assert b["slot"] == "lag" and c.active == {"partition": ["n1"], "lag": ["n3"]}
    assert grudge_of(cluster, sim, "KC-partition") == value_grudge(a)
    assert grudge_of(cluster, sim, "KC-lag") == value_grudge(b)
    both = grudge_of(cluster, sim)
    assert both["n2"] == {"n1", "n3"} and both["n1"] == {"n2", "n3", "n4", "n5"}
    c.stop(Fault("partition", "isolate-leader"))
    assert grudge_of(cluster, sim) == value_grudge(b)
    assert c.active == {"lag": ["n3"]}
    c.stop(Fault("partition", "nodes", slot="lag"))
    assert grudge_of(cluster, sim) == NONE and c.active == {}


def test_same_slot_twice_is_refused_even_for_another_kind():
    cluster, sim, db, c = make_controller()
    c.start(Fault("partition", "isolate-one"))
    with pytest.raises(ValueError, match="'partition' is already active"):
        c.start(Fault("partition", "diamond"))
    assert c.start(Fault("partition", "diamond", slot="d"))["slot"] == "d"


def test_explicit_grudge_is_applied_as_given():
    cluster, sim, db, c = make_controller()
    value = c.start(Fault("partition", "nodes", params={"grudge": {"n1": ["n3"], "n4": ["n3", "n5"]}}))
    want = {**NONE, "n1": {"n3"}, "n4": {"n3", "n5"}}
    assert grudge_of(cluster, sim) == want == value_grudge(value)
    assert value["targets"] == ["n1", "n3", "n4", "n5"]          # every node the grudge touches
    c.stop(Fault("partition", "nodes"))
    assert grudge_of(cluster, sim) == NONE


def test_a_recorded_partition_replays_from_its_grudge():
    cluster, sim, db, c = make_controller(leader="n2", seed=6)
    first = c.start(Fault("partition", "bridge"))
    c.stop(Fault("partition", "bridge"))
    replay = {"kind": "nodes", "grudge": {n: d for n, d in first["grudge"].items() if d}}   # as shrink does
    again = c.start(Fault.from_value("partition", replay))
    assert again["grudge"] == first["grudge"]
    assert grudge_of(cluster, sim) == value_grudge(first)


@pytest.mark.parametrize("grudge", [{"n1": ["n9"]}, {"n9": ["n1"]}, {"n1": "n2"}, {}, {"n1": ["n1"]}, ["n1"]])
def test_bad_explicit_grudges_are_refused(grudge):
    cluster, sim, db, c = make_controller()
    with pytest.raises(ValueError, match="grudge"):
        c.start(Fault("partition", "nodes", params={"grudge": grudge}))
    assert c.active == {} and cluster.remote.calls == []


@pytest.mark.parametrize("seed", range(4))
def test_faults_touch_only_the_given_nodes(seed):
    # Kafka: 5 controllers and 3 brokers; faults aimed at the controllers leave the brokers be
    controllers = [f"n{i}" for i in range(1, 6)]
    cluster, sim, db, c = make_controller(n=8, leader="n2", seed=seed, nodes=controllers)
    value = c.start(Fault("partition", "random-halves"))
    assert set(value["grudge"]) == set(controllers)
    for broker in ("n6", "n7", "n8"):
        assert sim.rules(broker) == [] and sim.drops(broker) == set()
    c.stop(Fault("partition", "random-halves"))
    value = c.start(Fault("kill", "minority"))
    assert set(value["targets"]) <= set(controllers) and len(value["targets"]) == 2


def test_nodes_outside_the_cluster_are_refused():
    import random

    from nemesis.controller import NemesisController
    cluster, _sim = sim_cluster(3, True)
    with pytest.raises(ValueError, match="must be nodes of the cluster"):
        NemesisController(cluster, FakeDB(cluster.nodes), lambda: None, random.Random(1), ["n1", "n9"])
