"""The active controller's messages as plain objects (KIP-631, KIP-497; docs/data-plane.md):
the four controller RPCs, what the controller core hears of its node's quorum, and the
write it asks the quorum for.

Requests and responses (kraft/controller/codec.py maps them to the wire):
BrokerRegistration, BrokerHeartbeat, CreateTopics and AlterPartition. Every response
has ``error_code`` (kraft/core/errors.py), ``message`` for an error, and the
``leader_id`` / ``leader_epoch`` of the quorum as the controller knows it (the hint a
broker follows after NOT_CONTROLLER).

Events the controller core takes besides Received and TimerFired
(kraft/core/events.py): :class:`QuorumView` (its node's quorum state and committed
metadata image) and :class:`Appended` (the outcome of a :class:`ProposeMetadata`).
"""
from __future__ import annotations

import dataclasses

from ..core import errors
from ..core.states import StateKind
from ..state_machines.metadata_image import EMPTY, MetadataImage


# -- requests and responses ---------------------------------------------------------------------
@dataclasses.dataclass(slots=True)
class BrokerRegistrationRequest:
    """BrokerRegistration (62): broker ``broker_id`` at ``host``:``port``, in the process
    run ``incarnation_id``."""

    broker_id: int
    host: str
    port: int
    incarnation_id: str


@dataclasses.dataclass(slots=True)
class BrokerRegistrationResponse:
    """``broker_epoch``: the offset of the committed RegisterBrokerRecord."""

    error_code: int
    broker_epoch: int = -1
    message: str | None = None
    leader_id: int = -1
    leader_epoch: int = -1


@dataclasses.dataclass(slots=True)
class BrokerHeartbeatRequest:
    """BrokerHeartbeat (63) of broker ``broker_id`` registered at ``broker_epoch``, whose
    metadata image has reached ``metadata_offset``."""

    broker_id: int
    broker_epoch: int
    metadata_offset: int


@dataclasses.dataclass(slots=True)
class BrokerHeartbeatResponse:
    """``is_fenced``: the broker as the committed image has it after this heartbeat."""

    error_code: int
    is_fenced: bool = True
    message: str | None = None
    leader_id: int = -1
    leader_epoch: int = -1


@dataclasses.dataclass(slots=True, frozen=True)
class NewTopic:
    """One topic of a CreateTopics: ``name``, ``partitions``, ``replication_factor`` and
    ``configs`` (as a tuple of (key, value) pairs, topic configs of
    kraft/state_machines/metadata_image.py)."""

    name: str
    partitions: int
    replication_factor: int
    configs: tuple = ()


@dataclasses.dataclass(slots=True)
class CreateTopicsRequest:
    """CreateTopics (19): ``topics`` (a tuple of :class:`NewTopic`)."""

    topics: tuple


@dataclasses.dataclass(slots=True, frozen=True)
class TopicResult:
    """One topic's outcome: ``error_code`` and ``message``."""

    name: str
    error_code: int
    message: str | None = None


@dataclasses.dataclass(slots=True)
class CreateTopicsResponse:
    """``topics``: a :class:`TopicResult` per requested topic, in order."""

    error_code: int
    topics: list = dataclasses.field(default_factory=list)
    message: str | None = None
    leader_id: int = -1
    leader_epoch: int = -1


@dataclasses.dataclass(slots=True, frozen=True)
class IsrChange:
    """One partition of an AlterPartition: ``topic``-``index`` at ``leader_epoch`` and
    ``partition_epoch``, to get ISR ``new_isr`` (a tuple of broker ids)."""

    topic: str
    index: int
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple


@dataclasses.dataclass(slots=True)
class AlterPartitionRequest:
    """AlterPartition (56) from partition leader ``broker_id`` at ``broker_epoch``:
    ``changes`` (a tuple of :class:`IsrChange`)."""

    broker_id: int
    broker_epoch: int
    changes: tuple


@dataclasses.dataclass(slots=True, frozen=True)
class PartitionResult:
    """One partition's outcome: ``error_code`` and, when the partition exists, its state
    after the change (``leader`` -1 and epochs -1 when it does not)."""

    topic: str
    index: int
    error_code: int
    leader: int = -1
    leader_epoch: int = -1
    partition_epoch: int = -1
    isr: tuple | None = None


@dataclasses.dataclass(slots=True)
class AlterPartitionResponse:
    """``partitions``: a :class:`PartitionResult` per requested change, in order (empty for
    a top-level error)."""

    error_code: int
    partitions: list = dataclasses.field(default_factory=list)
    message: str | None = None
    leader_id: int = -1
    leader_epoch: int = -1


#: The controller's requests (what a node hands its controller core rather than its quorum core).
REQUESTS = (BrokerRegistrationRequest, BrokerHeartbeatRequest, CreateTopicsRequest, AlterPartitionRequest)


# -- the node's quorum, and the writes ------------------------------------------------------------
@dataclasses.dataclass(slots=True)
class QuorumView:
    """Event: the controller's node as its quorum core has it now. ``epoch`` and
    ``leader_id`` (-1: unknown) of the quorum; ``leading``: this node is the leader of
    ``epoch``, whose first record is at ``epoch_start``; ``committed``: the high watermark
    (every record below it is replayed into ``image``); ``log_end``: the log end offset
    (where the next append lands). :meth:`of` reads one off a QuorumCore."""

    epoch: int = 0
    leader_id: int = -1
    leading: bool = False
    epoch_start: int = 0
    committed: int = 0
    image: MetadataImage = EMPTY
    log_end: int = 0

    @classmethod
    def of(cls, quorum) -> "QuorumView":
        """The view of ``quorum``, a :class:`kraft.quorum.QuorumCore`."""
        s = quorum.state
        leading = s.kind is StateKind.LEADER
        metadata = s.metadata
        return cls(quorum.epoch, quorum.leader_id, leading, s.epoch_start if leading else 0,
                   metadata.applied, metadata.image, s.log.end_offset)


@dataclasses.dataclass(slots=True)
class ProposeMetadata:
    """Effect: append ``payloads`` as Metadata records (kraft/core/records.py), one batch, at
    exactly ``offset`` (the log end the controller was told): if the log's end is elsewhere
    or the node does not lead, append nothing. Answer :class:`Appended` at once."""

    payloads: list
    offset: int


@dataclasses.dataclass(slots=True)
class Appended:
    """Event: the outcome of a :class:`ProposeMetadata`: ``error_code`` NONE and ``offset``
    its first record's offset; or nothing appended, ``offset`` -1 and ``error_code``
    NOT_LEADER_OR_FOLLOWER (the node does not lead, or its log's end is not where the
    controller thought) or INVALID_REQUEST (a payload the log refuses). ``log_end``: the
    log end offset after it."""

    offset: int
    log_end: int
    error_code: int = errors.NONE
