"""Both transactional clients (``targets/kafka/txn_clients.py``: ``librdkafka`` and Kafka's
Java client) against a real Kafka cluster of the newest release in Docker (1 controller, 3
brokers; topics of replication factor 3, ``min.insync.replicas=2``): idempotent sends with
their offsets, a committed transaction seen and an aborted one unseen by a read_committed
consumer, ``send_offsets_to_transaction`` committing the group's offsets, seeking back, a
crash and a fresh session with the same transactional.id, and the Java client's JVM killed
in the middle of an op.

One cluster for the module (about a minute to start with a cached image). With
``KRAFT_CHAOS_TEST_KAFKA_BOOTSTRAP=host:port,...`` the tests use that cluster instead (it
must be the default Kafka release, with 3 brokers).
"""
from __future__ import annotations

import asyncio
import os
import time
import uuid

import pytest

from targets.kafka.releases import DEFAULT_VERSION
from targets.kafka.txn_clients import check_client, client_factory
from targets.txn_client import SessionConfig, TxnIndefiniteError

pytestmark = [pytest.mark.docker, pytest.mark.kafka]

SUBNET = "10.138.0.0/24"
CLIENTS = ("librdkafka", "java")


class Cluster:
    def __init__(self, bootstrap: tuple[str, ...]):
        self.bootstrap = bootstrap

    def topic(self, partitions: int = 2) -> str:
        """A new topic (replication factor 3, min.insync.replicas 2), every partition led."""
        from harness.bench.txn_clients import KafkaCluster
        name = f"t-{uuid.uuid4().hex[:10]}"
        KafkaCluster(None, self.bootstrap).create_topic(name, partitions)
        return name


@pytest.fixture(scope="module")
def cluster(request):
    env = os.environ.get("KRAFT_CHAOS_TEST_KAFKA_BOOTSTRAP")
    if env:
        yield Cluster(tuple(env.split(",")))
        return
    engine = request.getfixturevalue("engine")
    from harness.bench.txn_clients import kafka_cluster
    with kafka_cluster(engine, DEFAULT_VERSION, SUBNET, controllers=1, brokers=3, name="txn-clients") as kc:
        yield Cluster(kc.bootstrap)


def _config(cluster: Cluster, *, txn: bool = True, group: str | None = None, txn_id: str | None = None,
            **kw) -> SessionConfig:
    return SessionConfig(cluster.bootstrap, group_id=group or f"g-{uuid.uuid4().hex[:8]}",
                         transactional_id=(txn_id or f"tx-{uuid.uuid4().hex[:8]}") if txn else None,
                         timeout_ms=10_000, **kw)


def run(client: str, body):
    """``body(factory)`` in a fresh event loop with the client's factory, closed after."""
    check_client(client, DEFAULT_VERSION)

    async def main():
        factory = client_factory(client, DEFAULT_VERSION)
        try:
            return await body(factory)
        finally:
            await factory.aclose()
    return asyncio.run(main())


async def poll_until(s, want: int, timeout_s: float = 30.0) -> dict:
    """Poll session ``s`` until ``want`` records came (or ``timeout_s``): ``{key: [(offset,
    value), ...]}``."""
    out: dict = {}
    deadline = time.monotonic() + timeout_s
    while sum(map(len, out.values())) < want and time.monotonic() < deadline:
        for k, rs in (await s.poll()).items():
            out.setdefault(k, []).extend(rs)
    return out


async def read_all(factory, cluster: Cluster, keys, want: int) -> dict:
    """A fresh read_committed consumer's records of ``keys`` from the beginning, polled until
    ``want`` records came: ``{key: [(offset, value), ...]}``."""
    s = factory.session(_config(cluster, txn=False))
    await s.open()
    await s.assign(keys, from_beginning=True)
    try:
        return await poll_until(s, want)
    finally:
        await s.close()


@pytest.mark.parametrize("client", CLIENTS)
def test_idempotent_sends_and_polls(cluster, client):
    topic = cluster.topic()
    key = (topic, 1)

    async def body(factory):
        s = factory.session(_config(cluster, txn=False))
        info = await s.open()
        assert info["transaction_version"] is None
        offsets = [await s.send(key, v) for v in range(100, 120)]
        await s.close()
        read = await read_all(factory, cluster, [key], 20)
        return offsets, read
    offsets, read = run(client, body)
    assert offsets == list(range(offsets[0], offsets[0] + 20))      # one record each, in order
    assert read == {key: [(o, v) for o, v in zip(offsets, range(100, 120))]}


@pytest.mark.parametrize("client", CLIENTS)
def test_committed_transaction_is_read_and_aborted_one_is_not(cluster, client):
    topic = cluster.topic()
    k0, k1 = (topic, 0), (topic, 1)

    async def body(factory):
        s = factory.session(_config(cluster))
        info = await s.open()
        await s.begin()
        a, b = await s.send(k0, 1), await s.send(k1, 2)
        await s.commit()
        await s.begin()
        c = await s.send(k0, 3)
        await s.abort()
        await s.begin()
        d = await s.send(k0, 4)
        await s.commit()
        await s.close()
        return info, (a, b, c, d), await read_all(factory, cluster, [k0, k1], 3), factory.describe()
    info, (a, b, c, d), read, described = run(client, body)
    assert a < c < d
    assert read == {k0: [(a, 1), (d, 4)], k1: [(b, 2)]}      # 3 was aborted: never read
    assert info["transaction_version"] == described["transaction_version"]
    if client == "java":
        assert info["transaction_version"] == 2 and described["kafka_clients"] == DEFAULT_VERSION
    else:
        assert info["transaction_version"] == 0 and described["librdkafka"]


