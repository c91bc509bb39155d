"""The leader's high-watermark rule (KIP-595, "Fetch"; KAFKA-12619)."""
from __future__ import annotations


def majority_position(positions: list[int], quorum_off_by_one: bool = False) -> int:
    """The offset that a majority of voters have reached.

    ``positions`` holds one log end offset per voter (the leader's own flushed
    end included; -1 for a voter not heard from). Sorted descending, the
    majority position is the element at index ``len // 2``.
    ``quorum_off_by_one`` is the ``commit-minority`` bug: a quorum of
    ``len // 2`` voters (index ``len // 2 - 1``). Raises ValueError on an
    empty list.
    """
    if not positions:
        raise ValueError("no voters")
    i = len(positions) // 2
    if quorum_off_by_one:
        i = max(0, i - 1)
    return sorted(positions, reverse=True)[i]


def next_high_watermark(current: int, positions: list[int], epoch_start_offset: int,
                        require_epoch_commit: bool = True, quorum_off_by_one: bool = False) -> int:
    """The leader's new high watermark (an offset: records below it are committed).

    It is the majority position, but it advances only once that position is
    past ``epoch_start_offset`` (this epoch's LeaderChange record, at that
    offset, is committed), and it never moves backwards.
    ``require_epoch_commit=False`` is the ``early-high-watermark`` bug,
    ``quorum_off_by_one`` the ``commit-minority`` one.
    """
    candidate = majority_position(positions, quorum_off_by_one)
    if require_epoch_commit and candidate <= epoch_start_offset:
        return current
    return max(current, candidate)


def end_quorum_backoff_ms(position: int | None, retry_backoff_ms: int = 20, max_ms: int = 1000) -> int:
    """Election delay after EndQuorumEpoch for a voter at ``position`` in PreferredSuccessors.

    Position 0 elects at once; position N > 0 waits
    ``MIN(retryBackOffMaxMs, retryBackoffMs * 2^(N-1))`` (KIP-595,
    EndQuorumEpoch); a voter not in the list waits the maximum.
    """
    if position is None:
        return max_ms
    if position == 0:
        return 0
    return min(max_ms, retry_backoff_ms * 2 ** (position - 1))
