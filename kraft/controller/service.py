"""The active controller: CreateTopics, BrokerRegistration, BrokerHeartbeat, AlterPartition.

KIP-631 (the quorum controller; broker registration, heartbeats and fencing),
KIP-497 (AlterPartition) and Kafka 0.8's replication design (leader election from
the ISR); docs/data-plane.md is the contract. Every controller node runs a
:class:`ControllerService`; it is *active* only while its RaftNode leads the quorum
and this epoch's first record is committed, so that its image
(``node.metadata.image``, every committed Metadata record replayed,
kraft/state_machines/metadata_replay.py) holds everything earlier controllers committed. Any other
controller answers NOT_CONTROLLER (every response carries the LeaderId hint).

Writes are serialised: each one is decided from the committed image, appended
(several records in one batch, e.g. a FenceBrokerRecord with the partition changes
that follow), and answered once committed, when the image already shows it. Broker
sessions (``broker.session.timeout.ms``) are tracked by the active controller only,
in memory; on taking over it gives every broker a fresh session and re-writes any
partition change the image still needs (one a previous controller appended but
never committed).
"""
from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import Awaitable, Callable

from ..core import errors
from ..core.records import METADATA
from ..core.rpc import InvalidRequest, Refused, field
from ..runtime.raft import RaftNode
from ..state_machines.metadata_image import FENCE_BROKER, REGISTER_BROKER, UNFENCE_BROKER, MetadataImage
from ..wire import api
from .partition_election import Rejected, alter_partition, create_topic, partition_changes

log = logging.getLogger("kraft.controller")

#: How often the active controller checks broker sessions and its own activation (s).
CHECK_S = 0.02
#: Most partitions one CreateTopics topic may ask for.
MAX_PARTITIONS = 1000

Handler = Callable[[dict], Awaitable[dict]]


def _not_controller(why: str) -> Refused:
    return Refused(errors.NOT_CONTROLLER, why)


