"""The controller's partition decisions, as pure functions of a MetadataImage.

Replica assignment for CreateTopics, leader election, the partition changes that
follow a broker being fenced or unfenced, and AlterPartition validation
(docs/data-plane.md). Sources: Kafka 0.8's replication design (leader election from
the ISR; a fenced replica leaves the ISR), KIP-631 (the records the active
controller writes) and KIP-497 (AlterPartition). Each function returns the Metadata
record payloads to write; the caller commits them (kraft/controller/service.py).
"""
from __future__ import annotations

import dataclasses

from ..core import errors
from ..state_machines.metadata_image import (NO_LEADER, PARTITION, TOPIC, UNCLEAN, MetadataImage,
                                             PartitionState, topic_configs)


class Rejected(Exception):
    """A request the controller refuses: ``code`` is the Kafka error code
    (kraft/core/errors.py), ``message`` says why."""

    def __init__(self, code: int, message: str):
        super().__init__(f"{errors.name(code)}: {message}")
        self.code = code
        self.message = message


def assign_replicas(brokers: list[int], partitions: int, replication_factor: int,
                    start: int = 0) -> list[list[int]]:
    """Round-robin assignment (Kafka's, without racks): partition p gets
    ``replication_factor`` consecutive brokers of ``brokers`` (sorted) from index
    ``start + p``; the first one is the preferred leader.

    Raises :class:`Rejected` INVALID_PARTITIONS (``partitions`` < 1) or
    INVALID_REPLICATION_FACTOR (< 1, or more than ``len(brokers)``).
    """
    if partitions < 1:
        raise Rejected(errors.INVALID_PARTITIONS, f"NumPartitions must be at least 1, got {partitions}")
    ids = sorted(brokers)
    if replication_factor < 1 or replication_factor > len(ids):
        raise Rejected(errors.INVALID_REPLICATION_FACTOR,
                       f"replication factor {replication_factor} with {len(ids)} unfenced brokers")
    n = len(ids)
    return [[ids[(start + p + j) % n] for j in range(replication_factor)] for p in range(partitions)]


