"""The ``crash`` fault: SIGKILL a majority (leader included) or every node, restart on stop."""
import random

import pytest

from nemesis.controller import NemesisController
from tests.nemesis_fakes import FakeCluster, FakeDB
from nemesis.schedule import FaultSchedule, Fault, kinds_for
from nemesis.targets import choose_targets, majority_size

NODES = ["n1", "n2", "n3", "n4", "n5"]


def make(n=5, leader="n3", seed=1):
    cluster = FakeCluster(n)
    db = FakeDB(cluster.nodes)
    return cluster, db, NemesisController(cluster, db, lambda: leader, random.Random(seed))


def test_majority_size():
    assert [majority_size(n) for n in (1, 2, 3, 4, 5, 7)] == [1, 2, 2, 3, 3, 4]


def test_majority_holds_the_leader_and_is_sized():
    seen = set()
    for s in range(40):
        c = choose_targets("majority", NODES, random.Random(s), "n4")
        assert len(c.targets) == 3 and "n4" in c.targets and not c.leader_unknown
        assert c.targets == [n for n in NODES if n in c.targets]
        seen.add(tuple(c.targets))
    assert len(seen) > 1


def test_majority_without_a_known_leader():
    c = choose_targets("majority", NODES, random.Random(3), None)
    assert len(c.targets) == 3 and c.leader_unknown


def test_all_takes_every_node_without_drawing():
    rng = random.Random(9)
    state = rng.getstate()
    assert choose_targets("all", NODES, rng, "n1").targets == NODES
    assert rng.getstate() == state


def test_schedule_offers_crash_kinds_and_keeps_kill_kinds():
    assert kinds_for("crash", 5) == ["majority", "all"]
    assert kinds_for("kill", 5) == ["one", "minority", "leader"]
    kinds = {f.kind for f in (next(s) for s in [FaultSchedule(["crash"], random.Random(2))] for _ in range(50))}
    assert kinds == {"majority", "all"}


def test_crash_majority_kills_leader_and_two_more_then_restarts():
    cluster, db, c = make(leader="n2")
    value = c.start(Fault("crash", "majority"))
    assert value["kind"] == "majority" and len(value["targets"]) == 3 and "n2" in value["targets"]
    assert sorted(n for m, n in db.calls if m == "kill") == value["targets"]
    assert db.running == set(cluster.nodes) - set(value["targets"])
    assert c.active == {"crash": value["targets"]}
    assert c.stop(Fault("crash", "majority")) == {"kind": "majority", "targets": value["targets"]}
    assert db.running == set(cluster.nodes)
    assert c.active == {}


def test_crash_all_kills_every_node():
    cluster, db, c = make()
    value = c.start(Fault("crash", "all"))
    assert value["targets"] == list(cluster.nodes) and db.running == set()
    c.stop(Fault("crash", "all"))
    assert db.running == set(cluster.nodes)


def test_crash_rejects_process_kinds_and_kill_rejects_crash_kinds():
    _, _, c = make()
    with pytest.raises(ValueError, match="unknown crash kind 'one'"):
        c.start(Fault("crash", "one"))
    with pytest.raises(ValueError, match="unknown kill kind 'all'"):
        c.start(Fault("kill", "all"))
