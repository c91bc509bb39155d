"""The controller's requests as pure functions of the committed metadata image: the records
each one writes (:func:`build`) and its answer (:func:`answer`). KIP-631 (registration,
heartbeats: RegisterBrokerRecord, UnfenceBrokerRecord), KIP-497 (AlterPartition), CreateTopics;
the partition decisions are kraft/controller/partition_election.py's. The controller core
(kraft/controller/core.py) calls them, one request at a time, and writes what they return.
"""
from __future__ import annotations

import logging
import uuid

from ..core import errors
from ..state_machines.metadata_image import REGISTER_BROKER, UNFENCE_BROKER, MetadataImage
from .messages import (AlterPartitionRequest, AlterPartitionResponse, BrokerHeartbeatRequest, BrokerHeartbeatResponse,
                       BrokerRegistrationRequest, BrokerRegistrationResponse, CreateTopicsRequest,
                       CreateTopicsResponse, PartitionResult, TopicResult)
from .partition_election import Rejected, alter_partition, create_topic, partition_changes

log = logging.getLogger("kraft.controller")

#: Most partitions one CreateTopics topic may ask for.
MAX_PARTITIONS = 1000


def build(msg, image: MetadataImage, offset: int, cluster_id: str) -> tuple[list[dict], object]:
    """The Metadata record payloads request ``msg`` writes, built on ``image`` to land at log
    ``offset`` (empty: nothing to write, answer at once), and what was decided, for
    :func:`answer`: the broker epoch of a registration, the :class:`TopicResult` of each
    topic, the error code of each AlterPartition change. Raises :class:`Rejected` for a
    request refused as a whole: STALE_BROKER_EPOCH (a heartbeat or AlterPartition from a
    broker not registered under that epoch)."""
    t = type(msg)
    if t is BrokerRegistrationRequest:
        rec = {"type": REGISTER_BROKER, "brokerId": msg.broker_id, "brokerEpoch": offset, "host": msg.host,
               "port": msg.port, "incarnationId": msg.incarnation_id}
        return [rec] + partition_changes(image.apply(offset, rec)), offset
    if t is BrokerHeartbeatRequest:
        cur = image.brokers.get(msg.broker_id)
        if cur is None or cur.epoch != msg.broker_epoch:
            raise Rejected(errors.STALE_BROKER_EPOCH, f"broker {msg.broker_id} re-registered meanwhile")
        if not cur.fenced:
            return [], None
        rec = {"type": UNFENCE_BROKER, "id": msg.broker_id, "epoch": msg.broker_epoch}
        return [rec] + partition_changes(image.apply(offset, rec)), None
    if t is CreateTopicsRequest:
        return _topics(msg, image, offset, cluster_id)
    if t is AlterPartitionRequest:
        return _alter(msg, image)
    raise TypeError(f"not a controller request: {msg!r}")


def _topics(msg: CreateTopicsRequest, image: MetadataImage, offset: int, cluster_id: str) -> tuple[list, list]:
    """Each topic's TopicRecord and PartitionRecords (in one batch; a later topic sees the
    earlier ones), or its refusal. Topic ids are uuid5 of the cluster id, name and offset."""
    out, results = [], []
    for t in msg.topics:
        try:
            if t.partitions > MAX_PARTITIONS:
                raise Rejected(errors.INVALID_PARTITIONS, f"at most {MAX_PARTITIONS} partitions")
            at = offset + len(out)
            topic_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"kraft:{cluster_id}/{t.name}/{at}"))
            recs = create_topic(image, t.name, topic_id, t.partitions, t.replication_factor, dict(t.configs))
        except Rejected as r:
            results.append(TopicResult(t.name, r.code, r.message))
            continue
        for i, rec in enumerate(recs):
            image = image.apply(at + i, rec)
        out += recs
        results.append(TopicResult(t.name, errors.NONE))
        log.info("creating topic %s (%d partitions, replication factor %d)", t.name, t.partitions,
                 t.replication_factor)
    return out, results


def _alter(msg: AlterPartitionRequest, image: MetadataImage) -> tuple[list, list]:
    """The PartitionChangeRecords of the accepted changes, and each change's error code."""
    b = image.brokers.get(msg.broker_id)
    if b is None or b.epoch != msg.broker_epoch:
        raise Rejected(errors.STALE_BROKER_EPOCH, f"broker {msg.broker_id} epoch {msg.broker_epoch} is not registered")
    changes, codes = [], []
    for c in msg.changes:
        try:
            new = alter_partition(image, msg.broker_id, c.topic, c.index, c.leader_epoch, c.partition_epoch,
                                  list(c.new_isr))
        except Rejected as r:
            codes.append(r.code)
            continue
        codes.append(errors.NONE)
        if new is not image.partitions[(c.topic, c.index)]:
            changes.append(new.to_change())
    return changes, codes


def answer(msg, result, image: MetadataImage, code: int, message: str | None = None):
    """The response to ``msg`` with ``code``: NONE (after its records committed, or when it
    wrote nothing) is answered from ``image`` and ``result`` (:func:`build`'s); an error
    (``message`` says why) refuses what :func:`build` accepted and keeps what it refused.
    CreateTopics answers per topic (top-level NONE but for NOT_CONTROLLER: nothing was
    done), AlterPartition per change (none for a top-level error)."""
    t = type(msg)
    if t is BrokerRegistrationRequest:
        return BrokerRegistrationResponse(code, result if code == errors.NONE else -1, message)
    if t is BrokerHeartbeatRequest:
        b = image.brokers.get(msg.broker_id)
        return BrokerHeartbeatResponse(code, b is None or b.epoch != msg.broker_epoch or b.fenced, message)
    if t is CreateTopicsRequest:
        top = code if code == errors.NOT_CONTROLLER else errors.NONE
        if result is None:
            return CreateTopicsResponse(top, [TopicResult(x.name, code, message) for x in msg.topics], message)
        return CreateTopicsResponse(top, [r if r.error_code != errors.NONE else TopicResult(r.name, code, message)
                                          for r in result])
    if code != errors.NONE or result is None:
        return AlterPartitionResponse(code, [], message)
    parts = []
    for c, result_code in zip(msg.changes, result):
        st = image.partitions.get((c.topic, c.index))
        parts.append(PartitionResult(c.topic, c.index, result_code) if st is None else PartitionResult(
            c.topic, c.index, result_code, st.leader, st.leader_epoch, st.partition_epoch, st.isr))
    return AlterPartitionResponse(errors.NONE, parts)