def create_topic(image: MetadataImage, name: str, topic_id: str, partitions: int,
                 replication_factor: int, configs: dict) -> list[dict]:
    """CreateTopics for one topic: the TopicRecord and its PartitionRecords (KIP-631).

    Replicas are assigned round-robin over the unfenced brokers, starting after the
    partitions that already exist (so leadership spreads over topics); ISR =
    replicas, leader = the first replica, epochs 0. Raises :class:`Rejected`
    TOPIC_ALREADY_EXISTS, INVALID_CONFIG, INVALID_PARTITIONS or
    INVALID_REPLICATION_FACTOR.
    """
    if not isinstance(name, str) or not name:
        raise Rejected(errors.INVALID_REQUEST, f"topic name must be a non-empty string, got {name!r}")
    if name in image.topics:
        raise Rejected(errors.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
    try:
        full = topic_configs(configs)
    except ValueError as e:
        raise Rejected(errors.INVALID_CONFIG, str(e)) from None
    assignment = assign_replicas(image.unfenced(), partitions, replication_factor, start=len(image.partitions))
    out = [{"type": TOPIC, "name": name, "topicId": topic_id, "configs": full}]
    for i, replicas in enumerate(assignment):
        out.append({"type": PARTITION, "topic": name, "partitionId": i, "replicas": replicas,
                    "isr": list(replicas), "leader": replicas[0], "leaderEpoch": 0, "partitionEpoch": 0})
    return out


def elect_leader(image: MetadataImage, state: PartitionState, isr: tuple[int, ...],
                 unclean_allowed: bool) -> tuple[int, tuple[int, ...]]:
    """The leader and ISR for a partition that needs a leader (Kafka 0.8 replication
    design, leader election), given its ISR of unfenced members ``isr``.

    Clean: the first replica, in ``state.replicas`` order, in ``isr`` (and unfenced).
    Otherwise, if ``unclean_allowed``, the first unfenced replica, whose ISR becomes
    just itself (unclean: committed records may be lost). Otherwise ``NO_LEADER`` and
    ``isr`` unchanged. Returns ``(leader, isr)``.
    """
    for r in state.replicas:
        if r in isr and image.is_unfenced(r):
            return r, isr
    if unclean_allowed:
        for r in state.replicas:
            if image.is_unfenced(r):
                return r, (r,)
    return NO_LEADER, isr


def target_state(image: MetadataImage, state: PartitionState) -> PartitionState:
    """Where ``state`` must go given which brokers are fenced in ``image``.

    Fenced brokers leave the ISR and leadership; a partition without a live leader
    elects one (:func:`elect_leader`, unclean only if the topic allows it). When the
    last ISR member is fenced the ISR keeps it (Kafka: the partition is offline,
    ``leader`` -1, ISR ``[that broker]``). Epochs follow the image's rules:
    ``partition_epoch`` + 1 on any change, ``leader_epoch`` + 1 iff the leader changes.
    Returns ``state`` itself when nothing changes.
    """
    live_isr = tuple(r for r in state.isr if image.is_unfenced(r))
    if state.leader != NO_LEADER and image.is_unfenced(state.leader):
        leader, isr = state.leader, live_isr           # the leader is in live_isr (it is in the ISR)
    else:
        unclean = bool(image.topics[state.topic].configs.get(UNCLEAN, False))
        leader, isr = elect_leader(image, state, live_isr, unclean)
    if not isr:                                        # every ISR member is fenced: stay offline
        isr = (state.leader,) if state.leader != NO_LEADER else state.isr
    if (leader, isr) == (state.leader, state.isr):
        return state
    return dataclasses.replace(state, leader=leader, isr=isr,
                               leader_epoch=state.leader_epoch + (leader != state.leader),
                               partition_epoch=state.partition_epoch + 1)


def partition_changes(image: MetadataImage) -> list[dict]:
    """The PartitionChangeRecords that bring every partition of ``image`` in line with
    its fenced and unfenced brokers (:func:`target_state`), in (topic, partition)
    order; empty when there is nothing to do.

    The controller writes them with a FenceBrokerRecord or UnfenceBrokerRecord
    (pass the image with that record applied), after a re-registration, and once on
    taking over (so changes a previous controller appended but never committed are
    made again). KIP-631: fencing; Kafka 0.8: leader election.
    """
    out = []
    for key in sorted(image.partitions):
        old = image.partitions[key]
        new = target_state(image, old)
        if new is not old:
            out.append(new.to_change())
    return out


def alter_partition(image: MetadataImage, broker_id: int, topic: str, index: int, leader_epoch: int,
                    partition_epoch: int, new_isr: list[int]) -> PartitionState:
    """Validate one partition of an AlterPartition from ``broker_id`` (KIP-497) and
    return the new state (``state`` itself, unchanged, when ``new_isr`` is the ISR
    already: nothing to write; otherwise write ``result.to_change()``).

    Raises :class:`Rejected` with, in this order: UNKNOWN_TOPIC_OR_PARTITION;
    FENCED_LEADER_EPOCH (``leader_epoch`` older than the partition's) or
    NOT_CONTROLLER (newer: this controller is behind); INVALID_REQUEST (the sender
    is not the leader); INVALID_UPDATE_VERSION (``partition_epoch`` is not the
    partition's; NOT_CONTROLLER if newer); INVALID_REQUEST (``new_isr`` has
    duplicates or leaves out the leader); INELIGIBLE_REPLICA (``new_isr`` names a
    broker that is not a replica, not registered or fenced).
    """
    state = image.partitions.get((topic, index))
    if state is None:
        raise Rejected(errors.UNKNOWN_TOPIC_OR_PARTITION, f"unknown partition {topic}-{index}")
    name = f"{topic}-{index}"
    if leader_epoch < state.leader_epoch:
        raise Rejected(errors.FENCED_LEADER_EPOCH,
                       f"{name}: leader epoch {leader_epoch} is older than {state.leader_epoch}")
    if leader_epoch > state.leader_epoch:
        raise Rejected(errors.NOT_CONTROLLER,
                       f"{name}: leader epoch {leader_epoch} is newer than this controller's {state.leader_epoch}")
    if broker_id != state.leader:
        raise Rejected(errors.INVALID_REQUEST, f"{name}: broker {broker_id} is not the leader ({state.leader})")
    if partition_epoch > state.partition_epoch:
        raise Rejected(errors.NOT_CONTROLLER, f"{name}: partition epoch {partition_epoch} is newer than "
                                              f"this controller's {state.partition_epoch}")
    if partition_epoch != state.partition_epoch:
        raise Rejected(errors.INVALID_UPDATE_VERSION,
                       f"{name}: partition epoch {partition_epoch} is not {state.partition_epoch}")
    if len(set(new_isr)) != len(new_isr):
        raise Rejected(errors.INVALID_REQUEST, f"{name}: new ISR {new_isr} has duplicates")
    if state.leader not in new_isr:
        raise Rejected(errors.INVALID_REQUEST, f"{name}: new ISR {new_isr} leaves out the leader {state.leader}")
    bad = [r for r in new_isr if r not in state.replicas or not image.is_unfenced(r)]
    if bad:
        raise Rejected(errors.INELIGIBLE_REPLICA,
                       f"{name}: new ISR {new_isr} names ineligible replicas {bad} (fenced or not replicas)")
    isr = tuple(new_isr)
    if isr == state.isr:
        return state
    return dataclasses.replace(state, isr=isr, partition_epoch=state.partition_epoch + 1)
