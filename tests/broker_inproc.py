"""In-process data-plane clusters for tests: C controllers (the metadata quorum) and B
brokers (``process.roles=broker``, observers of the quorum), real TCP on loopback."""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from typing import AsyncIterator

from kraft.core import errors
from kraft.runtime.config import NodeConfig
from kraft.storage.meta import format_dir
from kraft.wire import api
from kraft.wire.client import ClientError, KraftClient
from tests.kraft_inproc import CLUSTER_ID, Running, free_ports, make_configs

#: Broker timers, fast for tests (ms).
BROKER_FAST = dict(election_timeout_ms=150, fetch_timeout_ms=300, request_timeout_ms=2000,
                   fetch_max_wait_ms=100, election_backoff_max_ms=100, replica_fetch_wait_max_ms=100,
                   replica_lag_time_max_ms=1000, replica_hw_checkpoint_interval_ms=100,
                   log_flush_interval_ms=200)


def broker_configs(root, controllers: list[NodeConfig], n: int, **overrides) -> list[NodeConfig]:
    """Configs for ``n`` brokers (ids after the controllers'): static voters (for the
    controllers' endpoints at kraft.version 0) and bootstrap servers (to find the leader)."""
    ports = free_ports(n)
    first = max(c.node_id for c in controllers) + 1
    voters = controllers[0].voters
    out = []
    for i, port in enumerate(ports):
        bid = first + i
        d = root / f"n{bid}"
        if not (d / "meta.properties").exists():
            format_dir(d, CLUSTER_ID, bid)
        kw = dict(node_id=bid, listen_host="127.0.0.1", listen_port=port, voters=voters,
                  bootstrap_servers=tuple((v.host, v.port) for v in voters), data_dir=d,
                  process_roles="broker", seed=bid, **BROKER_FAST)
        kw.update(overrides)
        out.append(NodeConfig(**kw))
    return out


@dataclasses.dataclass
class DataPlane:
    """The running cluster: ``controllers`` and ``brokers`` keyed by node id."""

    controllers: dict[int, Running]
    brokers: dict[int, Running]

    def client(self, bid: int, timeout_ms: int = 5000) -> KraftClient:
        return KraftClient("127.0.0.1", self.brokers[bid].cfg.listen_port, CLUSTER_ID, timeout_ms=timeout_ms)

    async def call(self, bid: int, key: int, body: dict) -> dict:
        c = self.client(bid)
        try:
            return await c.request(key, body)
        finally:
            await c.close()


@contextlib.asynccontextmanager
async def data_plane(root, controllers: int = 3, brokers: int = 3, broker_overrides: dict | None = None,
                     session_ms: int = 1500) -> AsyncIterator[DataPlane]:
    """Start the controllers, then the brokers; crash all on exit."""
    ccfgs = make_configs(root, controllers, broker_session_timeout_ms=session_ms)
    cs = {c.node_id: await Running(c).start() for c in ccfgs}
    bs = {}
    try:
        for c in broker_configs(root, ccfgs, brokers, **(broker_overrides or {})):
            bs[c.node_id] = await Running(c).start()
        yield DataPlane(cs, bs)
    finally:
        for r in [*bs.values(), *cs.values()]:
            with contextlib.suppress(Exception):
                await r.crash()


async def eventually(pred, timeout_s: float = 15.0, what: str = "condition"):
    """Poll ``pred()`` (sync or async) until truthy; returns it. Raises TimeoutError."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        try:
            v = pred()
            if asyncio.iscoroutine(v):
                v = await v
        except ClientError:
            v = None
        if v:
            return v
        if loop.time() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def partition_state(dp: DataPlane, bid: int, topic: str, index: int) -> dict | None:
    """The partition as broker ``bid``'s Metadata answer shows it, or None."""
    body = await dp.call(bid, api.METADATA, {})
    for t in body.get("Topics", []):
        if t["Name"] == topic:
            for p in t["Partitions"]:
                if p["Index"] == index:
                    return p
    return None


async def create_topic(dp: DataPlane, via: int, topic: str, partitions: int, rf: int, configs: dict) -> None:
    """CreateTopics through broker ``via`` (forwarded), then wait for every live broker to
    know a leader of every partition."""
    async def create():
        body = await dp.call(via, api.CREATE_TOPICS, {"Topics": [
            {"Name": topic, "NumPartitions": partitions, "ReplicationFactor": rf, "Configs": configs}]})
        code = body["Topics"][0]["ErrorCode"]
        return code in (errors.NONE, errors.TOPIC_ALREADY_EXISTS)   # until every broker is unfenced:
    await eventually(create, what="CreateTopics done")               # INVALID_REPLICATION_FACTOR
    for bid in dp.brokers:
        for i in range(partitions):
            await eventually(lambda: _has_leader(dp, bid, topic, i), what=f"broker {bid} sees {topic}-{i}")


async def _has_leader(dp, bid, topic, i):
    p = await partition_state(dp, bid, topic, i)
    return p is not None and p["Leader"] >= 0
