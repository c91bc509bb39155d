"""Faults aimed at the data plane's roles (faults/kill.py ``LOCATED_KINDS``): which broker leads a
transactional id's ``__transaction_state`` partition, a group's ``__consumer_offsets`` partition
or a data partition (targets/kafka/locate.py, pure), and how the nemesis strikes it
(``NemesisController.located_targets``), with a fake DB that locates."""
import random

import pytest

from faults.registry import fault_spec
from nemesis.controller import NemesisController
from nemesis.faults import Fault, check_kind
from nemesis.schedule import name_kinds, validate_fault_names
from targets.kafka.locate import coordinator_partition, java_string_hash, pick
from tests.nemesis_fakes import FakeCluster, FakeDB

LEADERS = {"__transaction_state": {0: 2, 1: 3, 2: 3, 3: 4},
           "__consumer_offsets": {0: 4, 1: 4, 2: 2},
           "queue": {0: 2, 1: 3, 2: -1}}


def test_java_string_hash_and_kafkas_partition_for():
    assert java_string_hash("hello") == 99162322 and java_string_hash("") == 0
    assert java_string_hash("polygenelubricants") == -2 ** 31          # Utils.abs gives 0 for it
    assert coordinator_partition("polygenelubricants", 50) == 0
    assert coordinator_partition("hello", 50) == 99162322 % 50
    assert coordinator_partition("héllo", 7) == abs(java_string_hash("héllo")) % 7
    with pytest.raises(ValueError):
        coordinator_partition("x", 0)


def test_a_coordinator_is_the_leader_of_its_keys_partition_or_the_one_leading_most():
    rng = random.Random(1)
    key = next(k for k in (f"jt{i}" for i in range(100)) if coordinator_partition(k, 4) == 0)
    assert pick("txn-coordinator", LEADERS, {"key": key}, rng) == 2
    assert pick("txn-coordinator", LEADERS, {}, rng) == 3                  # leads 2 of 4
    assert pick("group-coordinator", LEADERS, {}, rng) == 4
    assert pick("txn-coordinator", {"queue": {0: 1}}, {}, rng) is None      # no transaction yet
    assert pick("group-coordinator", {"__consumer_offsets": {0: -1}}, {}, rng) is None


def test_a_partition_leader_is_drawn_among_data_topics_and_none_when_leaderless():
    draws = {pick("partition-leader", LEADERS, {}, random.Random(s)) for s in range(40)}
    assert draws == {2, 3, None}                                           # never an internal topic's
    assert pick("partition-leader", LEADERS, {"topic": "queue", "partition": 1}, random.Random(1)) == 3
    assert pick("partition-leader", {"__consumer_offsets": {0: 4}}, {}, random.Random(1)) is None
    with pytest.raises(ValueError, match="no located kind"):
        pick("leader", LEADERS, {}, random.Random(1))


class LocatingDB(FakeDB):
    """A FakeDB whose ``locate`` answers from ``where`` (``{kind: node}``), recording each ask."""

    def __init__(self, nodes, where):
        super().__init__(nodes)
        self.where, self.asked = where, []

    def locate(self, kind, params, rng):
        self.asked.append((kind, params))
        if isinstance(self.where.get(kind), Exception):
            raise self.where[kind]
        return self.where.get(kind)


def test_a_located_kill_strikes_the_node_the_db_names():
    cluster = FakeCluster(4)
    db = LocatingDB(cluster.nodes, {"txn-coordinator": "n3", "partition-leader": "n9",
                                    "group-coordinator": RuntimeError("no broker answered")})
    ctl = NemesisController(cluster, db, lambda: "n1", random.Random(2), nodes=["n2", "n3", "n4"])
    v = ctl.start(Fault("kill", "txn-coordinator", params={"key": "jt1"}))
    assert v["targets"] == ["n3"] and not v.get("leader_unknown") and "n3" not in db.running
    assert db.asked == [("txn-coordinator", {"key": "jt1"})]
    ctl.stop(Fault("kill", "txn-coordinator"))
    p = ctl.start(Fault("pause", "partition-leader"))        # a node the faults may not touch
    assert p["leader_unknown"] is True and p["targets"][0] in ("n2", "n3", "n4")
    ctl.stop(Fault("pause", "partition-leader"))
    g = ctl.start(Fault("kill", "group-coordinator"))        # the lookup failed: a random node
    assert g["leader_unknown"] is True and len(g["targets"]) == 1


def test_a_db_that_cannot_locate_is_a_clear_error_and_bare_names_never_draw_located_kinds():
    cluster = FakeCluster(3)
    ctl = NemesisController(cluster, FakeDB(cluster.nodes), lambda: "n1", random.Random(1))
    with pytest.raises(ValueError, match="cannot locate"):
        ctl.start(Fault("kill", "txn-coordinator"))
    check_kind("pause", "group-coordinator")
    with pytest.raises(ValueError, match="unknown kill kind"):
        check_kind("kill", "coordinator")
    assert "txn-coordinator" not in name_kinds("kill", 3)
    assert name_kinds("kill:txn-coordinator+one", 3) == ["txn-coordinator", "one"]
    assert validate_fault_names(["pause:partition-leader"]) == ["pause:partition-leader"]
    assert fault_spec("stop").located == fault_spec("kill").located
    assert fault_spec("kill").sim.kinds == ("one", "leader", "minority")   # the simulator's draws unchanged


def test_the_txn_schedules_aim_at_located_roles_and_a_candidate_names_them():
    from harness.catalogue.kafka_bugs import KAFKA_CANDIDATES
    from harness.config.schedules import SCHEDULES
    from harness.hunt.portfolio import hunt_schedules
    named = {s for c in KAFKA_CANDIDATES for s in c.schedules}
    assert {"kafka-txn-coordinator-pause", "kafka-txn-coordinator-kill"} <= named <= set(hunt_schedules("kafka", 3))
    for name in ("kafka-txn-coordinator-pause", "kafka-txn-coordinator-kill"):
        sched = SCHEDULES[name]
        assert sched.db == "kafka" and sched.workload == "txn" and sched.nemesis_targets == "clients"
        kinds = {k for n in sched.nemesis for k in name_kinds(n, 3)}
        assert kinds == {"txn-coordinator", "group-coordinator", "partition-leader"}, name
