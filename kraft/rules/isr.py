"""The partition leader's in-sync replica bookkeeping: followers' progress, the high
watermark, and which followers to take out of or bring back into the ISR.

Sources: Kafka 0.8's replication design (``on_ReplicaFetchRequest``: a follower's
fetch offset is its log end offset; ``leader.hw = min of leo of every replica in
ISR``; ``maybe_change_ISR``), with the later time-only lag rule
(``replica.lag.time.max.ms``, KAFKA-1546: a follower is out of sync once it has not
caught up with the leader's log end offset for that long) and Kafka's rule that a
follower rejoins the ISR once its log end offset reaches the high watermark and the
start of the leader's epoch. Pure: times are passed in (ms), nothing is sent.
"""
from __future__ import annotations

import dataclasses
from typing import Iterable, Mapping

#: A follower's log end offset before its first fetch in this leader epoch.
UNKNOWN = -1


@dataclasses.dataclass
class FollowerProgress:
    """What the leader knows of one follower, in this leader epoch.

    ``log_end_offset``: the follower's last fetch offset (UNKNOWN before its first
    fetch). ``last_caught_up_ms``: the last time (ms) the follower was known to have
    every record the leader had. ``last_fetch_ms`` and ``last_fetch_leader_end``:
    the time of its previous fetch and the leader's log end offset then.
    """

    log_end_offset: int = UNKNOWN
    last_caught_up_ms: float = float("-inf")
    last_fetch_ms: float = float("-inf")
    last_fetch_leader_end: int = UNKNOWN

    def on_fetch(self, fetch_offset: int, leader_end: int, now_ms: float) -> None:
        """Record a fetch at ``fetch_offset`` when the leader's log ends at ``leader_end``.

        The follower was caught up now if it asked for the leader's log end offset,
        else as of its previous fetch if it now has everything the leader had then
        (Kafka's ``updateFetchState``: a steady produce load never lets a healthy
        follower's offset equal the leader's log end offset at the instant it asks).
        """
        if fetch_offset >= leader_end:
            self.last_caught_up_ms = max(self.last_caught_up_ms, now_ms)
        elif fetch_offset >= self.last_fetch_leader_end >= 0:
            self.last_caught_up_ms = max(self.last_caught_up_ms, self.last_fetch_ms)
        self.log_end_offset = fetch_offset
        self.last_fetch_ms = now_ms
        self.last_fetch_leader_end = leader_end


def fresh_progress(followers: Iterable[int], isr: Iterable[int], now_ms: float) -> dict[int, FollowerProgress]:
    """Progress of each of ``followers`` for a leader that has just taken over.

    Log end offsets are unknown until each follower fetches; ISR members count as
    caught up ``now_ms`` (as Kafka's becomeLeader does), so they get a whole
    ``replica.lag.time.max.ms`` to fetch before a shrink.
    """
    in_sync = set(isr)
    return {f: FollowerProgress(last_caught_up_ms=now_ms if f in in_sync else float("-inf"))
            for f in followers}


def high_watermark(current: int, leader_id: int, leader_end: int, isr: Iterable[int],
                   progress: Mapping[int, FollowerProgress], min_insync: int = 1) -> int:
    """The leader's new high watermark: the least log end offset over the ISR.

    ``leader_end`` is the leader's own end as it counts (its flushed end by default,
    its log end offset under ``page-cache-ack``). A follower in the ISR with no
    known progress holds the high watermark where it is. It never goes backwards:
    the result is at least ``current``. Kafka 0.8 replication design,
    ``on_ReplicaFetchRequest``.

    While the ISR (with the leader) has fewer than ``min_insync`` members the high
    watermark stays where it is (KIP-966): otherwise consumers read records that only a
    leader alone holds, which an unclean election then takes away. ``min_insync=1`` is
    0.8's rule (the ``hw-below-min-isr`` unsafe switch).
    """
    members = set(isr) | {leader_id}
    if len(members) < min_insync:
        return current
    ends = [leader_end if r == leader_id else
            (progress[r].log_end_offset if r in progress else UNKNOWN) for r in isr]
    if leader_id not in isr:
        ends.append(leader_end)
    return max(current, min(ends))


def shrink_candidates(leader_id: int, isr: Iterable[int], progress: Mapping[int, FollowerProgress],
                      now_ms: float, lag_max_ms: int) -> list[int]:
    """Followers in ``isr`` that have not been caught up for more than ``lag_max_ms``
    (``replica.lag.time.max.ms``), in ISR order; the leader is never one."""
    out = []
    for r in isr:
        if r == leader_id:
            continue
        p = progress.get(r)
        if p is None or now_ms - p.last_caught_up_ms > lag_max_ms:
            out.append(r)
    return out


def expand_candidates(leader_id: int, replicas: Iterable[int], isr: Iterable[int],
                      progress: Mapping[int, FollowerProgress], hw: int,
                      epoch_start_offset: int) -> list[int]:
    """Replicas out of ``isr`` whose log end offset has reached the high watermark ``hw``
    and ``epoch_start_offset`` (the leader's log end offset when it took over: a
    follower below it may still hold records of an older leader), in replicas order.

    Kafka's ``isFollowerInSync``; the 0.8 design's "r.leo - leo_min < MIN_BYTES_LAG".
    """
    in_sync = set(isr)
    out = []
    for r in replicas:
        if r == leader_id or r in in_sync or r not in progress:
            continue
        end = progress[r].log_end_offset
        if end >= hw and end >= epoch_start_offset:
            out.append(r)
    return out


def proposed_isr(replicas: Iterable[int], isr: Iterable[int], remove: Iterable[int],
                 add: Iterable[int]) -> list[int]:
    """The ISR with ``remove`` taken out and ``add`` put in, ordered as ``replicas``
    (members not among the replicas keep their place at the end)."""
    members = (set(isr) - set(remove)) | set(add)
    replicas = list(replicas)
    return [r for r in replicas if r in members] + sorted(members - set(replicas))
