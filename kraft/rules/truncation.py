"""Where a replica that becomes a follower truncates its partition log, in both modes.

- ``truncate-to-hw`` (the unsafe switch; Kafka 0.8 replication design,
  ``becomeFollower``: "truncate the log to r.hw"): to its own high-watermark
  checkpoint. KIP-101 shows how this loses acknowledged records (a follower
  truncates records the leader had committed, then is elected) and lets replicas
  diverge (after a crash of both, the new leader writes other records at offsets
  the old one still holds above its high watermark).
- ``leader-epoch`` (the default; KIP-101, OffsetForLeaderEpoch, with KIP-279's
  repeat): the follower asks the leader for the end offset of its own last leader
  epoch, and truncates to ``min(leader's end, its own end of that epoch)``. When the
  leader answers an epoch the follower does not have, the follower truncates to
  the end of its own largest epoch below it and asks again, until the epochs
  agree.

Pure: logs are passed in as :class:`EpochLog` (``kraft.storage.log.Log`` is one).
"""
from __future__ import annotations

import dataclasses
from typing import Protocol

#: OffsetForLeaderEpoch's "no such epoch" answer (Kafka's UNDEFINED_EPOCH / _OFFSET).
UNDEFINED = -1


class EpochLog(Protocol):
    """The part of a log the decisions read (``kraft.storage.log.Log`` has it)."""

    @property
    def end_offset(self) -> int: ...

    @property
    def last_epoch(self) -> int: ...

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]: ...


def truncate_to_hw_target(hw: int, log_end_offset: int) -> int:
    """The 0.8 ``becomeFollower`` target: the local high watermark, capped at the log end."""
    return max(0, min(hw, log_end_offset))


def leader_epoch_answer(log: EpochLog, requested_epoch: int) -> tuple[int, int]:
    """The leader's OffsetForLeaderEpoch answer (KIP-101) for ``requested_epoch``:
    ``(epoch, end_offset)``, the largest epoch <= the requested one in the leader's log
    and the first offset after it (the next epoch's start, or the log end offset).

    When the log has no epoch <= the requested one (every record is of a later epoch,
    or there is none) the answer is ``(requested_epoch, 0)``: none of the follower's
    records of that epoch or below is in the leader's log (ours start at offset 0).
    A negative ``requested_epoch`` answers ``(UNDEFINED, UNDEFINED)``.
    """
    if requested_epoch < 0:
        return UNDEFINED, UNDEFINED
    epoch, end = log.end_offset_for_epoch(requested_epoch)
    return (requested_epoch, 0) if end == 0 else (epoch, end)


@dataclasses.dataclass(frozen=True)
class Step:
    """One truncation decision: truncate to ``offset``; ``done`` when the epochs agree
    (False: ask again for the new last epoch)."""

    offset: int
    done: bool


def leader_epoch_step(log: EpochLog, answer_epoch: int, answer_end: int, hw: int) -> Step:
    """The follower's decision on the leader's OffsetForLeaderEpoch answer
    ``(answer_epoch, answer_end)`` to a request for its ``log.last_epoch``.

    - ``UNDEFINED``: the leader cannot tell; truncate to the local high watermark
      ``hw`` (KIP-101's fallback for old message formats).
    - The follower has records of ``answer_epoch`` (or none of any epoch up to it):
      truncate to ``min(answer_end, its own end of that epoch)``; done. Records of
      one epoch come from its one leader, so the prefix up to there agrees, and
      everything after is of epochs the leader does not have.
    - It has none of that epoch: truncate to the end of its own largest epoch below
      ``answer_epoch`` (everything after is of epochs the leader never had) and ask
      again (KIP-279); done only if that truncates nothing (asking again would get
      the same answer).

    Offsets are capped at the log end offset; an empty log is done at 0.
    """
    leo = log.end_offset
    if leo == 0:
        return Step(0, True)
    if answer_epoch == UNDEFINED or answer_end == UNDEFINED:
        return Step(truncate_to_hw_target(hw, leo), True)
    local_epoch, local_end = log.end_offset_for_epoch(answer_epoch)
    if local_end == 0 or local_epoch == answer_epoch:
        return Step(max(0, min(answer_end, local_end, leo)), True)
    target = min(local_end, leo)
    return Step(target, target >= leo)
