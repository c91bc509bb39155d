"""The broker role (``process.roles=broker``): an asyncio adapter over the brokers' replication
core (kraft/replication/), driven by the metadata the controllers commit
(docs/data-plane.md; Kafka 0.8's replication design; KIP-631 broker lifecycle; KIP-101).

The broker's RaftNode is an observer of the metadata quorum: it replicates the
metadata log and replays committed Metadata records into ``node.metadata.image``
(kraft/state_machines/metadata_replay.py). The :class:`BrokerService`:

- drives the broker's lifecycle core (kraft/broker/lifecycle.py): its registration and
  heartbeats go to the active controller (kraft/broker/controller_channel.py finds it),
  every new image goes to it, and the LeaderAndIsr and ClusterView it derives go to the
  replication core, each replica opened (kraft/storage/partition.py) before its first;
- carries out the core's effects: replies, ReplicaFetch and OffsetForLeaderEpoch to
  the partition leaders (one connection per partition and role generation), timers,
  the partition logs and checkpoints, and AlterPartition (56) for its ISR proposals;
- serves the broker RPCs: the replication ones through the core (kraft/wire/broker_codec.py),
  Metadata from its image, CreateTopics forwarded to the active controller.
"""
from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import TYPE_CHECKING

from ..controller import codec as controller_codec
from ..controller.messages import AlterPartitionRequest, IsrChange
from ..core import errors
from ..core.events import ProposeIsr, Replied, Send
from ..core.rpc import field
from ..core.unsafe import Unsafe
from ..replication import BrokerConfig, BrokerCore
from ..replication.messages import IsrAnswer, LeaderAndIsr
from ..runtime.driver import AsyncDriver
from ..state_machines.metadata_image import MetadataImage
from ..storage.partition import PartitionReplica
from ..wire import api
from ..wire.broker_codec import decode_request, decode_response, encode_request, encode_response
from ..wire.client import ClientError, DefiniteError, KraftClient
from .controller_channel import ControllerChannel
from .lifecycle import BrokerLifecycle, ImageUpdated

if TYPE_CHECKING:
    from ..runtime.raft import RaftNode

log = logging.getLogger("kraft.broker")

#: How long close() waits for the broker's tasks to end (s).
CLOSE_WAIT_S = 2.0
#: The replication RPCs the core serves.
CORE_APIS = (api.PRODUCE, api.LIST_OFFSETS, api.OFFSET_FOR_LEADER_EPOCH, api.CONSUMER_FETCH, api.REPLICA_FETCH)


