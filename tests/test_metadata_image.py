"""kraft/state_machines/metadata_image.py: folding Metadata records into the image (docs/data-plane.md)."""
from __future__ import annotations

import json

import pytest

from kraft.core import records as rec
from kraft.state_machines.metadata_image import (EMPTY, BrokerInfo, MetadataImage, PartitionState, TopicInfo,
                                                 topic_configs)


def register(bid: int, epoch: int) -> dict:
    return {"type": "RegisterBrokerRecord", "brokerId": bid, "brokerEpoch": epoch,
            "host": "127.0.0.1", "port": 9000 + bid, "incarnationId": f"inc-{bid}"}


def fence(bid: int, epoch: int, fenced: bool = True) -> dict:
    return {"type": "FenceBrokerRecord" if fenced else "UnfenceBrokerRecord", "id": bid, "epoch": epoch}


def topic(name: str = "t", **configs) -> dict:
    return {"type": "TopicRecord", "name": name, "topicId": f"id-{name}", "configs": configs}


def partition(index: int = 0, replicas=(1, 2, 3), isr=None, leader=None, topic_name: str = "t") -> dict:
    isr = list(replicas) if isr is None else list(isr)
    return {"type": "PartitionRecord", "topic": topic_name, "partitionId": index, "replicas": list(replicas),
            "isr": isr, "leader": isr[0] if leader is None else leader, "leaderEpoch": 0, "partitionEpoch": 0}


def change(isr, leader, leader_epoch, partition_epoch, index: int = 0, topic_name: str = "t") -> dict:
    return {"type": "PartitionChangeRecord", "topic": topic_name, "partitionId": index, "isr": list(isr),
            "leader": leader, "leaderEpoch": leader_epoch, "partitionEpoch": partition_epoch}


def build(*payloads, start: int = 0) -> MetadataImage:
    img = EMPTY
    for i, p in enumerate(payloads):
        img = img.apply(start + i, p)
    return img


def cluster() -> MetadataImage:
    """Brokers 1..3 (epochs 0..2) unfenced, topic t with one partition led by 1."""
    return build(register(1, 0), register(2, 1), register(3, 2),
                 fence(1, 0, False), fence(2, 1, False), fence(3, 2, False),
                 topic("t", **{"min.insync.replicas": 2}), partition())


def test_empty_image():
    assert EMPTY.offset == -1
    assert dict(EMPTY.brokers) == {} and dict(EMPTY.topics) == {} and dict(EMPTY.partitions) == {}


def test_registration_is_fenced_and_epoch_is_offset():
    img = EMPTY.apply(5, register(4, 5))
    assert img.offset == 5
    assert img.brokers[4] == BrokerInfo(4, 5, "127.0.0.1", 9004, True)
    assert img.unfenced() == []
    img = img.apply(6, fence(4, 5, False))
    assert img.brokers[4].fenced is False and img.unfenced() == [4] and img.is_unfenced(4)
    img = img.apply(7, fence(4, 5, True))
    assert img.brokers[4].fenced is True and not img.is_unfenced(4)
    # re-registration: a new epoch, fenced again
    img = img.apply(8, fence(4, 5, False)).apply(9, register(4, 9))
    assert img.brokers[4] == BrokerInfo(4, 9, "127.0.0.1", 9004, True)


def test_apply_is_pure():
    img = EMPTY.apply(0, register(1, 0))
    img.apply(1, register(2, 1))
    assert list(img.brokers) == [1] and img.offset == 0
    with pytest.raises(TypeError):
        img.brokers[2] = None     # read-only mapping


@pytest.mark.parametrize("payload, match", [
    ({"type": "RegisterBrokerRecord", "brokerId": 1, "brokerEpoch": 3, "host": "h", "port": 1,
      "incarnationId": "x"}, "not the record's offset"),
    ({"type": "RegisterBrokerRecord", "brokerId": "1", "brokerEpoch": 0, "host": "h", "port": 1,
      "incarnationId": "x"}, "brokerId"),
    ({"type": "RegisterBrokerRecord", "brokerId": 1, "brokerEpoch": 0, "host": "", "port": 1,
      "incarnationId": "x"}, "host"),
    ({"type": "Nope"}, "unknown Metadata record type"),
    ({"brokerId": 1}, "unknown Metadata record type"),
    (fence(9, 0), "unknown broker 9"),
    (partition(), "unknown topic"),
])
def test_bad_records_on_empty(payload, match):
    with pytest.raises(ValueError, match=match):
        EMPTY.apply(0, payload)


def test_non_object_and_offset_order():
    with pytest.raises(ValueError, match="must be an object"):
        EMPTY.apply(0, [1, 2])
    img = EMPTY.apply(3, register(1, 3))
    with pytest.raises(ValueError, match="not after"):
        img.apply(3, register(2, 3))


def test_stale_fence_epoch():
    img = build(register(1, 0), register(1, 1))
    with pytest.raises(ValueError, match="has epoch 1, record names 0"):
        img.apply(2, fence(1, 0, False))


