"""kraft/controller/core.py driven by hand-made events: no quorum, no sockets, no clock.

A :class:`Node` plays the controller's node: a metadata log that the test commits at will
(the high watermark), the image replayed from what is committed, and the controller's
ProposeMetadata carried out as an append at the log's end.
"""
from __future__ import annotations

from kraft.controller.core import DEADLINES, SESSIONS, ControllerConfig, ControllerCore
from kraft.controller.messages import (AlterPartitionRequest, AlterPartitionResponse, Appended, BrokerHeartbeatRequest,
                                       BrokerHeartbeatResponse, BrokerRegistrationRequest, CreateTopicsRequest,
                                       IsrChange, NewTopic, ProposeMetadata, QuorumView)
from kraft.core import errors
from kraft.core.events import Received, Reply, SetTimer, TimerFired
from kraft.state_machines.metadata_image import EMPTY, FENCE_BROKER, PARTITION_CHANGE, REGISTER_BROKER

SESSION_MS, TIMEOUT_MS = 3000, 2000


class Node:
    """The controller's node: ``log`` (payloads by offset; None for a non-Metadata record,
    such as an epoch's LeaderChange), ``hw``, ``epoch``, ``leading`` and ``epoch_start``."""

    def __init__(self):
        self.now = 0.0
        self.core = ControllerCore(ControllerConfig(1, "cid", SESSION_MS, TIMEOUT_MS), clock=lambda: self.now)
        self.log: list = []
        self.hw = 0
        self.epoch, self.leading, self.epoch_start = 0, False, 0
        self.replies: dict = {}
        self.timers: dict = {}
        self.proposals: list = []
        self.tokens = 0

    def image(self, upto: int | None = None):
        img = EMPTY
        for off, p in enumerate(self.log[:self.hw if upto is None else upto]):
            if p is not None:
                img = img.apply(off, p)
        return img

    def view(self) -> QuorumView:
        return QuorumView(self.epoch, 1 if self.leading else 2, self.leading, self.epoch_start, self.hw,
                          self.image(), len(self.log))

    def step(self, event) -> list:
        effects = self.core.step(event)
        for e in effects:
            if type(e) is Reply:
                self.replies[e.token] = e.msg
            elif type(e) is SetTimer:
                self.timers[e.key] = e.at
            elif type(e) is ProposeMetadata:
                self.proposals.append(e.payloads)
                if self.leading and e.offset == len(self.log):
                    first = len(self.log)
                    self.log += e.payloads
                    self.step(Appended(first, len(self.log)))
                else:
                    self.step(Appended(-1, len(self.log), errors.NOT_LEADER_OR_FOLLOWER))
        return effects

    def lead(self, epoch: int) -> None:
        """Become the leader of ``epoch``: its LeaderChange at the log end, not committed."""
        self.epoch, self.leading, self.epoch_start = epoch, True, len(self.log)
        self.log.append(None)
        self.step(self.view())

    def commit(self, upto: int | None = None) -> None:
        """Commit the log up to ``upto`` (default: all of it) and tell the controller."""
        self.hw = len(self.log) if upto is None else upto
        self.step(self.view())

    def request(self, msg) -> object:
        self.tokens += 1
        token = ("t", self.tokens)
        self.step(Received(token, msg))
        return token

    def advance(self, ms: float) -> None:
        """Let ``ms`` pass, firing the due timers in order."""
        end = self.now + ms
        while True:
            due = sorted((at, k) for k, at in self.timers.items() if at <= end)
            if not due:
                break
            at, key = due[0]
            del self.timers[key]
            self.now = max(self.now, at)
            self.step(TimerFired(key, at))
        self.now = end

    def metadata(self, kind: str) -> list[dict]:
        return [p for p in self.log if p is not None and p["type"] == kind]


def active_node() -> Node:
    n = Node()
    n.lead(1)
    n.commit()
    assert n.core.active
    return n


def register(n: Node, bid: int) -> int:
    token = n.request(BrokerRegistrationRequest(bid, f"h{bid}", 9092, f"i{bid}"))
    assert token not in n.replies                        # answered once committed
    n.commit()
    resp = n.replies[token]
    assert resp.error_code == errors.NONE
    return resp.broker_epoch


def unfence(n: Node, bid: int, epoch: int) -> BrokerHeartbeatResponse:
    token = n.request(BrokerHeartbeatRequest(bid, epoch, epoch))
    n.commit()
    return n.replies[token]


def cluster_with_topic(n: Node, brokers=(4, 5, 6), partitions=1, **configs) -> dict[int, int]:
    epochs = {b: register(n, b) for b in brokers}
    for b, e in epochs.items():
        assert unfence(n, b, e).is_fenced is False
    token = n.request(CreateTopicsRequest((NewTopic("t", partitions, len(brokers), tuple(configs.items())),)))
    n.commit()
    assert n.replies[token].topics[0].error_code == errors.NONE
    return epochs


