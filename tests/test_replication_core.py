"""The brokers' replication core (kraft/replication/) driven by hand-made events alone:
produce acks, ISR shrink and expand, the high watermark with min.insync.replicas,
truncation on a leader change, and the three broker switches."""
from __future__ import annotations

from kraft.core import errors
from kraft.core.events import (CheckpointHighWatermark, ProposeIsr, Received, Replied, SyncDone, SyncLog,
                               TruncateLog, WriteLog)
from kraft.core.record_log import RecordLog
from kraft.core.unsafe import Unsafe
from kraft.replication import BrokerConfig, BrokerCore
from kraft.replication.messages import (IsrAnswer, LeaderAndIsr, OffsetForLeaderEpochRequest,
                                        OffsetForLeaderEpochResponse, ProduceRequest, ReplicaFetchRequest,
                                        ReplicaFetchResponse)
from kraft.replication.replica import FOLLOWER, LEADER

from .core_driving import Clock, Driver, of, records, replies, sent

K = ("t", 0)


def broker(bid: int = 1, epochs=(), hw: int = 0, switches=(), **cfg) -> Driver:
    """Broker ``bid``'s core with partition K over a log of ``epochs``."""
    clock = Clock()
    cfg = dict(dict(replica_lag_time_max_ms=1000, request_timeout_ms=2000), **cfg)
    core = BrokerCore(BrokerConfig(bid, unsafe=Unsafe.of(switches), **cfg), clock=clock)
    core.add_partition(K, RecordLog(records(epochs)), hw)
    return Driver(core, clock, [])


def lead(d: Driver, isr=(1, 2, 3), min_isr: int = 1, epoch: int = 1, pepoch: int = 0) -> None:
    d.step(LeaderAndIsr(K, 1, epoch, pepoch, tuple(isr), (1, 2, 3), min_isr))
    assert d.core.states[K].role == LEADER


def produce(d: Driver, token, value, acks: int = -1) -> list:
    return d.step(Received(token, ProduceRequest(K, acks, value)))


def rfetch(d: Driver, token, rid: int, offset: int, epoch: int = 1, wait: int = 0) -> list:
    return d.step(Received(token, ReplicaFetchRequest(K, rid, epoch, offset, 100, wait)))


def test_produce_acks_0_1_and_all():
    d = broker()
    lead(d)
    assert replies(produce(d, "a0", 10, acks=0))["a0"].base_offset == -1          # at once, no offset
    fx = produce(d, "a1", 11, acks=1)
    assert "a1" not in replies(fx) and of(fx, WriteLog)
    fx = d.advance(d.clock.t + 3)                                                 # the flush linger
    assert of(fx, SyncLog)[0].end == 2
    assert replies(d.step(SyncDone(2, K)))["a1"].base_offset == 1                 # on the leader's disk
    produce(d, "all", 12)
    d.advance(d.clock.t + 3)
    d.step(SyncDone(3, K))
    assert "all" not in replies(rfetch(d, "f2", 2, 3))                            # 3 has not got it
    fx = rfetch(d, "f3", 3, 3)
    assert replies(fx)["all"].error_code == errors.NONE and d.core.states[K].hw == 3


def test_a_parked_replica_fetch_is_answered_by_the_next_produce():
    d = broker()
    lead(d)
    assert not replies(rfetch(d, "p", 2, 0, wait=500))
    fx = produce(d, "x", 7, acks=1)
    assert [r.payload for r in replies(fx)["p"].records] == [7]


def test_an_isr_below_min_insync_holds_the_high_watermark_unless_hw_below_min_isr():
    for switches, hw, code in (((), 0, None), (("hw-below-min-isr",), 1, errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND)):
        d = broker(switches=switches)
        lead(d, isr=(1, 2), min_isr=2)
        produce(d, "p", 1)
        d.advance(d.clock.t + 3)
        d.step(SyncDone(1, K))
        fx = d.step(LeaderAndIsr(K, 1, 1, 1, (1,), (1, 2, 3), 2))          # 2 left the ISR
        assert d.core.states[K].hw == hw
        assert replies(fx).get("p") is None if code is None else replies(fx)["p"].error_code == code
    d = broker()
    lead(d, isr=(1,), min_isr=2)
    assert replies(produce(d, "r", 1))["r"].error_code == errors.NOT_ENOUGH_REPLICAS   # before append
    assert d.core.states[K].log.end_offset == 0


def test_isr_shrinks_after_replica_lag_time_and_expands_when_caught_up():
    d = broker()
    lead(d)
    for t in range(100, 1200, 100):
        d.advance(t)
        rfetch(d, ("f", t), 2, 0)                 # 2 keeps up; 3 never fetches
    proposals = of(d.effects, ProposeIsr)
    assert proposals and proposals[0].isr == (1, 2)
    assert d.core.states[K].hw_isr() == (1, 2, 3)           # a shrink in flight does not lower the hw's ISR
    fx = d.step(IsrAnswer(K, (1, 2), 0, errors.INVALID_UPDATE_VERSION))
    assert d.core.states[K].pending_isr is None            # refused: back off, propose again later
    fx = d.advance(d.clock.t + 600)
    assert of(fx, ProposeIsr)[0].isr == (1, 2)
    d.step(LeaderAndIsr(K, 1, 1, 1, (1, 2), (1, 2, 3), 1))  # the shrink committed
    fx = rfetch(d, "back", 3, 0)                           # 3 is at the high watermark again
    assert of(fx, ProposeIsr)[0].isr == (1, 2, 3)


