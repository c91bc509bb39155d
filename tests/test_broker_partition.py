"""kraft/storage/partition.py: a partition replica's storage (log, high watermark checkpoint) and
the leader's bookkeeping: high watermark over the ISR, produce answers, ISR proposals."""
import asyncio

from kraft.core import errors
from kraft.storage.partition import (CHECKPOINT, FOLLOWER, LEADER, PartitionReplica, partition_dir,
                                     read_checkpoint, write_checkpoint)


def replica(tmp_path, page_cache_ack=False, broker_id=1, hw_below_min_isr=False):
    r = PartitionReplica(tmp_path, "t", 0, broker_id, 1 << 20, page_cache_ack=page_cache_ack,
                         hw_below_min_isr=hw_below_min_isr)
    r.open()
    return r


def test_checkpoint_round_trip_in_kafkas_format(tmp_path):
    path = tmp_path / CHECKPOINT
    assert read_checkpoint(path) == 0                       # missing
    write_checkpoint(path, "t", 3, 42)
    assert path.read_text() == "0\n1\nt 3 42\n"
    assert read_checkpoint(path) == 42
    path.write_text("garbage")
    assert read_checkpoint(path) == 0


def test_open_caps_the_checkpoint_at_the_log_end(tmp_path):
    d = partition_dir(tmp_path, "t", 0)
    assert d == tmp_path / "partitions" / "t-0"
    r = replica(tmp_path)
    r.become_leader(1, 0, [1], [1], 1, now_ms=0)
    for v in range(3):
        r.append(v)
    r.log.flush()
    r.after_flush()
    assert r.hw == 3                                         # ISR of one: the leader's flushed end
    r.close()
    write_checkpoint(d / CHECKPOINT, "t", 0, 10)             # more than the log holds
    r2 = replica(tmp_path)
    assert r2.log.end_offset == 3 and r2.hw == 3
    r2.close()


def test_records_count_once_flushed_by_default(tmp_path):
    async def main():
        r = replica(tmp_path)
        r.become_leader(1, 0, [1], [1], 1, now_ms=0)
        off = r.append(7)
        acked1, acked_all = r.wait_produce(off, 1), r.wait_produce(off, -1)
        await asyncio.sleep(0)
        assert r.hw == 0 and not acked1.done() and not acked_all.done()
        r.log.flush()
        r.after_flush()
        assert r.hw == 1 and acked1.result() == errors.NONE and acked_all.result() == errors.NONE
        r.close()
    asyncio.run(main())


def test_page_cache_ack_counts_at_once(tmp_path):
    async def main():
        r = replica(tmp_path, page_cache_ack=True)
        r.become_leader(1, 0, [1], [1], 1, now_ms=0)
        off = r.append(7)
        assert r.log.flushed_end == 0 and r.hw == 1
        assert r.wait_produce(off, -1).result() == errors.NONE
        r.close()
    asyncio.run(main())


def test_acks_all_waits_for_every_isr_member(tmp_path):
    async def main():
        r = replica(tmp_path)
        r.become_leader(2, 0, [1, 2, 3], [1, 2, 3], 2, now_ms=0)
        off = r.append("a")
        r.log.flush()
        r.after_flush()
        fut = r.wait_produce(off, -1)
        r.on_replica_fetch(2, 1, now_ms=10)
        assert r.hw == 0 and not fut.done()                  # 3 has not fetched
        r.on_replica_fetch(3, 1, now_ms=10)
        assert r.hw == 1 and fut.result() == errors.NONE
        r.close()
    asyncio.run(main())


def test_an_isr_below_min_insync_holds_the_high_watermark(tmp_path):
    """KIP-966: with fewer in sync than min.insync.replicas the high watermark stays, so no
    consumer reads a record only the leader holds, and an acks=all produce waits (for the
    ISR to grow back, or its timeout: indefinite either way)."""
    async def main():
        r = replica(tmp_path)
        r.become_leader(2, 0, [1, 2], [1, 2, 3], 2, now_ms=0)
        off = r.append("a")
        r.log.flush()
        r.after_flush()
        fut = r.wait_produce(off, -1)
        r.update_leader_state(1, [1], [1, 2, 3], 2)          # 2 left the ISR (committed)
        assert r.hw == 0 and not fut.done()
        r.update_leader_state(2, [1, 2], [1, 2, 3], 2)       # 2 is back, and has fetched "a"
        r.on_replica_fetch(2, 1, now_ms=10)
        assert r.hw == 1 and fut.result() == errors.NONE
        r.close()
    asyncio.run(main())


def test_unsafe_hw_below_min_isr_answers_after_append(tmp_path):
    """``--unsafe hw-below-min-isr`` (Kafka before KIP-966): the high watermark passes the
    record with the leader alone in sync; the produce gets NOT_ENOUGH_REPLICAS_AFTER_APPEND."""
    async def main():
        r = replica(tmp_path, hw_below_min_isr=True)
        r.become_leader(2, 0, [1, 2], [1, 2, 3], 2, now_ms=0)
        off = r.append("a")
        r.log.flush()
        r.after_flush()
        fut = r.wait_produce(off, -1)
        r.update_leader_state(1, [1], [1, 2, 3], 2)          # 2 left the ISR (committed)
        assert r.hw == 1 and fut.result() == errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        r.close()
    asyncio.run(main())


def test_losing_leadership_leaves_waiting_produces_indefinite(tmp_path):
    async def main():
        r = replica(tmp_path)
        r.become_leader(2, 0, [1, 2], [1, 2], 1, now_ms=0)
        fut = r.wait_produce(r.append("a"), -1)
        r.become_follower(2, 3)
        assert r.role == FOLLOWER and fut.result() == errors.REQUEST_TIMED_OUT
        r.close()
    asyncio.run(main())


def test_isr_proposals(tmp_path):
    r = replica(tmp_path)
    r.become_leader(2, 0, [1, 2, 3], [1, 2, 3], 1, now_ms=0)
    assert r.isr_proposal(now_ms=100, lag_max_ms=3000) is None
    r.on_replica_fetch(2, 0, now_ms=100)
    assert r.isr_proposal(now_ms=3050, lag_max_ms=3000) == (1, 2)      # 3 never fetched
    r.update_leader_state(1, [1, 2], [1, 2, 3], 1)
    r.on_replica_fetch(2, 0, now_ms=3600)
    r.on_replica_fetch(3, 0, now_ms=3600)                               # 3 is back, at the hw
    assert r.isr_proposal(now_ms=3600, lag_max_ms=3000) == (1, 2, 3)
    r.pending_isr = (1, 2, 3)
    assert r.isr_proposal(now_ms=3600, lag_max_ms=3000) is None         # one at a time
    assert r.hw_isr() == (1, 2, 3)                                      # the maximal ISR
    r.close()


def test_expansion_in_flight_holds_the_high_watermark_for_the_joining_replica(tmp_path):
    r = replica(tmp_path)
    r.become_leader(2, 0, [1], [1, 2], 1, now_ms=0)
    r.on_replica_fetch(2, 0, now_ms=0)
    r.pending_isr = (1, 2)                     # proposed: 2 is at the hw (0)
    r.append("a")
    r.log.flush()
    r.after_flush()
    assert r.hw == 0                           # 2 may already count as in sync: it must have it
    r.on_replica_fetch(2, 1, now_ms=1)
    assert r.hw == 1
    assert r.role == LEADER
    r.close()