class ControllerService:
    """The controller RPCs for ``node`` (a controller-role RaftNode).

    Call :meth:`start` inside the event loop (it starts the session checker) and
    :meth:`close` on shutdown; :meth:`handlers` maps api keys to handlers.
    """

    def __init__(self, node: RaftNode):
        self.node = node
        self._lock = asyncio.Lock()
        self._active_epoch = -1                 # the epoch this controller is active in
        self._sessions: dict[int, float] = {}   # broker id -> session deadline (monotonic s)
        self._pending_end = 0                   # end of the last batch appended in this epoch
        self._task: asyncio.Task | None = None

    def handlers(self) -> dict[int, Handler]:
        """The controller RPC handlers by api key (for kraft/node/server.py)."""
        return {api.CREATE_TOPICS: self.handle_create_topics,
                api.BROKER_REGISTRATION: self.handle_broker_registration,
                api.BROKER_HEARTBEAT: self.handle_broker_heartbeat,
                api.ALTER_PARTITION: self.handle_alter_partition}

    def start(self) -> None:
        """Start the background check (activation, broker session timeouts)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def close(self) -> None:
        """Stop the background check."""
        if self._task is not None:
            self._task.cancel()
            self._task = None

    @property
    def image(self) -> MetadataImage:
        """The committed metadata image (kraft/state_machines/metadata_replay.py)."""
        return self.node.metadata.image

    @property
    def session_timeout_s(self) -> float:
        """``broker.session.timeout.ms`` in seconds (KIP-631 broker session)."""
        return self.node.cfg.broker_session_timeout_ms / 1000.0

    def is_active(self) -> bool:
        """True iff this node is the active controller (leader, epoch committed, taken over)."""
        return self.node.leader_epoch_committed() and self._active_epoch == self.node.epoch

    # -- the background check ----------------------------------------------------------
    async def _run(self) -> None:
        while True:
            try:
                await self.check()
            except asyncio.CancelledError:
                raise
            except Exception:           # a bug must not stop the checker; it is logged
                log.exception("controller check failed")
            await asyncio.sleep(CHECK_S)

    async def check(self) -> None:
        """One round: take over on a newly committed leadership, give up a lost one, and
        fence every unfenced broker whose session expired (KIP-631)."""
        node = self.node
        if not node.leader_epoch_committed():
            if self._active_epoch != -1:
                log.info("no longer the active controller (epoch %d)", self._active_epoch)
                self._active_epoch, self._sessions = -1, {}
            return
        if self._lock.locked():
            return
        async with self._lock:
            try:
                if self._active_epoch != node.epoch:
                    await self._take_over()
                else:
                    await self._maintain()
            except Refused as e:       # lost leadership, or a slow commit: the next round retries
                log.info("controller check: %s", e)

    async def _take_over(self) -> None:
        node, now = self.node, time.monotonic()
        self._active_epoch, self._pending_end = node.epoch, 0
        self._sessions = {b: now + self.session_timeout_s for b in self.image.brokers}
        log.info("active controller in epoch %d (metadata offset %d, %d brokers)",
                 node.epoch, self.image.offset, len(self.image.brokers))
        await self._maintain()

    def _expired(self, image: MetadataImage) -> list[dict]:
        """FenceBrokerRecords for the unfenced brokers whose session has expired."""
        now = time.monotonic()
        return [{"type": FENCE_BROKER, "id": b.id, "epoch": b.epoch} for b in image.brokers.values()
                if not b.fenced and self._sessions.get(b.id, now + 1.0) <= now]

    async def _maintain(self) -> None:
        """Fence the brokers whose session expired, with the partition changes that follow,
        and write any partition change the image still needs (after a take-over)."""
        def build(image: MetadataImage) -> list[dict]:
            fences = self._expired(image)
            for rec in fences:
                image = image.apply(image.offset + 1, rec)    # Fence records ignore their offset
            return fences + partition_changes(image)
        if not build(self.image):
            return
        await self._ready()
        batch = build(self.image)
        if batch:
            fenced = [r["id"] for r in batch if r["type"] == FENCE_BROKER]
            if fenced:
                log.warning("fencing brokers %s: no heartbeat for %d ms", fenced,
                            self.node.cfg.broker_session_timeout_ms)
            else:
                log.info("writing %d pending partition changes", len(batch))
            await self._commit(batch)

    # -- writing -----------------------------------------------------------------------
    async def _ready(self) -> None:
        """Wait (up to request.timeout.ms) until every batch appended in this epoch is
        committed and in the image, so a decision never builds on a stale image.
        Raises Refused NOT_CONTROLLER or REQUEST_TIMED_OUT."""
        deadline = time.monotonic() + self.node.cfg.request_timeout_ms / 1000.0
        while self.node.metadata.applied < self._pending_end:
            if not self.is_active():
                raise _not_controller("leadership lost")
            if time.monotonic() >= deadline:
                raise Refused(errors.REQUEST_TIMED_OUT, "earlier metadata not committed yet")
            await asyncio.sleep(CHECK_S / 2)
        if not self.is_active():
            raise _not_controller("not the active controller")

    async def _commit(self, payloads: list[dict]) -> int:
        """Append ``payloads`` as Metadata records in one batch and wait for the last to
        commit; returns the first record's offset. Raises Refused NOT_CONTROLLER
        (nothing appended) or REQUEST_TIMED_OUT (appended, commit unknown)."""
        node = self.node
        first = node.log.end_offset
        self._pending_end = first + len(payloads)
        try:
            first, _ = await node.propose(METADATA, payloads)
        except Refused as e:
            if e.code == errors.NOT_LEADER_OR_FOLLOWER:
                raise _not_controller("leadership lost") from None
            raise
        return first

    async def _write(self, build: Callable[[MetadataImage, int], list[dict]]) -> int:
        """Under the write lock: ``build(image, next_offset)`` -> records, then commit them.
        Returns the first record's offset. Raises Rejected (from ``build``) or Refused."""
        if not self.is_active():
            raise _not_controller("not the active controller")
        async with self._lock:
            await self._ready()
            payloads = build(self.image, self.node.log.end_offset)   # no await until appended
            return await self._commit(payloads) if payloads else -1

    # -- handlers ----------------------------------------------------------------------
    async def handle_broker_registration(self, body: dict) -> dict:
        """BrokerRegistration (62) ``{"BrokerId", "Host", "Port", "IncarnationId"}`` ->
        ``{"ErrorCode", "BrokerEpoch"}`` (KIP-631): commits a RegisterBrokerRecord (the
        broker is fenced until a caught-up heartbeat; its epoch is the record's offset)
        and the partition changes a re-registration implies. Errors NOT_CONTROLLER,
        REQUEST_TIMED_OUT; InvalidRequest for a bad field."""
        bid, host = field(body, "BrokerId", int), field(body, "Host", str)
        port, inc = field(body, "Port", int), field(body, "IncarnationId", str)
        if bid < 0 or not host or not inc or not 0 < port < 65536:
            raise InvalidRequest("BrokerId, Host, Port or IncarnationId out of range")

        def build(image: MetadataImage, offset: int) -> list[dict]:
            rec = {"type": REGISTER_BROKER, "brokerId": bid, "brokerEpoch": offset, "host": host,
                   "port": port, "incarnationId": inc}
            return [rec] + partition_changes(image.apply(offset, rec))
        try:
            epoch = await self._write(build)
        except Refused as e:
            return e.body
        self._sessions[bid] = time.monotonic() + self.session_timeout_s
        log.info("registered broker %d at %s:%d, epoch %d", bid, host, port, epoch)
        return {"ErrorCode": errors.NONE, "BrokerEpoch": epoch}

    async def handle_broker_heartbeat(self, body: dict) -> dict:
        """BrokerHeartbeat (63) ``{"BrokerId", "BrokerEpoch", "CurrentMetadataOffset"}`` ->
        ``{"ErrorCode", "IsFenced"}`` (KIP-631): renews the broker's session; a fenced
        broker whose metadata offset has reached its registration is unfenced (the
        UnfenceBrokerRecord and the elections it allows commit first). Errors
        NOT_CONTROLLER, STALE_BROKER_EPOCH (unknown broker or epoch),
        REQUEST_TIMED_OUT."""
        bid, epoch = field(body, "BrokerId", int), field(body, "BrokerEpoch", int)
        offset = field(body, "CurrentMetadataOffset", int)
        if not self.is_active():
            return _not_controller("not the active controller").body
        b = self.image.brokers.get(bid)
        if b is None or b.epoch != epoch:
            return Refused(errors.STALE_BROKER_EPOCH, f"broker {bid} epoch {epoch} is not registered "
                                                      f"(current {None if b is None else b.epoch})").body
        self._sessions[bid] = time.monotonic() + self.session_timeout_s
        if b.fenced and offset >= b.epoch:
            def build(image: MetadataImage, next_offset: int) -> list[dict]:
                cur = image.brokers.get(bid)
                if cur is None or cur.epoch != epoch:
                    raise Rejected(errors.STALE_BROKER_EPOCH, f"broker {bid} re-registered meanwhile")
                if not cur.fenced:
                    return []
                rec = {"type": UNFENCE_BROKER, "id": bid, "epoch": epoch}
                return [rec] + partition_changes(image.apply(next_offset, rec))
            try:
                await self._write(build)
            except Refused as e:
                return e.body
            except Rejected as e:
                return {"ErrorCode": e.code, "ErrorMessage": e.message}
            log.info("unfenced broker %d (epoch %d)", bid, epoch)
        cur = self.image.brokers.get(bid)
        return {"ErrorCode": errors.NONE, "IsFenced": cur is None or cur.epoch != epoch or cur.fenced}

    async def handle_create_topics(self, body: dict) -> dict:
        """CreateTopics (19) ``{"Topics": [{"Name", "NumPartitions", "ReplicationFactor",
        "Configs"}]}`` -> ``{"ErrorCode", "Topics": [{"Name", "ErrorCode", "ErrorMessage"?}]}``,
        each topic answered once its records commit (KIP-631). Per-topic errors
        TOPIC_ALREADY_EXISTS, INVALID_REPLICATION_FACTOR, INVALID_PARTITIONS,
        INVALID_CONFIG, NOT_CONTROLLER, REQUEST_TIMED_OUT."""
        topics = field(body, "Topics", list)
        if not self.is_active():
            refusal = _not_controller("not the active controller").body
            return {**refusal, "Topics": [{"Name": t.get("Name") if isinstance(t, dict) else None, **refusal}
                                          for t in topics]}
        out = []
        for t in topics:
            if not isinstance(t, dict):
                raise InvalidRequest("each of Topics must be an object")
            name, parts = field(t, "Name", str), field(t, "NumPartitions", int)
            rf, configs = field(t, "ReplicationFactor", int), field(t, "Configs", dict, optional=True) or {}
            out.append({"Name": name, **await self._create_one(name, parts, rf, configs)})
        return {"ErrorCode": errors.NONE, "Topics": out}

    async def _create_one(self, name: str, parts: int, rf: int, configs: dict) -> dict:
        if parts > MAX_PARTITIONS:
            return {"ErrorCode": errors.INVALID_PARTITIONS, "ErrorMessage": f"at most {MAX_PARTITIONS} partitions"}

        def build(image: MetadataImage, offset: int) -> list[dict]:
            topic_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"kraft:{self.node.cluster_id}/{name}/{offset}"))
            return create_topic(image, name, topic_id, parts, rf, configs)
        try:
            await self._write(build)
        except Rejected as e:
            return {"ErrorCode": e.code, "ErrorMessage": e.message}
        except Refused as e:
            return e.body
        log.info("created topic %s (%d partitions, replication factor %d)", name, parts, rf)
        return {"ErrorCode": errors.NONE}

    async def handle_alter_partition(self, body: dict) -> dict:
        """AlterPartition (56) ``{"BrokerId", "BrokerEpoch", "Topics": [{"Name",
        "Partitions": [{"PartitionIndex", "LeaderEpoch", "PartitionEpoch", "NewIsr"}]}]}``
        -> ``{"ErrorCode", "Topics": [{"Name", "Partitions": [{"PartitionIndex",
        "ErrorCode", "LeaderId", "LeaderEpoch", "PartitionEpoch", "Isr"}]}]}`` (KIP-497):
        every accepted change commits in one batch before the answer. Top-level
        errors NOT_CONTROLLER, STALE_BROKER_EPOCH, REQUEST_TIMED_OUT; per partition
        those of :func:`kraft.controller.partition_election.alter_partition`."""
        bid, epoch = field(body, "BrokerId", int), field(body, "BrokerEpoch", int)
        reqs = []
        for t in field(body, "Topics", list):
            if not isinstance(t, dict):
                raise InvalidRequest("each of Topics must be an object")
            name = field(t, "Name", str)
            for p in field(t, "Partitions", list):
                if not isinstance(p, dict):
                    raise InvalidRequest("each of Partitions must be an object")
                isr = field(p, "NewIsr", list)
                if any(type(x) is not int for x in isr):
                    raise InvalidRequest("NewIsr must be a list of broker ids")
                reqs.append((name, field(p, "PartitionIndex", int), field(p, "LeaderEpoch", int),
                             field(p, "PartitionEpoch", int), isr))
        results: dict[tuple[str, int], int] = {}

        def build(image: MetadataImage, offset: int) -> list[dict]:
            b = image.brokers.get(bid)
            if b is None or b.epoch != epoch:
                raise Rejected(errors.STALE_BROKER_EPOCH, f"broker {bid} epoch {epoch} is not registered")
            changes = []
            for name, index, le, pe, isr in reqs:
                try:
                    new = alter_partition(image, bid, name, index, le, pe, isr)
                except Rejected as e:
                    results[(name, index)] = e.code
                    continue
                results[(name, index)] = errors.NONE
                if new is not image.partitions[(name, index)]:
                    changes.append(new.to_change())
            return changes
        try:
            await self._write(build)
        except Rejected as e:
            return {"ErrorCode": e.code, "ErrorMessage": e.message, "Topics": []}
        except Refused as e:
            return {**e.body, "Topics": []}
        return {"ErrorCode": errors.NONE, "Topics": self._alter_answer(reqs, results)}

    def _alter_answer(self, reqs: list, results: dict) -> list[dict]:
        image, by_topic = self.image, {}
        for name, index, *_ in reqs:
            st = image.partitions.get((name, index))
            entry = {"PartitionIndex": index, "ErrorCode": results.get((name, index), errors.UNKNOWN_SERVER_ERROR)}
            if st is not None:
                entry.update(LeaderId=st.leader, LeaderEpoch=st.leader_epoch,
                             PartitionEpoch=st.partition_epoch, Isr=list(st.isr))
            by_topic.setdefault(name, []).append(entry)
        return [{"Name": n, "Partitions": ps} for n, ps in by_topic.items()]
