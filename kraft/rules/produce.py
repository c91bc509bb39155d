"""When the partition leader may append a Produce, and when and how it answers it.

Kafka's Produce semantics (``acks`` and ``min.insync.replicas``; the 0.8 replication
design's "commit thread" answering a produce once the high watermark passes it;
Kafka's ``Partition.appendRecordsToLeader`` and ``DelayedProduce``):

- ``acks=0``: answered at once, with no offset.
- ``acks=1``: answered once the record is in the leader's own log as it counts it
  (flushed by default; written to the page cache under ``page-cache-ack``).
- ``acks=-1`` (all): refused before appending (NOT_ENOUGH_REPLICAS, definite) when
  the ISR is smaller than ``min.insync.replicas``; otherwise answered once the high
  watermark passes the record, with NOT_ENOUGH_REPLICAS_AFTER_APPEND if by then the
  ISR is smaller than ``min.insync.replicas`` (indefinite: the record is in the log
  and may well be committed).

Pure: the broker passes the numbers in.
"""
from __future__ import annotations

from ..core import errors

ACKS = (0, 1, -1)


def check_append(acks: int, isr_size: int, min_insync: int) -> int:
    """The error refusing a Produce before it is appended, or ``errors.NONE``.

    INVALID_REQUIRED_ACKS for ``acks`` not in 0, 1, -1; NOT_ENOUGH_REPLICAS for
    ``acks=-1`` with ``isr_size < min_insync``. Both are definite (nothing appended).
    """
    if acks not in ACKS:
        return errors.INVALID_REQUIRED_ACKS
    if acks == -1 and isr_size < min_insync:
        return errors.NOT_ENOUGH_REPLICAS
    return errors.NONE


def outcome(acks: int, offset: int, counted_end: int, hw: int, isr_size: int,
            min_insync: int) -> int | None:
    """The answer to an appended Produce at ``offset``, or None while it must wait.

    ``counted_end``: the leader's log end as it counts (flushed end, or log end
    offset under page-cache-ack); ``hw``: its high watermark; ``isr_size``: the ISR
    now. ``acks=1`` is done once ``offset < counted_end``; ``acks=-1`` once
    ``offset < hw``, then NONE or NOT_ENOUGH_REPLICAS_AFTER_APPEND. ``acks=0`` is
    always done.
    """
    if acks == 0:
        return errors.NONE
    if acks == 1:
        return errors.NONE if offset < counted_end else None
    if offset >= hw:
        return None
    return errors.NONE if isr_size >= min_insync else errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND


#: Errors after which a Produce certainly appended nothing (Jepsen ``fail``); any other
#: error leaves the record possibly in the log (``info``).
DEFINITE = frozenset({errors.NOT_LEADER_OR_FOLLOWER, errors.UNKNOWN_TOPIC_OR_PARTITION,
                      errors.NOT_ENOUGH_REPLICAS, errors.INVALID_REQUIRED_ACKS,
                      errors.INVALID_REQUEST, errors.INCONSISTENT_CLUSTER_ID})
