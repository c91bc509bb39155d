"""The data plane end to end, in process: 3 controllers and 3 brokers on loopback.

A topic of replication factor 3 is created through a broker, records are produced with
acks=-1 and consumed below the high watermark; then the leader broker is closed, the
controller fences it and elects another ISR member, and every acknowledged record is
still there. Waits use deadlines; nothing asserts on timing.
"""
from __future__ import annotations

import asyncio

from kraft.core import errors
from kraft.wire import api
from tests.broker_inproc import create_topic, data_plane, eventually, partition_state

TOPIC = "q"
#: A bound on each test, so that a hang fails instead of stalling the suite (s).
TEST_TIMEOUT_S = 120


async def produce(dp, bid, value, acks=-1, topic=TOPIC):
    return await dp.call(bid, api.PRODUCE, {"Topic": topic, "Partition": 0, "Acks": acks, "Value": value})


async def consume_all(dp, bid, topic=TOPIC):
    """Every record below the leader's high watermark, as {offset: value}."""
    out, offset = {}, 0
    while True:
        body = await dp.call(bid, api.CONSUMER_FETCH, {"Topic": topic, "Partition": 0, "Offset": offset,
                                                       "MaxRecords": 100})
        assert body["ErrorCode"] == errors.NONE, body
        if not body["Records"]:
            return out, body["HighWatermark"]
        for o, v in body["Records"]:
            out[o] = v
            offset = o + 1


def test_produce_consume_and_leader_failover_keeps_acknowledged_records(tmp_path):
    async def main():
        async with data_plane(tmp_path) as dp:
            await create_topic(dp, 4, TOPIC, 1, 3, {"min.insync.replicas": 2})
            p = await partition_state(dp, 4, TOPIC, 0)
            assert sorted(p["Replicas"]) == [4, 5, 6] and sorted(p["Isr"]) == [4, 5, 6]
            leader, epoch0 = p["Leader"], p["LeaderEpoch"]
            follower = next(b for b in dp.brokers if b != leader)

            # only the leader takes writes
            body = await produce(dp, follower, 0)
            assert body["ErrorCode"] == errors.NOT_LEADER_OR_FOLLOWER and body["LeaderId"] == leader

            acked = {}
            for v in range(1, 21):
                body = await produce(dp, leader, v)
                assert body["ErrorCode"] == errors.NONE, body
                acked[body["BaseOffset"]] = v
            assert sorted(acked) == list(range(20))

            # consumers read below the high watermark, which acks=-1 has passed
            records, hw = await consume_all(dp, leader)
            assert hw >= 20 and records == acked
            lo = await dp.call(leader, api.LIST_OFFSETS, {"Topic": TOPIC, "Partition": 0})
            assert lo["ErrorCode"] == errors.NONE and lo["HighWatermark"] >= 20 and lo["LogEndOffset"] >= 20
            far = await dp.call(leader, api.CONSUMER_FETCH, {"Topic": TOPIC, "Partition": 0, "Offset": 99,
                                                             "MaxRecords": 10})
            assert far["ErrorCode"] == errors.OFFSET_OUT_OF_RANGE
            # every replica has every acknowledged record in its own log
            for bid in dp.brokers:
                log = dp.brokers[bid].server.broker.partitions[(TOPIC, 0)].log
                await eventually(lambda: log.end_offset >= 20, what=f"broker {bid} replicated")
                assert {r.offset: r.payload for r in log.records[:20]} == acked

            # the leader dies; the controller fences it and elects another ISR member
            await dp.brokers.pop(leader).crash()
            survivor = next(iter(dp.brokers))

            async def new_leader():
                p = await partition_state(dp, survivor, TOPIC, 0)
                return p if p["Leader"] in dp.brokers and p["LeaderEpoch"] > epoch0 else None
            p = await eventually(new_leader, what="a new leader")
            assert leader not in p["Isr"]
            leader2 = p["Leader"]

            # writes go on at the new leader (min.insync.replicas 2 of the 2 left)
            for v in range(21, 31):
                body = await eventually(lambda: _ok(produce(dp, leader2, v)), what=f"produce {v}")
                acked[body["BaseOffset"]] = v
            records, hw = await consume_all(dp, leader2)
            assert hw >= 30
            assert {o: records[o] for o in acked} == acked      # no acknowledged record lost

    asyncio.run(asyncio.wait_for(main(), TEST_TIMEOUT_S))


async def _ok(coro):
    body = await coro
    return body if body["ErrorCode"] == errors.NONE else None


def test_acks_all_is_refused_below_min_insync_replicas(tmp_path):
    async def main():
        async with data_plane(tmp_path) as dp:
            await create_topic(dp, 4, "strict", 1, 3, {"min.insync.replicas": 3})
            p = await partition_state(dp, 4, "strict", 0)
            leader = p["Leader"]
            body = await produce(dp, leader, 1, topic="strict")
            assert body["ErrorCode"] == errors.NONE
            victim = next(b for b in dp.brokers if b != leader)
            await dp.brokers.pop(victim).crash()

            async def shrunk():
                p = await partition_state(dp, leader, "strict", 0)
                return victim not in p["Isr"]
            await eventually(shrunk, what="the ISR without the dead follower")
            body = await produce(dp, leader, 2, topic="strict")
            assert body["ErrorCode"] == errors.NOT_ENOUGH_REPLICAS       # refused before appending
            body = await produce(dp, leader, 3, acks=1, topic="strict")  # acks=1 ignores it
            assert body["ErrorCode"] == errors.NONE and body["BaseOffset"] == 1

    asyncio.run(asyncio.wait_for(main(), TEST_TIMEOUT_S))


