"""kraft/controller/partition_election.py: assignment, leader election, fencing changes, AlterPartition."""
from __future__ import annotations

import pytest

from kraft.controller.partition_election import (Rejected, alter_partition, assign_replicas, create_topic,
                                                 partition_changes, target_state)
from kraft.core import errors
from kraft.state_machines.metadata_image import EMPTY, MetadataImage, PartitionState


class Cluster:
    """Builds images record by record, as the controller would commit them."""

    def __init__(self, brokers=(1, 2, 3)):
        self.image = EMPTY
        self.offset = 0
        for b in brokers:
            self.register(b)
            self.unfence(b)

    def apply(self, payloads) -> MetadataImage:
        for p in payloads:
            self.image = self.image.apply(self.offset, p)
            self.offset += 1
        return self.image

    def register(self, b: int) -> None:
        self.apply([{"type": "RegisterBrokerRecord", "brokerId": b, "brokerEpoch": self.offset,
                     "host": "h", "port": b, "incarnationId": "i"}])

    def _fencing(self, b: int, fenced: bool) -> list[dict]:
        rec = {"type": "FenceBrokerRecord" if fenced else "UnfenceBrokerRecord", "id": b,
               "epoch": self.image.brokers[b].epoch}
        self.apply([rec])
        changes = partition_changes(self.image)
        self.apply(changes)
        return changes

    def fence(self, b: int) -> list[dict]:
        return self._fencing(b, True)

    def unfence(self, b: int) -> list[dict]:
        return self._fencing(b, False)

    def topic(self, name="t", partitions=1, rf=3, **configs) -> None:
        self.apply(create_topic(self.image, name, f"id-{name}", partitions, rf, configs))

    def p(self, index=0, name="t") -> PartitionState:
        return self.image.partitions[(name, index)]


def test_assign_round_robin():
    assert assign_replicas([3, 1, 2], 4, 2) == [[1, 2], [2, 3], [3, 1], [1, 2]]
    assert assign_replicas([1, 2, 3], 2, 3, start=1) == [[2, 3, 1], [3, 1, 2]]
    assert assign_replicas([5], 1, 1) == [[5]]


@pytest.mark.parametrize("brokers, parts, rf, code", [
    ([1, 2], 1, 3, errors.INVALID_REPLICATION_FACTOR),
    ([1, 2], 1, 0, errors.INVALID_REPLICATION_FACTOR),
    ([], 1, 1, errors.INVALID_REPLICATION_FACTOR),
    ([1, 2], 0, 1, errors.INVALID_PARTITIONS),
])
def test_assign_rejects(brokers, parts, rf, code):
    with pytest.raises(Rejected) as e:
        assign_replicas(brokers, parts, rf)
    assert e.value.code == code


def test_create_topic_records():
    c = Cluster()
    recs = create_topic(c.image, "t", "tid", 3, 2, {"min.insync.replicas": 2})
    assert recs[0] == {"type": "TopicRecord", "name": "t", "topicId": "tid",
                       "configs": {"min.insync.replicas": 2, "unclean.leader.election.enable": False}}
    assert [(r["replicas"], r["isr"], r["leader"]) for r in recs[1:]] == [
        ([1, 2], [1, 2], 1), ([2, 3], [2, 3], 2), ([3, 1], [3, 1], 3)]
    c.apply(recs)
    assert c.image.topics["t"].partitions == 3
    # the next topic starts where this one ended, so leadership spreads
    assert [r["leader"] for r in create_topic(c.image, "u", "uid", 3, 1, {})[1:]] == [1, 2, 3]


