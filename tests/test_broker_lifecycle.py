"""kraft/broker/lifecycle.py driven by hand-made events: registration, heartbeats, and the
image turned into the replication core's commands only once it holds the registration."""
from __future__ import annotations

from kraft.broker.lifecycle import CONTROLLER, HEARTBEAT, HEARTBEAT_INTERVAL_MS, BrokerLifecycle, ImageUpdated
from kraft.controller.messages import (BrokerHeartbeatRequest, BrokerHeartbeatResponse, BrokerRegistrationRequest,
                                       BrokerRegistrationResponse)
from kraft.core import errors
from kraft.core.events import Replied, Send, SetTimer, TimerFired
from kraft.replication.messages import ClusterView, LeaderAndIsr
from kraft.state_machines.metadata_image import EMPTY


def image_with(*records):
    img = EMPTY
    for off, p in records:
        img = img.apply(off, p)
    return img


def register(bid: int, epoch: int) -> tuple:
    return epoch, {"type": "RegisterBrokerRecord", "brokerId": bid, "brokerEpoch": epoch, "host": "h", "port": 1,
                   "incarnationId": f"i{epoch}"}


TOPIC = (9, {"type": "TopicRecord", "name": "t", "topicId": "x", "configs": {"min.insync.replicas": 2}})
P0 = (10, {"type": "PartitionRecord", "topic": "t", "partitionId": 0, "replicas": [4, 5], "isr": [4, 5], "leader": 4,
           "leaderEpoch": 0, "partitionEpoch": 0})
P1 = (11, {"type": "PartitionRecord", "topic": "t", "partitionId": 1, "replicas": [5], "isr": [5], "leader": 5,
           "leaderEpoch": 0, "partitionEpoch": 0})


class Broker:
    def __init__(self):
        self.now = 0.0
        self.core = BrokerLifecycle(4, "h4", 9092, "inc", clock=lambda: self.now)
        self.timers = {}

    def take(self, effects) -> list:
        for e in effects:
            if type(e) is SetTimer:
                self.timers[e.key] = e.at
        return [e for e in effects if type(e) is not SetTimer]

    def fire(self) -> list:
        at = self.timers.pop(HEARTBEAT)
        self.now = max(self.now, at)
        return self.take(self.core.step(TimerFired(HEARTBEAT, at)))

    def answer(self, send: Send, resp) -> list:
        return self.take(self.core.step(Replied(send.to, send.msg, resp, send.gen)))


def test_registers_then_heartbeats_with_its_image_offset_and_acts_only_on_its_registration():
    b = Broker()
    assert b.take(b.core.start()) == [ClusterView(False, None)] and b.timers[HEARTBEAT] == 0.0
    [send] = b.fire()
    assert send.to == CONTROLLER and send.msg == BrokerRegistrationRequest(4, "h4", 9092, "inc")
    assert HEARTBEAT not in b.timers            # one request at a time: the next is armed once this is answered
    old = image_with(register(4, 3), register(5, 4), TOPIC, P0, P1)            # a previous life's registration
    assert b.take(b.core.step(ImageUpdated(old))) == []
    assert b.answer(send, BrokerRegistrationResponse(errors.NONE, 12)) == []   # the image lacks epoch 12 yet
    assert b.core.broker_epoch == 12 and b.timers[HEARTBEAT] == HEARTBEAT_INTERVAL_MS
    new = old.apply(*register(4, 12))
    out = b.take(b.core.step(ImageUpdated(new)))
    assert out[0] == ClusterView(True, frozenset())
    assert out[1:] == [LeaderAndIsr(("t", 0), 4, 0, 0, (4, 5), (4, 5), 2)]      # only the partition it hosts
    [hb] = b.fire()
    assert hb.msg == BrokerHeartbeatRequest(4, 12, 12)
    assert b.answer(hb, BrokerHeartbeatResponse(errors.NONE, is_fenced=False)) == [] and not b.core.fenced


def test_a_stale_epoch_registers_again_and_a_lost_answer_retries_later():
    b = Broker()
    b.take(b.core.start())
    [send] = b.fire()
    assert b.answer(send, None) == [] and b.core.broker_epoch == -1          # no controller answered
    [send] = b.fire()
    assert type(send.msg) is BrokerRegistrationRequest
    b.answer(send, BrokerRegistrationResponse(errors.NONE, 5))
    [hb] = b.fire()
    assert b.answer(hb, BrokerHeartbeatResponse(errors.STALE_BROKER_EPOCH)) == [ClusterView(False, frozenset())]
    [again] = b.fire()
    assert type(again.msg) is BrokerRegistrationRequest
    stale = b.answer(hb, BrokerHeartbeatResponse(errors.NONE, False))         # an old answer is ignored
    assert stale == [] and b.core.broker_epoch == -1