def _restart_after_divergence(tmp_path, mode):
    """KIP-101 scenario 2 in a real cluster. The leader L has records 0..9 (epoch 0, all
    acknowledged) and then, unreplicated, a "ghost" record at offset 10 with a high
    watermark checkpoint of 11 (as when the follower that had it lost it in a power
    failure). L dies; the new leader writes 10..19 in epoch 1. L comes back and follows.
    Returns (L's records, the new leader's records, the ISR L2 ends up with)."""
    import dataclasses

    from kraft.storage.log import Log
    from kraft.storage.partition import CHECKPOINT, partition_dir, write_checkpoint
    from kraft.core.records import DATA, Record
    from tests.kraft_inproc import Running

    async def main():
        async with data_plane(tmp_path) as dp:
            await create_topic(dp, 4, TOPIC, 1, 3, {"min.insync.replicas": 2})
            p = await partition_state(dp, 4, TOPIC, 0)
            old = p["Leader"]
            for v in range(10):
                assert (await produce(dp, old, v))["ErrorCode"] == errors.NONE
            running = dp.brokers.pop(old)
            await running.crash()
            d = partition_dir(running.cfg.data_dir, TOPIC, 0)
            log = Log(d)
            log.open()
            log.append(Record(10, 0, DATA, "ghost"))
            log.flush()
            log.close()
            write_checkpoint(d / CHECKPOINT, TOPIC, 0, 11)

            survivor = next(iter(dp.brokers))

            async def new_leader():
                q = await partition_state(dp, survivor, TOPIC, 0)
                return q if q["Leader"] in dp.brokers and q["LeaderEpoch"] > p["LeaderEpoch"] else None
            q = await eventually(new_leader, what="a new leader")
            leader2 = q["Leader"]
            for v in range(10, 20):
                body = await eventually(lambda: _ok(produce(dp, leader2, v)), what=f"produce {v}")
                assert body["BaseOffset"] == v

            unsafe = frozenset({"truncate-to-hw"}) if mode == "truncate-to-hw" else frozenset()
            back = await Running(dataclasses.replace(running.cfg, unsafe=unsafe)).start()
            dp.brokers[old] = back

            async def rejoined():
                q = await partition_state(dp, leader2, TOPIC, 0)
                return q if old in q["Isr"] else None
            q = await eventually(rejoined, what="the old leader back in the ISR")
            mine = back.server.broker.partitions[(TOPIC, 0)].log
            theirs = dp.brokers[leader2].server.broker.partitions[(TOPIC, 0)].log
            await eventually(lambda: mine.end_offset >= 20, what="the old leader caught up")
            return ([(r.offset, r.payload) for r in mine.records[:20]],
                    [(r.offset, r.payload) for r in theirs.records[:20]], q["Isr"])

    return asyncio.run(asyncio.wait_for(main(), TEST_TIMEOUT_S))


def test_leader_epoch_truncation_removes_the_unreplicated_record_and_rejoins(tmp_path):
    mine, theirs, isr = _restart_after_divergence(tmp_path, "leader-epoch")
    assert mine == theirs == [(o, o) for o in range(20)]      # OffsetForLeaderEpoch cut the ghost
    assert sorted(isr) == [4, 5, 6]                           # and the ISR expanded again


def test_truncate_to_hw_keeps_the_ghost_and_the_replicas_diverge(tmp_path):
    mine, theirs, _ = _restart_after_divergence(tmp_path, "truncate-to-hw")
    assert theirs == [(o, o) for o in range(20)]
    assert mine[10] == (10, "ghost") and mine != theirs      # KIP-101's divergence, in the ISR


def test_page_cache_ack_replicates_and_serves_below_the_high_watermark(tmp_path):
    async def main():
        async with data_plane(tmp_path, broker_overrides={"unsafe": frozenset({"page-cache-ack"})}) as dp:
            await create_topic(dp, 4, TOPIC, 1, 3, {"min.insync.replicas": 2})
            leader = (await partition_state(dp, 4, TOPIC, 0))["Leader"]
            acked = {}
            for v in range(10):
                body = await produce(dp, leader, v)
                assert body["ErrorCode"] == errors.NONE, body
                acked[body["BaseOffset"]] = v
            records, hw = await consume_all(dp, leader)
            assert hw >= 10 and records == acked
            body = await produce(dp, leader, 99, acks=0)
            assert body["ErrorCode"] == errors.NONE and body["BaseOffset"] == -1

    asyncio.run(asyncio.wait_for(main(), TEST_TIMEOUT_S))