def test_create_topic_rejects():
    c = Cluster()
    c.topic()
    for args, code in [(("t", "x", 1, 1, {}), errors.TOPIC_ALREADY_EXISTS),
                       (("u", "x", 1, 1, {"bogus": 1}), errors.INVALID_CONFIG),
                       (("u", "x", 1, 1, {"min.insync.replicas": 0}), errors.INVALID_CONFIG),
                       (("", "x", 1, 1, {}), errors.INVALID_REQUEST),
                       (("u", "x", 0, 1, {}), errors.INVALID_PARTITIONS)]:
        with pytest.raises(Rejected) as e:
            create_topic(c.image, *args)
        assert e.value.code == code, args
    c.fence(3)                                   # only unfenced brokers count
    with pytest.raises(Rejected) as e:
        create_topic(c.image, "u", "x", 1, 3, {})
    assert e.value.code == errors.INVALID_REPLICATION_FACTOR
    assert all(3 not in r["replicas"] for r in create_topic(c.image, "u", "x", 4, 2, {})[1:])


def test_fencing_a_follower_shrinks_the_isr_only():
    c = Cluster()
    c.topic()
    changes = c.fence(2)
    assert changes == [{"type": "PartitionChangeRecord", "topic": "t", "partitionId": 0, "isr": [1, 3],
                        "leader": 1, "leaderEpoch": 0, "partitionEpoch": 1}]
    assert c.unfence(2) == []                    # the leader's AlterPartition brings it back, not us
    assert c.p().isr == (1, 3)


def test_fencing_the_leader_elects_the_first_isr_replica():
    c = Cluster()
    c.topic()                                    # replicas [1, 2, 3]
    c.fence(1)
    assert (c.p().leader, c.p().isr, c.p().leader_epoch, c.p().partition_epoch) == (2, (2, 3), 1, 1)
    c.fence(2)
    assert (c.p().leader, c.p().isr, c.p().leader_epoch, c.p().partition_epoch) == (3, (3,), 2, 2)


def test_clean_election_prefers_replica_order_not_isr_order():
    c = Cluster()
    c.topic()
    img = c.apply([{"type": "PartitionChangeRecord", "topic": "t", "partitionId": 0, "isr": [1, 3, 2],
                    "leader": 1, "leaderEpoch": 0, "partitionEpoch": 1}])
    assert img.partitions[("t", 0)].isr == (1, 3, 2)
    c.fence(1)
    assert c.p().leader == 2 and c.p().isr == (3, 2)


def test_last_isr_member_fenced_goes_offline_then_comes_back_clean():
    c = Cluster()
    c.topic()
    c.fence(2)
    c.fence(3)
    assert c.p().isr == (1,) and c.p().leader == 1
    c.fence(1)                                   # unclean off: offline, ISR keeps the last member
    assert (c.p().leader, c.p().isr, c.p().leader_epoch) == (-1, (1,), 1)
    assert c.unfence(2) == []                    # 2 is not in the ISR: stays offline
    assert c.p().leader == -1
    c.unfence(1)                                 # the last ISR member returns: clean election
    assert (c.p().leader, c.p().isr, c.p().leader_epoch, c.p().partition_epoch) == (1, (1,), 2, 4)


def test_unclean_election_when_allowed():
    c = Cluster()
    c.topic(**{"unclean.leader.election.enable": True})
    c.fence(2)
    c.fence(3)
    c.fence(1)                                   # no replica unfenced: offline even if unclean
    assert (c.p().leader, c.p().isr) == (-1, (1,))
    c.unfence(3)                                 # unclean: the first unfenced replica, ISR = [it]
    assert (c.p().leader, c.p().isr, c.p().leader_epoch) == (3, (3,), 2)
    c.unfence(1)
    assert c.p().leader == 3                     # a live leader is kept


def test_unclean_when_leader_fenced_with_no_live_isr():
    c = Cluster()
    c.topic(**{"unclean.leader.election.enable": True})
    c.fence(2)
    c.fence(3)
    c.unfence(2)                                 # 2 is live but out of the ISR
    c.fence(1)
    assert (c.p().leader, c.p().isr) == (2, (2,))