def heartbeat_all(n: Node, epochs: dict, skip=()) -> None:
    for b, e in epochs.items():
        if b not in skip:
            n.request(BrokerHeartbeatRequest(b, e, len(n.log)))


def test_activation_only_after_the_epochs_first_record_commits():
    n = Node()
    n.lead(1)                                            # leader, LeaderChange not committed yet
    assert not n.core.active
    token = n.request(BrokerRegistrationRequest(4, "h", 9092, "i"))
    assert n.replies[token].error_code == errors.NOT_CONTROLLER and n.proposals == []
    assert n.replies[token].leader_id == 1 and n.replies[token].leader_epoch == 1
    n.commit()
    assert n.core.active
    token = n.request(BrokerRegistrationRequest(4, "h", 9092, "i"))
    assert n.proposals and token not in n.replies        # written, waiting for the commit
    n.leading = False                                    # leadership lost before the commit
    n.step(n.view())
    assert not n.core.active
    assert n.replies[token].error_code == errors.REQUEST_TIMED_OUT    # appended: outcome unknown


def test_registration_commits_a_register_record_whose_offset_is_the_epoch():
    n = active_node()
    epoch = register(n, 4)
    rec = n.log[epoch]
    assert rec["type"] == REGISTER_BROKER and rec["brokerId"] == 4 and rec["brokerEpoch"] == epoch
    assert n.image().brokers[4].fenced
    token = n.request(BrokerHeartbeatRequest(4, epoch, epoch - 1))      # image not caught up: stays fenced
    assert n.replies[token].is_fenced is True and len(n.proposals) == 1
    assert unfence(n, 4, epoch).is_fenced is False
    assert not n.image().brokers[4].fenced
    stale = n.request(BrokerHeartbeatRequest(4, epoch + 7, epoch))
    assert n.replies[stale].error_code == errors.STALE_BROKER_EPOCH


def test_the_log_end_moving_under_a_write_rebuilds_it_at_the_new_end():
    n = active_node()
    n.log.append(None)                                   # a record the controller has not heard of
    epoch = register(n, 4)
    assert epoch == 2 and n.log[2]["brokerEpoch"] == 2
    assert len(n.proposals) == 2                         # the first, at offset 1, was refused


def test_session_expiry_fences_and_elects_the_next_isr_replica():
    n = active_node()
    epochs = cluster_with_topic(n)
    p0 = n.image().partitions[("t", 0)]
    dead = p0.leader
    for _ in range(8):                                   # 4 s: the others heartbeat, ``dead`` does not
        heartbeat_all(n, epochs, skip=(dead,))
        n.commit()
        n.advance(500)
    n.commit()
    img = n.image()
    assert img.brokers[dead].fenced
    st = img.partitions[("t", 0)]
    assert st.leader == p0.replicas[1] and st.isr == p0.replicas[1:] and (st.leader_epoch, st.partition_epoch) == (1, 1)
    fences = [i for i, p in enumerate(n.log) if p is not None and p["type"] == FENCE_BROKER]
    assert len(fences) == 1 and n.log[fences[0] + 1]["type"] == PARTITION_CHANGE   # one batch
    assert all(not img.brokers[b].fenced for b in epochs if b != dead)
    assert SESSIONS in n.timers


def test_alter_partition_accepted_then_rejected():
    n = active_node()
    epochs = cluster_with_topic(n)
    st = n.image().partitions[("t", 0)]
    lead, follower = st.leader, st.replicas[2]
    shrink = tuple(r for r in st.isr if r != follower)
    token = n.request(AlterPartitionRequest(lead, epochs[lead], (IsrChange("t", 0, 0, 0, shrink),)))
    assert token not in n.replies
    n.commit()
    resp = n.replies[token]
    assert isinstance(resp, AlterPartitionResponse) and resp.error_code == errors.NONE
    part = resp.partitions[0]
    assert (part.error_code, part.isr, part.partition_epoch) == (errors.NONE, shrink, 1)
    assert n.image().partitions[("t", 0)].isr == shrink
    writes = len(n.proposals)
    for msg, code in [
        (AlterPartitionRequest(lead, epochs[lead], (IsrChange("t", 0, 0, 0, st.isr),)), errors.INVALID_UPDATE_VERSION),
        (AlterPartitionRequest(follower, epochs[follower], (IsrChange("t", 0, 0, 1, shrink),)), errors.INVALID_REQUEST),
        (AlterPartitionRequest(lead, epochs[lead], (IsrChange("t", 0, 0, 1, (follower,)),)), errors.INVALID_REQUEST),
        (AlterPartitionRequest(lead, epochs[lead], (IsrChange("t", 0, 0, 1, shrink + (9,)),)),
         errors.INELIGIBLE_REPLICA),
        (AlterPartitionRequest(lead, epochs[lead], (IsrChange("t", 0, -1, 1, shrink),)), errors.FENCED_LEADER_EPOCH),
    ]:
        token = n.request(msg)
        assert n.replies[token].partitions[0].error_code == code, (msg, n.replies[token])
    stale = n.request(AlterPartitionRequest(lead, epochs[lead] + 100, (IsrChange("t", 0, 0, 1, shrink),)))
    assert n.replies[stale].error_code == errors.STALE_BROKER_EPOCH and n.replies[stale].partitions == []
    assert len(n.proposals) == writes                   # nothing written for a refusal
    same = n.request(AlterPartitionRequest(lead, epochs[lead], (IsrChange("t", 0, 0, 1, shrink),)))
    assert n.replies[same].partitions[0].error_code == errors.NONE and len(n.proposals) == writes


