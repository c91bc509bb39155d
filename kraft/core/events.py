"""What the cores take and what they return: events in, effects out (no I/O; etcd-io/raft's
``Step``/``Ready`` shape).

A core (:class:`kraft.quorum.QuorumCore`, :class:`kraft.replication.BrokerCore`) is
driven by ``core.step(event) -> list of effects``. The runtime (the asyncio adapter in
kraft/runtime/raft.py and kraft/broker/service.py, or a simulator) carries out the effects *in order*:
it sends the messages, arms the timers, writes the disk, and feeds what comes back
(a reply, a timer, a finished fsync) in as further events. Times are ms on the core's
injected clock. Messages are plain objects (kraft/quorum/messages.py,
kraft/replication/messages.py): a simulator hands them over as they are; the adapter
encodes them to the wire format.

Contract for runtimes:

- every :class:`Send` of a request is answered by exactly one :class:`Replied` (its
  response, or None when it failed, timed out or was dropped);
- every :class:`Received` is answered by at most one :class:`Reply` with its token
  (none if the node crashes first);
- a :class:`SetTimer` replaces the timer of its key; a runtime may instead fire stale
  timers: a :class:`TimerFired` whose ``at`` is not the key's latest deadline is ignored;
- :class:`SyncDone` events come in the order of their :class:`SyncLog` effects;
- a :class:`PersistElection` is durable before any later effect of the same step is
  carried out (Kafka writes quorum-state before the transition it records).
"""
from __future__ import annotations

import dataclasses


class FatalError(RuntimeError):
    """An invariant broke (e.g. a truncation below the high watermark): raised by a core's
    ``step``; the node stops (the core must not be used afterwards)."""


# -- events (inputs) -----------------------------------------------------------------
@dataclasses.dataclass(slots=True)
class TimerFired:
    """The timer of ``key`` (the key of a :class:`SetTimer`) went off; ``at`` is the
    deadline (ms) that SetTimer gave."""

    key: object
    at: float


@dataclasses.dataclass(slots=True)
class Received:
    """A request arrived: ``msg`` (a request message) to be answered by a :class:`Reply`
    carrying ``token`` (chosen by the runtime: any hashable value, unique among the
    requests not yet answered)."""

    token: object
    msg: object


@dataclasses.dataclass(slots=True)
class Replied:
    """The outcome of a request the core sent with :class:`Send`: ``to`` and ``request`` as
    sent, ``gen`` the Send's, ``response`` the response message, or None when the request
    failed or timed out (it may or may not have been delivered)."""

    to: object
    request: object
    response: object
    gen: int


@dataclasses.dataclass(slots=True)
class SyncDone:
    """A :class:`SyncLog` finished: the log ``log`` (None: the metadata log; else a
    partition key ``(topic, partition)``) is durable up to offset ``end`` (exclusive), less
    whatever a later :class:`TruncateLog` removed."""

    end: int
    log: object = None


# -- effects (outputs) --------------------------------------------------------------
@dataclasses.dataclass(slots=True)
class Send:
    """Send the request ``msg`` to ``to`` (a node id, or, for an observer looking for the
    leader, one of its configured bootstrap servers, opaque to the core). ``gen`` is the
    core's state generation; the runtime returns it in the :class:`Replied`."""

    to: object
    msg: object
    gen: int


@dataclasses.dataclass(slots=True)
class Reply:
    """Answer the request of :class:`Received` ``token`` with the response ``msg``."""

    token: object
    msg: object


@dataclasses.dataclass(slots=True)
class SetTimer:
    """Fire :class:`TimerFired` ``(key, at)`` once the clock reaches ``at`` (ms); replaces any
    earlier timer of ``key``."""

    key: object
    at: float


@dataclasses.dataclass(slots=True)
class WriteLog:
    """Write ``records`` (kraft.core.records.Record, consecutive offsets, starting at the end of
    what was written before) to the log ``log`` (None: the metadata log; else a partition
    key). Written is not durable: only a :class:`SyncLog` makes it so."""

    records: list
    log: object = None


@dataclasses.dataclass(slots=True)
class TruncateLog:
    """Remove every record of log ``log`` at offset ``offset`` and above, durably."""

    offset: int
    log: object = None


@dataclasses.dataclass(slots=True)
class SyncLog:
    """fsync log ``log`` up to ``end`` (everything written so far); answer :class:`SyncDone`."""

    end: int
    log: object = None


@dataclasses.dataclass(slots=True)
class PersistElection:
    """Write quorum-state ``state`` (a :class:`kraft.core.states.ElectionState`) durably and
    atomically (temp file, fsync, rename), before the effects that follow it."""

    state: object


@dataclasses.dataclass(slots=True)
class StateChanged:
    """The replica moved from state ``old`` to ``kind`` (:class:`kraft.core.states.StateKind`);
    ``election`` is its ElectionState now. Information only (logs, tests, invariants)."""

    old: object
    kind: object
    election: object


@dataclasses.dataclass(slots=True)
class CheckpointHighWatermark:
    """Write partition ``log``'s high watermark ``hw`` to its checkpoint file
    (``replication-offset-checkpoint``; durable, atomic)."""

    log: object
    hw: int


@dataclasses.dataclass(slots=True)
class ProposeIsr:
    """Ask the controller (AlterPartition, KIP-497) to make ``isr`` the ISR of partition
    ``log`` at ``leader_epoch`` / ``partition_epoch``; answer
    :class:`kraft.replication.messages.IsrAnswer` when it replies."""

    log: object
    leader_epoch: int
    partition_epoch: int
    isr: tuple