def test_reregistration_fences_and_moves_leadership():
    c = Cluster()
    c.topic()
    c.register(1)                                # a restart: new epoch, fenced
    changes = partition_changes(c.image)
    assert changes and changes[0]["leader"] == 2 and changes[0]["isr"] == [2, 3]


def test_target_state_unchanged_is_identity():
    c = Cluster()
    c.topic(partitions=2)
    for key, st in c.image.partitions.items():
        assert target_state(c.image, st) is st
    assert partition_changes(c.image) == []


def test_changes_over_several_partitions_are_ordered():
    c = Cluster()
    c.topic("b", partitions=2, rf=2)             # [1,2], [2,3]
    c.topic("a", partitions=1, rf=2)             # [3,1]
    c.apply([{"type": "FenceBrokerRecord", "id": 3, "epoch": c.image.brokers[3].epoch}])
    ch = partition_changes(c.image)
    assert [(x["topic"], x["partitionId"], x["leader"], x["isr"]) for x in ch] == [
        ("a", 0, 1, [1]), ("b", 1, 2, [2])]


# -- AlterPartition ------------------------------------------------------------------
def alter(c: Cluster, broker=1, le=0, pe=0, isr=(1, 2), topic="t", index=0):
    return alter_partition(c.image, broker, topic, index, le, pe, list(isr))


def test_alter_partition_shrink_and_expand():
    c = Cluster()
    c.topic()
    st = alter(c)
    assert (st.isr, st.leader, st.leader_epoch, st.partition_epoch) == ((1, 2), 1, 0, 1)
    c.apply([st.to_change()])
    st = alter(c, pe=1, isr=(1, 2, 3))
    assert st.isr == (1, 2, 3) and st.partition_epoch == 2
    c.apply([st.to_change()])
    same = alter(c, pe=2, isr=(1, 2, 3))
    assert same is c.p()                         # nothing to write


@pytest.mark.parametrize("kwargs, code", [
    ({"topic": "nope"}, errors.UNKNOWN_TOPIC_OR_PARTITION),
    ({"index": 4}, errors.UNKNOWN_TOPIC_OR_PARTITION),
    ({"broker": 2}, errors.INVALID_REQUEST),                   # not the leader
    ({"pe": 0, "isr": (1, 3)}, errors.NONE),
    ({"isr": (2, 3)}, errors.INVALID_REQUEST),                 # leaves out the leader
    ({"isr": (1, 1)}, errors.INVALID_REQUEST),
    ({"isr": (1, 4)}, errors.INELIGIBLE_REPLICA),              # not a replica
    ({"le": 1}, errors.NOT_CONTROLLER),
    ({"pe": 5}, errors.NOT_CONTROLLER),
])
def test_alter_partition_validation(kwargs, code):
    c = Cluster()
    c.topic()
    if code == errors.NONE:
        assert alter(c, **kwargs).isr == (1, 3)
        return
    with pytest.raises(Rejected) as e:
        alter(c, **kwargs)
    assert e.value.code == code


def test_alter_partition_stale_epochs_and_fenced_replicas():
    c = Cluster(brokers=(1, 2, 3, 4))
    c.topic()                                    # replicas [1, 2, 3]
    c.apply([alter(c).to_change()])              # ISR [1, 2], partition epoch 1
    with pytest.raises(Rejected) as e:
        alter(c, pe=0, isr=(1,))
    assert e.value.code == errors.INVALID_UPDATE_VERSION
    c.fence(3)
    with pytest.raises(Rejected) as e:
        alter(c, pe=1, isr=(1, 2, 3))
    assert e.value.code == errors.INELIGIBLE_REPLICA
    c.fence(1)                                   # leader 2, leader epoch 1
    with pytest.raises(Rejected) as e:
        alter(c, broker=1, le=0, pe=2, isr=(1, 2))
    assert e.value.code == errors.FENCED_LEADER_EPOCH
    assert alter(c, broker=2, le=1, pe=c.p().partition_epoch, isr=(2,)).isr == (2,)