def test_one_write_in_flight_and_requests_wait_for_it():
    n = active_node()
    a = n.request(BrokerRegistrationRequest(4, "h4", 9092, "i4"))
    b = n.request(BrokerRegistrationRequest(5, "h5", 9092, "i5"))
    assert len(n.proposals) == 1 and a not in n.replies and b not in n.replies
    n.commit()
    assert n.replies[a].error_code == errors.NONE and b not in n.replies and len(n.proposals) == 2
    n.commit()
    assert n.replies[b].broker_epoch == n.replies[a].broker_epoch + 1
    c = n.request(BrokerRegistrationRequest(6, "h6", 9092, "i6"))
    d = n.request(BrokerRegistrationRequest(7, "h7", 9092, "i7"))
    n.advance(TIMEOUT_MS + 1)                           # never committed: both time out
    assert n.replies[c].error_code == errors.REQUEST_TIMED_OUT and n.replies[d].error_code == errors.REQUEST_TIMED_OUT
    assert len(n.proposals) == 3 and DEADLINES not in n.timers


def test_a_new_controller_rewrites_partition_changes_its_predecessor_never_committed():
    n = active_node()
    epochs = cluster_with_topic(n)
    p0 = n.image().partitions[("t", 0)]
    victim = p0.leader
    # the previous controller's batch: the FenceBrokerRecord committed, its partition change lost
    n.log.append({"type": FENCE_BROKER, "id": victim, "epoch": epochs[victim]})
    n.leading = False
    n.commit()
    assert not n.core.active and n.image().partitions[("t", 0)] == p0       # still led by a fenced broker
    proposed = len(n.proposals)
    n.lead(2)
    assert len(n.proposals) == proposed                  # not active before the epoch's first record commits
    n.commit()
    assert n.core.active and len(n.proposals) == proposed + 1
    assert [p["type"] for p in n.proposals[-1]] == [PARTITION_CHANGE]
    n.commit()
    st = n.image().partitions[("t", 0)]
    assert st.leader == p0.replicas[1] and victim not in st.isr and st.leader_epoch == 1
    assert len(n.metadata(FENCE_BROKER)) == 1


def test_a_new_controller_gives_every_broker_a_fresh_session():
    n = active_node()
    epochs = cluster_with_topic(n)
    n.advance(SESSION_MS - 100)
    n.leading = False
    n.step(n.view())
    n.lead(2)
    n.commit()
    n.advance(SESSION_MS - 100)                          # within the fresh sessions: nobody fenced
    assert n.metadata(FENCE_BROKER) == []
    heartbeat_all(n, epochs, skip=(4,))
    n.advance(200)
    n.commit()
    assert [p["id"] for p in n.metadata(FENCE_BROKER)] == [4]


def test_create_topics_answers_each_topic():
    n = active_node()
    cluster_with_topic(n)
    token = n.request(CreateTopicsRequest((NewTopic("t", 1, 3), NewTopic("u", 2, 4), NewTopic("v", 2, 3),
                                           NewTopic("v", 1, 1), NewTopic("w", 1, 1, (("bogus", 1),)))))
    n.commit()
    codes = [(r.name, r.error_code) for r in n.replies[token].topics]
    assert codes == [("t", errors.TOPIC_ALREADY_EXISTS), ("u", errors.INVALID_REPLICATION_FACTOR),
                     ("v", errors.NONE), ("v", errors.TOPIC_ALREADY_EXISTS), ("w", errors.INVALID_CONFIG)]
    img = n.image()
    assert img.topics["v"].partitions == 2
    assert img.partitions[("v", 0)].leader != img.partitions[("v", 1)].leader      # round-robin


def test_deterministic_effects_for_the_same_events():
    def run() -> list:
        n = active_node()
        cluster_with_topic(n, partitions=3)
        n.advance(SESSION_MS + 1)
        n.commit()
        return [p for p in n.log if p is not None]
    assert run() == run()