def test_a_new_follower_truncates_with_offset_for_leader_epoch_then_fetches():
    # the follower has epochs 1 1 3 3; the new leader's log is 1 1 2 2 (then its own epoch 4)
    d = broker(2, epochs=[1, 1, 3, 3], hw=2)
    d.step(LeaderAndIsr(K, 3, 4, 0, (3, 2), (1, 2, 3)))
    st = d.core.states[K]
    ask = sent(d.effects, OffsetForLeaderEpochRequest)[0]
    assert st.role == FOLLOWER and ask.to == 3 and ask.msg.leader_epoch == 3
    fx = d.step(Replied(3, ask.msg, OffsetForLeaderEpochResponse(errors.NONE, 2, 4), ask.gen))
    assert of(fx, TruncateLog)[0].offset == 2 and st.log.end_offset == 2       # no epoch 2 here: KIP-279
    ask2 = sent(fx, OffsetForLeaderEpochRequest)[0]
    assert ask2.msg.leader_epoch == 1                                           # asks again
    fx = d.step(Replied(3, ask2.msg, OffsetForLeaderEpochResponse(errors.NONE, 1, 2), ask2.gen))
    f = sent(fx, ReplicaFetchRequest)[0]
    assert f.msg.fetch_offset == 2 and not of(fx, TruncateLog)
    recs = records([1, 1, 2, 2, 4])[2:]
    fx = d.step(Replied(3, f.msg, ReplicaFetchResponse(errors.NONE, 4, recs), f.gen))
    assert of(fx, SyncLog) and not sent(fx, ReplicaFetchRequest)                # fsync before reporting
    fx = d.step(SyncDone(5, K))
    assert sent(fx, ReplicaFetchRequest)[0].msg.fetch_offset == 5 and st.hw == 4


def test_truncate_to_hw_truncates_to_the_checkpoint_without_asking():
    d = broker(2, epochs=[1, 1, 1, 1], hw=2, switches=["truncate-to-hw"])
    d.step(LeaderAndIsr(K, 3, 2, 0, (3, 2), (1, 2, 3)))
    assert of(d.effects, TruncateLog)[0].offset == 2
    assert not sent(d.effects, OffsetForLeaderEpochRequest) and sent(d.effects, ReplicaFetchRequest)
    # the correct build keeps what the leader has: records 2 and 3 of epoch 1 survive
    d = broker(2, epochs=[1, 1, 1, 1], hw=2)
    d.step(LeaderAndIsr(K, 3, 2, 0, (3, 2), (1, 2, 3)))
    ask = sent(d.effects, OffsetForLeaderEpochRequest)[0]
    fx = d.step(Replied(3, ask.msg, OffsetForLeaderEpochResponse(errors.NONE, 1, 4), ask.gen))
    assert not of(fx, TruncateLog) and d.core.states[K].log.end_offset == 4


def test_page_cache_ack_answers_before_any_fsync():
    d = broker(switches=["page-cache-ack"])
    lead(d, isr=(1,))
    fx = produce(d, "p", 5)
    assert replies(fx)["p"].error_code == errors.NONE and not of(d.effects, SyncLog)     # the bug
    fx = d.advance(d.clock.t + 1000)                      # log.flush.interval.ms
    assert of(fx, SyncLog)


def test_losing_leadership_leaves_waiting_produces_indefinite_and_the_hw_is_checkpointed():
    d = broker()
    lead(d, isr=(1,))
    produce(d, "p", 5)
    d.advance(d.clock.t + 3)
    d.step(SyncDone(1, K))
    fx = d.advance(d.clock.t + 500)
    assert of(fx, CheckpointHighWatermark)[0].hw == 1
    produce(d, "q", 6)
    fx = d.step(LeaderAndIsr(K, 2, 2, 1, (2,), (1, 2, 3)))
    assert replies(fx)["q"].error_code == errors.REQUEST_TIMED_OUT and d.core.states[K].role == FOLLOWER


def test_three_brokers_in_virtual_time_ack_every_produce_and_agree():
    from .replication_sim import KEY as SK, BrokerSim
    sim = BrokerSim()
    for i in range(200):
        sim.run_until(sim.now + 5)
        sim.at(sim.now, 1, Received(("client", i), ProduceRequest(SK, -1, i)))
    sim.run_until(sim.now + 1000)
    acked = {r.base_offset for r in sim.replies.values() if r.error_code == errors.NONE}
    assert acked == set(range(200))
    logs = [c.states[SK].log.records for c in sim.cores.values()]
    assert logs[0] == logs[1] == logs[2] and len(logs[0]) == 200