@pytest.mark.parametrize("client", CLIENTS)
def test_send_offsets_to_transaction_commits_the_groups_offsets(cluster, client):
    from confluent_kafka import Consumer, TopicPartition
    topic = cluster.topic()
    key = (topic, 0)
    group = f"g-{uuid.uuid4().hex[:8]}"

    async def body(factory):
        w = factory.session(_config(cluster))
        await w.open()
        await w.begin()
        sent = [await w.send(key, v) for v in (7, 8, 9)]
        await w.commit()
        await w.close()
        s = factory.session(_config(cluster, group=group))
        await s.open()
        await s.assign([key], from_beginning=True)
        await s.begin()
        got = (await poll_until(s, 3)).get(key, [])
        offsets = await s.send_offsets()
        await s.commit()
        await s.close()
        return sent, got, offsets
    sent, got, offsets = run(client, body)
    assert [v for _o, v in got] == [7, 8, 9] and [o for o, _v in got] == sent
    assert offsets == {key: sent[-1] + 1}
    c = Consumer({"bootstrap.servers": ",".join(cluster.bootstrap), "group.id": group})
    try:
        (tp,) = c.committed([TopicPartition(topic, 0)], timeout=10)
    finally:
        c.close()
    assert tp.offset == sent[-1] + 1


@pytest.mark.parametrize("client", CLIENTS)
def test_seek_back_rereads_what_the_op_read(cluster, client):
    topic = cluster.topic()
    key = (topic, 0)

    async def body(factory):
        s = factory.session(_config(cluster, txn=False))
        await s.open()
        for v in range(5):
            await s.send(key, v)
        await s.assign([key], from_beginning=True)
        s.mark()
        first = (await poll_until(s, 5)).get(key, [])
        await s.seek_back()                          # the op failed: back to where it began
        again = (await poll_until(s, 5)).get(key, [])
        s.mark()                                     # a new op, then back to its start
        await s.send(key, 5)
        more = (await poll_until(s, 1)).get(key, [])
        await s.seek_back()
        last = (await poll_until(s, 1)).get(key, [])
        await s.close()
        return first, again, more, last
    first, again, more, last = run(client, body)
    assert [v for _o, v in first] == [0, 1, 2, 3, 4] and again == first
    assert [v for _o, v in more] == [5] and last == more


@pytest.mark.parametrize("client", CLIENTS)
def test_crash_then_a_fresh_session_with_the_same_transactional_id(cluster, client):
    topic = cluster.topic()
    key = (topic, 0)
    txn_id = f"tx-{uuid.uuid4().hex[:8]}"

    async def body(factory):
        s = factory.session(_config(cluster, txn_id=txn_id))
        await s.open()
        await s.begin()
        lost = await s.send(key, 1)           # acknowledged inside a transaction never committed
        await s.close()                        # the crash
        s2 = factory.session(_config(cluster, txn_id=txn_id))
        await s2.open()                        # initTransactions: the crashed transaction is aborted
        await s2.begin()
        kept = await s2.send(key, 2)
        await s2.commit()
        await s2.close()
        return lost, kept, await read_all(factory, cluster, [key], 1)
    lost, kept, read = run(client, body)
    assert lost < kept
    assert read == {key: [(kept, 2)]}


def test_java_client_killed_mid_op_is_indefinite_and_replaced(cluster):
    topic = cluster.topic()
    key = (topic, 0)

    async def body(factory):
        s = factory.session(_config(cluster, poll_ms=8000))
        await s.open()
        await s.assign([key], from_beginning=True)
        pid = s.info()["jvm_pid"]
        poll = asyncio.create_task(s.poll())         # nothing to read: waits 8 s in the JVM
        await asyncio.sleep(1.0)
        factory.kill_jvm()
        with pytest.raises(TxnIndefiniteError) as mid:
            await poll
        with pytest.raises(TxnIndefiniteError) as after:
            await s.send(key, 1)
        await s.close()
        s2 = factory.session(_config(cluster))
        await s2.open()                               # a new JVM
        await s2.begin()
        offset = await s2.send(key, 2)
        await s2.commit()
        pid2 = s2.info()["jvm_pid"]
        await s2.close()
        return mid.value, after.value, pid, pid2, offset, factory.jvms_started
    mid, after, pid, pid2, offset, started = run("java", body)
    assert mid.code == after.code == "client-crashed" and mid.fatal and after.fatal
    assert pid != pid2 and started == 2 and offset >= 0


@pytest.mark.parametrize("client", CLIENTS)
def test_subscribe_reads_the_topics_partitions_and_commits_as_a_group_member(cluster, client):
    from confluent_kafka import Consumer, TopicPartition
    topic = cluster.topic(2)
    group = f"g-{uuid.uuid4().hex[:8]}"

    async def body(factory):
        w = factory.session(_config(cluster, txn=False))
        await w.open()
        sent = {(topic, p): await w.send((topic, p), 10 + p) for p in (0, 1)}
        await w.close()
        s = factory.session(_config(cluster, group=group, session_timeout_ms=6000))
        await s.open()
        await s.subscribe([(topic, 0)])                 # the topic: both partitions
        await s.begin()
        got = await poll_until(s, 2, 40.0)            # after the group assigned the partitions
        offsets = await s.send_offsets()                # with the member's generation (KIP-447)
        await s.commit()
        await s.close()
        return sent, got, offsets
    sent, got, offsets = run(client, body)
    assert got == {k: [(o, 10 + k[1])] for k, o in sent.items()}
    assert offsets == {k: o + 1 for k, o in sent.items()}
    c = Consumer({"bootstrap.servers": ",".join(cluster.bootstrap), "group.id": group})
    try:
        committed = c.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=10)
    finally:
        c.close()
    assert {(tp.topic, tp.partition): tp.offset for tp in committed} == offsets