def test_topic_and_partitions():
    img = cluster()
    assert img.topics["t"] == TopicInfo("t", "id-t", 1, {"min.insync.replicas": 2,
                                                          "unclean.leader.election.enable": False})
    assert img.partitions[("t", 0)] == PartitionState("t", 0, (1, 2, 3), (1, 2, 3), 1, 0, 0)
    assert img.topic_partitions("t") == [img.partitions[("t", 0)]]
    assert img.topic_partitions("nope") == []
    with pytest.raises(ValueError, match="already exists"):
        img.apply(100, topic("t"))
    with pytest.raises(ValueError, match="not the next partition"):
        img.apply(100, partition(index=0))
    with pytest.raises(ValueError, match="not the next partition"):
        img.apply(100, partition(index=2))
    img = img.apply(100, partition(index=1, replicas=(2, 3, 1)))
    assert img.topics["t"].partitions == 2 and img.partitions[("t", 1)].leader == 2


@pytest.mark.parametrize("kwargs, match", [
    ({"replicas": (1, 9)}, "unregistered brokers"),
    ({"replicas": ()}, "no replicas"),
    ({"replicas": (1, 1)}, "distinct"),
    ({"replicas": (1, 2), "isr": (1, 3)}, "not within replicas"),
    ({"replicas": (1, 2), "isr": (2,), "leader": 1}, "not in the ISR"),
    ({"replicas": (1, 2), "isr": ()}, "empty ISR"),
])
def test_bad_partition_records(kwargs, match):
    img = build(register(1, 0), register(2, 1), register(3, 2), topic())
    if not kwargs.get("isr", kwargs["replicas"]):
        payload = partition(replicas=kwargs["replicas"], isr=[], leader=-1)
    else:
        payload = partition(**kwargs)
    with pytest.raises(ValueError, match=match):
        img.apply(10, payload)


def test_topic_configs():
    assert topic_configs({}) == {"min.insync.replicas": 1, "unclean.leader.election.enable": False}
    assert topic_configs({"unclean.leader.election.enable": True})["unclean.leader.election.enable"] is True
    for bad, match in [({"x": 1}, "unknown topic configs"), ({"min.insync.replicas": 0}, ">= 1"),
                       ({"min.insync.replicas": True}, ">= 1"),
                       ({"unclean.leader.election.enable": "yes"}, "must be a bool"), ([], "object")]:
        with pytest.raises(ValueError, match=match):
            topic_configs(bad)
    with pytest.raises(ValueError, match="must be a bool"):
        EMPTY.apply(0, topic("u", **{"unclean.leader.election.enable": 1}))


def test_partition_change_epochs():
    img = cluster()             # leader 1, epochs (0, 0), offset 7
    shrunk = img.apply(8, change([1, 2], 1, 0, 1))
    assert shrunk.partitions[("t", 0)] == PartitionState("t", 0, (1, 2, 3), (1, 2), 1, 0, 1)
    moved = shrunk.apply(9, change([2], 2, 1, 2))
    assert moved.partitions[("t", 0)].leader == 2 and moved.partitions[("t", 0)].leader_epoch == 1
    offline = moved.apply(10, change([2], -1, 2, 3))
    assert offline.partitions[("t", 0)].leader == -1 and offline.partitions[("t", 0)].leader_epoch == 2
    back = offline.apply(11, change([2], 2, 3, 4))       # back from -1: the leader epoch moves again
    assert back.partitions[("t", 0)].leader_epoch == 3
    for bad, match in [(change([1], 1, 0, 3), "partitionEpoch 3 does not follow 1"),
                       (change([1], 1, 1, 2), "expected 0"),      # same leader, bumped leader epoch
                       (change([2], 2, 0, 2), "expected 1"),      # new leader, same leader epoch
                       (change([2], 1, 0, 2), "not in the ISR"),
                       (change([4], -1, 1, 2), "not within replicas"),
                       (change([1], 1, 0, 2, index=5), "unknown partition")]:
        with pytest.raises(ValueError, match=match):
            shrunk.apply(9, bad)


def test_to_change_round_trips():
    img = cluster()
    st = img.partitions[("t", 0)]
    nxt = PartitionState("t", 0, st.replicas, (1, 3), 3, 1, 1)
    assert img.apply(8, nxt.to_change()).partitions[("t", 0)] == nxt


def test_metadata_record_type_encodes_and_scans():
    r = rec.Record(0, 1, rec.METADATA, register(1, 0))
    found, valid = rec.scan(rec.encode(r), 0)
    assert found[0][0] == r and valid == len(rec.encode(r))
    assert rec.Record.from_wire(json.loads(json.dumps(r.to_wire()))) == r


def test_replay_applies_committed_metadata_only():
    from kraft.state_machines.metadata_replay import MetadataReplay

    class FakeLog:
        def __init__(self, recs):
            self.recs = recs

        def read(self, start, end):
            return self.recs[start:end]

    log = FakeLog([rec.Record(0, 1, rec.LEADER_CHANGE, {}), rec.Record(1, 1, rec.METADATA, register(1, 1)),
                   rec.Record(2, 1, rec.DATA, 5), rec.Record(3, 1, rec.METADATA, fence(7, 0)),
                   rec.Record(4, 1, rec.METADATA, fence(1, 1, False))])
    replay, seen = MetadataReplay(), []
    replay.listeners.append(lambda img: seen.append(img.offset))
    assert replay.apply_committed(log, 2) == 1 and replay.applied == 2
    assert replay.image.brokers[1].fenced and seen == [1]
    assert replay.apply_committed(log, 2) == 0 and seen == [1]
    assert replay.apply_committed(log, 5) == 1          # the bad record at 3 is skipped, reported
    assert replay.errors and replay.errors[0][0] == 3 and "unknown broker 7" in replay.errors[0][1]
    assert replay.image.offset == 4 and not replay.image.brokers[1].fenced and seen == [1, 4]