class BrokerService:
    """The data plane of the broker ``node``. ``handlers()`` for the server; ``start()``
    inside the event loop, ``await close()`` on shutdown (flushes and checkpoints)."""

    def __init__(self, node: "RaftNode"):
        self.node, self.cfg = node, node.cfg
        self.broker_id = node.id
        cfg = self.cfg
        self.core = BrokerCore(BrokerConfig(
            broker_id=node.id, replica_lag_time_max_ms=cfg.replica_lag_time_max_ms,
            hw_checkpoint_interval_ms=cfg.replica_hw_checkpoint_interval_ms,
            log_flush_interval_ms=cfg.log_flush_interval_ms, replica_fetch_wait_max_ms=cfg.replica_fetch_wait_max_ms,
            request_timeout_ms=cfg.request_timeout_ms, fetch_backoff_ms=max(cfg.retry_backoff_ms, 50),
            fetch_max_records=cfg.fetch_max_records, unsafe=Unsafe.of(cfg.unsafe)),
            clock=lambda: time.monotonic() * 1000.0)
        self.partitions: dict[tuple[str, int], PartitionReplica] = {}
        self.lifecycle = BrokerLifecycle(node.id, cfg.listen_host, cfg.listen_port, str(uuid.uuid4()),
                                         clock=lambda: time.monotonic() * 1000.0)
        self.channel = ControllerChannel(node, cfg.request_timeout_ms)
        self._image_due = False
        self.driver = AsyncDriver(self.core, self._send, self._carry_out)
        self.lifecycle_driver = AsyncDriver(self.lifecycle, self._to_controller, self._lifecycle_effect)
        self._fetchers: dict[tuple, tuple[int, KraftClient]] = {}   # partition -> (generation, client)
        self._closed = False

    @property
    def image(self) -> MetadataImage:
        """The committed metadata as this broker has replayed it."""
        return self.node.metadata.image

    @property
    def broker_epoch(self) -> int:
        """This broker's epoch (the offset of its registration), -1 while unregistered."""
        return self.lifecycle.broker_epoch

    def handlers(self) -> dict:
        """The broker RPCs by api key (for kraft/node/server.py)."""
        out = {key: self._serve(key) for key in CORE_APIS}
        out.update({api.METADATA: self.metadata, api.CREATE_TOPICS: self.create_topics})
        return out

    # -- lifecycle ----------------------------------------------------------------------
    def start(self) -> None:
        """Hook the metadata replay and start the lifecycle (registration first)."""
        self.node.metadata.listeners.append(self._on_image)
        self.lifecycle_driver.run(self.lifecycle.start())
        self.lifecycle_driver.feed(ImageUpdated(self.image))

    async def close(self) -> None:
        """Stop every task, then flush, checkpoint and close every partition log."""
        self._closed = True
        if self._on_image in self.node.metadata.listeners:
            self.node.metadata.listeners.remove(self._on_image)
        self.driver.call(self._offline_all)     # ends every fetcher's generation; produces are answered
        tasks = self.driver.close() + self.lifecycle_driver.close()
        if tasks:
            await asyncio.wait(tasks, timeout=CLOSE_WAIT_S)
        for r in self.partitions.values():
            try:
                r.close()
            except OSError as e:
                log.warning("%s: close failed: %s", r.name, e)
        for _, client in self._fetchers.values():
            await client.close()
        await self.channel.close()

    def _offline_all(self) -> None:
        for st in self.core.states.values():
            st.become_offline(st.leader_epoch)

    # -- carrying out the core's effects (kraft/runtime/driver.py does replies, timers and sends) ---------
    def _carry_out(self, e) -> list:
        if type(e) is ProposeIsr:
            self.driver.spawn(self._alter(e))
            return []
        r = self.partitions.get(e.log)           # the partition's disk
        if r is None:
            return []
        try:
            return r.apply(e)
        except OSError as err:
            log.warning("%s: %s failed: %s", r.name, type(e).__name__, err)
            return []

    async def _send(self, e: Send) -> None:
        """A follower's request to its partition leader, on the partition's connection."""
        key = e.msg.key
        gen_client = self._fetchers.get(key)
        if gen_client is None or gen_client[0] != e.gen:
            if gen_client is not None:
                self.driver.spawn(gen_client[1].close())
            b = self.image.brokers.get(e.to)
            if b is None:
                log.debug("%s-%d: leader %d is not a registered broker", key[0], key[1], e.to)
                await asyncio.sleep(0)
                self.driver.feed(Replied(e.to, e.msg, None, e.gen))
                return
            gen_client = self._fetchers[key] = (e.gen, KraftClient(
                b.host, b.port, self.node.cluster_id,
                timeout_ms=self.cfg.request_timeout_ms + self.cfg.replica_fetch_wait_max_ms))
        api_key, body = encode_request(e.msg)
        resp = None
        try:
            resp = decode_response(e.msg, await gen_client[1].request(api_key, body))
        except ClientError as err:
            log.debug("%s-%d: %s to leader %d failed: %s", key[0], key[1], api.NAMES[api_key], e.to, err)
        if not self._closed:
            self.driver.feed(Replied(e.to, e.msg, resp, e.gen))

    # -- the lifecycle core (KIP-631 registration and heartbeats; LeaderAndISR from the image) ---------
    async def _to_controller(self, e: Send) -> None:
        """A lifecycle request to the active controller; its answer (None: none came) goes back."""
        api_key, body = controller_codec.encode_request(e.msg)
        resp = None
        try:
            resp = controller_codec.decode_response(
                e.msg, await self.channel.request(api_key, body, self.cfg.request_timeout_ms / 1000.0))
        except ClientError as err:
            log.debug("controller request failed: %s", err)
        if not self._closed:
            self.lifecycle_driver.feed(Replied(e.to, e.msg, resp, e.gen))

    def _lifecycle_effect(self, e) -> list:
        """A command for the replication core: a LeaderAndIsr opens the replica first."""
        if type(e) is LeaderAndIsr and e.key not in self.partitions and self._open(e.key) is None:
            return []
        if not self._closed:
            self.driver.feed(e)
        return []

    def _on_image(self, image: MetadataImage) -> None:
        """A listener of the metadata replay (inside the quorum core's step): fed after it."""
        if not self._image_due:
            self._image_due = True
            asyncio.get_running_loop().call_soon(self._feed_image)

    def _feed_image(self) -> None:
        self._image_due = False
        if not self._closed:
            self.lifecycle_driver.feed(ImageUpdated(self.image))

    def _open(self, key: tuple[str, int]) -> PartitionReplica | None:
        """startReplica: open (creating) the local replica of ``key``."""
        r = PartitionReplica(self.cfg.data_dir, key[0], key[1], self.broker_id, self.cfg.segment_bytes)
        try:
            r.open(self.core)
        except OSError as e:
            log.error("cannot open partition %s-%d: %s", key[0], key[1], e)
            return None
        self.partitions[key] = r
        return r

    async def _alter(self, e: ProposeIsr) -> None:
        """AlterPartition (KIP-497) for the core's ISR proposal; the answer goes back as IsrAnswer."""
        msg = AlterPartitionRequest(self.broker_id, self.broker_epoch, (
            IsrChange(e.log[0], e.log[1], e.leader_epoch, e.partition_epoch, tuple(e.isr)),))
        api_key, body = controller_codec.encode_request(msg)
        try:
            resp = controller_codec.decode_response(
                msg, await self.channel.request(api_key, body, self.cfg.request_timeout_ms / 1000.0))
            code = resp.error_code
            if code == errors.NONE and resp.partitions:
                code = resp.partitions[0].error_code
        except ClientError:
            code = errors.REQUEST_TIMED_OUT
        if not self._closed:
            self.driver.feed(IsrAnswer(e.log, e.isr, e.partition_epoch, code))

    # -- RPCs ---------------------------------------------------------------------------------
    def _serve(self, api_key: int):
        async def handle(body: dict) -> dict:
            msg = decode_request(api_key, body, self.cfg.fetch_max_records)
            state = self.image.partitions.get(msg.key)
            if state is None:
                return {"ErrorCode": errors.UNKNOWN_TOPIC_OR_PARTITION,
                        "ErrorMessage": f"{msg.key[0]}-{msg.key[1]} is not in this broker's metadata"}
            resp = await self.driver.ask(msg)
            if resp.error_code == errors.NOT_LEADER_OR_FOLLOWER:
                state = self.image.partitions.get(msg.key) or state
                return {"ErrorCode": errors.NOT_LEADER_OR_FOLLOWER, "LeaderId": state.leader,
                        "LeaderEpoch": state.leader_epoch,
                        "ErrorMessage": f"broker {self.broker_id} does not lead {state.topic}-{state.partition}"}
            return encode_response(api_key, resp)
        return handle

    async def metadata(self, body: dict) -> dict:
        """Metadata -> brokers and topics from this broker's image (docs/data-plane.md)."""
        image = self.image
        brokers = [{"Id": b.id, "Host": b.host, "Port": b.port, "Fenced": b.fenced}
                   for b in sorted(image.brokers.values(), key=lambda b: b.id)]
        topics = [{"Name": name, "Partitions": [
            {"Index": p.partition, "Leader": p.leader, "LeaderEpoch": p.leader_epoch,
             "Isr": list(p.isr), "Replicas": list(p.replicas)} for p in image.topic_partitions(name)]}
            for name in sorted(image.topics)]
        return {"ErrorCode": errors.NONE, "Brokers": brokers, "Topics": topics,
                "MetadataOffset": image.offset}

    async def create_topics(self, body: dict) -> dict:
        """CreateTopics: forwarded to the active controller; its answer is returned. When no
        controller answers, every topic gets NOT_CONTROLLER (certainly not sent) or
        REQUEST_TIMED_OUT (maybe sent)."""
        topics = field(body, "Topics", list)
        fwd = {k: v for k, v in body.items() if k != "ClusterId"}
        try:
            return await self.channel.request(api.CREATE_TOPICS, fwd, self.cfg.request_timeout_ms / 1000.0)
        except ClientError as e:
            code = errors.NOT_CONTROLLER if isinstance(e, DefiniteError) else errors.REQUEST_TIMED_OUT
            names = [t.get("Name") for t in topics if isinstance(t, dict)]
            return {"ErrorCode": errors.NONE, "Topics": [{"Name": n, "ErrorCode": code,
                                                          "ErrorMessage": str(e)} for n in names]}
