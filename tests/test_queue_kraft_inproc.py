"""targets/kraft_queue.py against our real brokers, in process (tests/broker_inproc.py: 3
controllers and 3 brokers on loopback): a topic created through the client, sends routed
to each partition's leader, polls and end offsets, and a leader's death seen as
definite/indefinite errors until the client follows the new leader. Waits use
deadlines; nothing asserts on timing."""
from __future__ import annotations

import asyncio

import pytest

from history.outcomes import ClientError, DefiniteError
from targets.kraft_queue import KraftQueueClient, kraft_queue_factory
from tests.broker_inproc import data_plane, eventually, partition_state
from tests.kraft_inproc import CLUSTER_ID

CONFIGS = {"min.insync.replicas": 2, "unclean.leader.election.enable": False}


async def _client(dp, **kw) -> KraftQueueClient:
    eps = tuple(f"127.0.0.1:{r.cfg.listen_port}" for r in dp.brokers.values())
    return KraftQueueClient(eps, CLUSTER_ID, **{"timeout_ms": 3000, **kw})


async def _create(client, topic, partitions, configs=CONFIGS):
    """Create through the client until every broker is registered and unfenced (before, the
    controller answers INVALID_REPLICATION_FACTOR), then until each partition answers."""
    async def create():
        try:
            await client.create_topic(topic, partitions, 3, configs)
        except DefiniteError as e:
            if e.code == "TOPIC_ALREADY_EXISTS":
                return True
            raise
        return True

    async def attempt():
        try:
            return await create()
        except DefiniteError as e:
            if e.code == "INVALID_REPLICATION_FACTOR":
                return None
            raise
    await eventually(attempt, what="CreateTopics")
    for p in range(partitions):
        await eventually(lambda: _answers(client, topic, p), what=f"{topic}-{p} answers")


async def _answers(client, topic, p):
    try:
        await client.end_offset(topic, p)
        return True
    except ClientError:
        return False


def test_sends_polls_and_end_offsets_on_real_brokers(tmp_path):
    async def main():
        async with data_plane(tmp_path) as dp:
            client = await _client(dp)
            try:
                await _create(client, "q", 3)
                with pytest.raises(DefiniteError) as e:
                    await client.create_topic("q", 3, 3, CONFIGS)
                assert e.value.code == "TOPIC_ALREADY_EXISTS"
                acked = {p: [] for p in range(3)}
                for v in range(30):
                    acked[v % 3].append((await client.send("q", v % 3, v), v))
                for p in range(3):
                    assert [o for o, _ in acked[p]] == list(range(10))
                    assert await client.end_offset("q", p) == 10
                    assert await client.poll("q", p, 0, 100) == acked[p]
                    assert await client.poll("q", p, 10, 100) == []
                    leader = client.leaders[("q", p)]
                    assert client.brokers[leader] == ("127.0.0.1", dp.brokers[leader].cfg.listen_port)
                with pytest.raises(DefiniteError) as e:
                    await client.poll("q", 0, 50, 10)
                assert e.value.code == "OFFSET_OUT_OF_RANGE"
                with pytest.raises(DefiniteError):
                    await client.create_topic("r", 1, 9, CONFIGS)          # more replicas than brokers
            finally:
                await client.close()

    asyncio.run(main())


def test_the_client_follows_a_new_leader_after_the_old_one_dies(tmp_path):
    async def main():
        async with data_plane(tmp_path) as dp:
            client = await _client(dp, timeout_ms=1500)
            try:
                await _create(client, "f", 1)
                assert await client.send("f", 0, 1) == 0
                old = client.leaders[("f", 0)]
                await dp.brokers.pop(old).crash()
                outcomes = []

                async def sent():
                    try:
                        return await client.send("f", 0, 2)
                    except ClientError as e:
                        outcomes.append(type(e).__name__)
                        return None
                offset = await eventually(sent, timeout_s=30, what="a send to the new leader")
                assert client.leaders[("f", 0)] != old and client.leaders[("f", 0)] in dp.brokers
                assert outcomes                              # the dead leader's refusals came first
                survivor = next(iter(dp.brokers))
                p = await partition_state(dp, survivor, "f", 0)
                assert p["Leader"] == client.leaders[("f", 0)]
                records = await client.poll("f", 0, 0, 10)
                assert records[0] == (0, 1) and (offset, 2) in records
            finally:
                await client.close()

    asyncio.run(main())


def test_acks_all_below_min_insync_is_a_definite_not_enough_replicas(tmp_path):
    async def main():
        async with data_plane(tmp_path) as dp:
            client = await _client(dp)
            try:
                await _create(client, "s", 1, {"min.insync.replicas": 3, "unclean.leader.election.enable": False})
                assert await client.send("s", 0, 1) == 0
                leader = client.leaders[("s", 0)]
                victim = next(b for b in dp.brokers if b != leader)
                await dp.brokers.pop(victim).crash()

                async def refused():
                    try:
                        await client.send("s", 0, 2)
                    except DefiniteError as e:
                        return e.code == "NOT_ENOUGH_REPLICAS"
                    except ClientError:
                        return False
                    return False
                await eventually(refused, timeout_s=20, what="NOT_ENOUGH_REPLICAS")
                acks1 = kraft_queue_factory(CLUSTER_ID)(tuple(f"{h}:{p}" for h, p in client.bootstrap), _Acks1())
                try:
                    assert await acks1.send("s", 0, 3) >= 1                     # acks=1 ignores it
                finally:
                    await acks1.close()
            finally:
                await client.close()

    asyncio.run(main())


class _Acks1:
    acks, timeout_ms = 1, 3000
