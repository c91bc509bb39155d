"""kraft/rules/isr.py: the partition leader's high watermark and ISR shrink/expand decisions
(Kafka 0.8 replication design; replica.lag.time.max.ms)."""
from kraft.rules.isr import (UNKNOWN, FollowerProgress, expand_candidates, fresh_progress, high_watermark,
                             proposed_isr, shrink_candidates)


def prog(leo, caught_up=0.0):
    return FollowerProgress(log_end_offset=leo, last_caught_up_ms=caught_up)


def test_high_watermark_is_the_least_log_end_offset_over_the_isr():
    progress = {2: prog(7), 3: prog(5)}
    assert high_watermark(0, 1, 9, [1, 2, 3], progress) == 5
    assert high_watermark(0, 1, 4, [1, 2, 3], progress) == 4          # the leader's own counted end
    assert high_watermark(0, 1, 9, [1, 2], progress) == 7             # 3 is out of the ISR: ignored


def test_high_watermark_never_goes_backwards():
    progress = {2: prog(3)}
    assert high_watermark(6, 1, 9, [1, 2], progress) == 6
    # a follower of the ISR not heard from yet in this epoch holds it
    assert high_watermark(4, 1, 9, [1, 2, 3], {2: prog(8), 3: FollowerProgress()}) == 4


def test_high_watermark_counts_the_leader_even_if_the_isr_omits_it():
    assert high_watermark(0, 1, 3, [2], {2: prog(8)}) == 3


def test_high_watermark_waits_while_the_isr_is_below_min_insync():
    """KIP-966: fewer in sync than min.insync.replicas hold the high watermark (0.8 did not)."""
    progress = {2: prog(7)}
    assert high_watermark(3, 1, 9, [1], progress, min_insync=2) == 3
    assert high_watermark(3, 1, 9, [1], progress, min_insync=1) == 9          # 0.8's rule
    assert high_watermark(3, 1, 9, [1, 2], progress, min_insync=2) == 7


def test_fresh_progress_gives_isr_members_a_full_lag_window():
    p = fresh_progress([2, 3], isr=[1, 2], now_ms=1000)
    assert p[2].log_end_offset == UNKNOWN and p[2].last_caught_up_ms == 1000
    assert p[3].last_caught_up_ms == float("-inf")
    assert shrink_candidates(1, [1, 2], p, now_ms=3999, lag_max_ms=3000) == []
    assert shrink_candidates(1, [1, 2], p, now_ms=4001, lag_max_ms=3000) == [2]


def test_a_follower_at_the_leaders_end_is_caught_up_now():
    p = FollowerProgress()
    p.on_fetch(10, leader_end=10, now_ms=500)
    assert (p.log_end_offset, p.last_caught_up_ms) == (10, 500)


def test_a_follower_that_reached_the_previous_fetchs_end_was_caught_up_then():
    # under a steady load the leader's end moves on between fetches: 10 then 12
    p = FollowerProgress()
    p.on_fetch(8, leader_end=10, now_ms=100)          # behind, never caught up
    assert p.last_caught_up_ms == float("-inf")
    p.on_fetch(10, leader_end=12, now_ms=200)         # has what the leader had at 100
    assert p.last_caught_up_ms == 100
    p.on_fetch(11, leader_end=15, now_ms=300)         # not all of the 12 the leader had at 200
    assert p.last_caught_up_ms == 100


def test_shrink_takes_out_followers_not_caught_up_for_the_lag_time():
    progress = {2: prog(10, caught_up=1000), 3: prog(4, caught_up=400)}
    assert shrink_candidates(1, [1, 2, 3], progress, now_ms=3500, lag_max_ms=3000) == [3]
    assert shrink_candidates(1, [1, 2, 3], progress, now_ms=3400, lag_max_ms=3000) == []
    assert shrink_candidates(1, [1, 2, 3], progress, now_ms=9000, lag_max_ms=3000) == [2, 3]
    assert shrink_candidates(1, [1], progress, now_ms=9000, lag_max_ms=3000) == []   # never the leader
    assert shrink_candidates(1, [1, 4], progress, now_ms=0, lag_max_ms=3000) == [4]  # no progress at all


def test_expand_brings_back_followers_at_the_high_watermark_and_epoch_start():
    progress = {2: prog(10), 3: prog(7), 4: prog(12)}
    assert expand_candidates(1, [1, 2, 3, 4], [1], progress, hw=8, epoch_start_offset=5) == [2, 4]
    assert expand_candidates(1, [1, 2, 3, 4], [1], progress, hw=7, epoch_start_offset=5) == [2, 3, 4]
    # below this leader's epoch start a follower may still hold an old leader's records
    assert expand_candidates(1, [1, 2, 3, 4], [1], progress, hw=7, epoch_start_offset=11) == [4]
    assert expand_candidates(1, [1, 2, 3, 4], [1, 2], progress, hw=0, epoch_start_offset=0) == [3, 4]
    assert expand_candidates(1, [1, 2, 5], [1], progress, hw=0, epoch_start_offset=0) == [2]   # 5 never fetched


def test_proposed_isr_keeps_replica_order():
    assert proposed_isr([3, 1, 2], [1, 2, 3], remove=[2], add=[]) == [3, 1]
    assert proposed_isr([3, 1, 2], [1], remove=[], add=[2, 3]) == [3, 1, 2]
    assert proposed_isr([1, 2], [1, 9], remove=[], add=[2]) == [1, 2, 9]
