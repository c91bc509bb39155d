"""targets/kraft_queue.py: the queue client for our brokers, against the fake brokers of
tests/queue_fakes.py: routing to the partition leader, metadata refresh, and the
definite/indefinite split of every error the data plane names."""
from __future__ import annotations

import asyncio

import pytest

from kraft.core import errors
from kraft.wire import api
from history.outcomes import DefiniteError, IndefiniteError
from targets.kraft_queue import KraftQueueClient, check_acks, kraft_queue_factory, parse_endpoint
from tests.queue_fakes import FakeBrokers

CONFIGS = {"min.insync.replicas": 2, "unclean.leader.election.enable": False}


def run(coro_fn, n: int = 3, **client_kw):
    """``await coro_fn(brokers, client)`` with fresh fake brokers and a client of them."""
    async def main():
        async with FakeBrokers(n) as brokers:
            client = KraftQueueClient(brokers.endpoints, "c1", **{"timeout_ms": 500, **client_kw})
            try:
                return await coro_fn(brokers, client)
            finally:
                await client.close()
    return asyncio.run(main())


async def _topic(brokers, client, partitions: int = 3):
    await client.create_topic("q", partitions, 3, CONFIGS)
    return brokers.topics["q"]   # the fake's metadata names the leaders at once


def test_create_send_poll_end_offset_route_to_the_leader():
    async def body(brokers, client):
        parts = await _topic(brokers, client)
        assert brokers.configs["q"] == CONFIGS
        assert [p.leader for p in parts] == [1, 2, 3]
        brokers.requests.clear()
        assert [await client.send("q", 1, v) for v in (10, 11, 12)] == [0, 1, 2]
        assert brokers.sent_to(api.PRODUCE) == [2, 2, 2]
        assert [b["Acks"] for _, k, b in brokers.requests if k == api.PRODUCE] == [-1, -1, -1]
        assert await client.poll("q", 1, 1, 10) == [(1, 11), (2, 12)]
        assert await client.end_offset("q", 1) == 3
        assert brokers.sent_to(api.CONSUMER_FETCH) == [2] and brokers.sent_to(api.LIST_OFFSETS) == [2]
        assert client.last_endpoint == brokers.endpoints[1]
    run(body)


def test_poll_reads_below_the_high_watermark_only():
    async def body(brokers, client):
        parts = await _topic(brokers, client, 1)
        for v in range(4):
            await client.send("q", 0, v)
        parts[0].hw = 2
        assert await client.poll("q", 0, 0, 10) == [(0, 0), (1, 1)]
        assert await client.poll("q", 0, 3, 10) == []          # between HW and LEO: empty
        assert await client.end_offset("q", 0) == 2
        with pytest.raises(DefiniteError) as e:                  # past the log end
            await client.poll("q", 0, 9, 10)
        assert e.value.code == "OFFSET_OUT_OF_RANGE"
    run(body)


def test_not_leader_is_definite_and_the_next_send_finds_the_new_leader():
    async def body(brokers, client):
        parts = await _topic(brokers, client, 1)
        await client.send("q", 0, 1)
        parts[0].leader = 3                                        # leadership moved
        with pytest.raises(DefiniteError) as e:
            await client.send("q", 0, 2)
        assert e.value.code == "NOT_LEADER_OR_FOLLOWER"
        assert parts[0].log == [1]
        brokers.requests.clear()
        assert await client.send("q", 0, 3) == 1
        assert [k for _, k, _ in brokers.requests] == [api.METADATA, api.PRODUCE]
        assert brokers.sent_to(api.PRODUCE) == [3]
    run(body)


@pytest.mark.parametrize("code,cls,appended", [
    (errors.NOT_ENOUGH_REPLICAS, DefiniteError, False),
    (errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND, IndefiniteError, True),
    (errors.REQUEST_TIMED_OUT, IndefiniteError, True),
    (errors.INVALID_REQUIRED_ACKS, DefiniteError, False),
    (errors.UNKNOWN_SERVER_ERROR, IndefiniteError, False),
])
def test_produce_errors_split_definite_and_indefinite(code, cls, appended):
    async def body(brokers, client):
        parts = await _topic(brokers, client, 1)
        brokers.errors[api.PRODUCE] = [code]
        with pytest.raises(cls) as e:
            await client.send("q", 0, 7)
        assert e.value.code == errors.name(code)
        assert parts[0].log == ([7] if appended else [])
        assert await client.send("q", 0, 8) == len(parts[0].log) - 1      # the client still works
    run(body)


def test_timeout_and_lost_connection_are_indefinite_a_down_broker_definite():
    async def body(brokers, client):
        await _topic(brokers, client, 1)
        brokers.silent.add(1)
        with pytest.raises(IndefiniteError) as e:
            await client.send("q", 0, 1)
        assert e.value.code == "timeout" and client.stale
        brokers.silent.clear()
        brokers.drop.add(1)
        with pytest.raises(IndefiniteError) as e:
            await client.send("q", 0, 2)
        assert e.value.code == "connection"
        brokers.drop.clear()
        await brokers.stop(1)                        # the leader is down: refused, nothing sent
        with pytest.raises(DefiniteError) as e:
            await client.send("q", 0, 3)
        assert e.value.code == "connection"
    run(body)


def test_no_leader_or_unknown_partition_is_definite_and_nothing_is_sent():
    async def body(brokers, client):
        parts = await _topic(brokers, client, 1)
        await client.send("q", 0, 0)
        parts[0].leader = -1
        with pytest.raises(DefiniteError) as e:      # the old leader refuses: metadata stale
            await client.send("q", 0, 1)
        assert e.value.code == "NOT_LEADER_OR_FOLLOWER"
        brokers.requests.clear()
        with pytest.raises(DefiniteError) as e:      # the refreshed metadata names no leader
            await client.send("q", 0, 1)
        assert e.value.code == "LEADER_NOT_AVAILABLE"
        assert brokers.sent_to(api.PRODUCE) == []
        with pytest.raises(DefiniteError) as e:
            await client.poll("nope", 0, 0, 1)
        assert e.value.code == "UNKNOWN_TOPIC_OR_PARTITION"
    run(body)


def test_metadata_survives_a_down_bootstrap_broker():
    async def body(brokers, client):
        await brokers.stop(2)
        await _topic(brokers, client, 1)       # some broker answers CreateTopics and Metadata
        assert await client.send("q", 0, 5) == 0
    run(body)


def test_a_broker_with_an_empty_or_old_image_sends_the_client_to_the_next():
    async def body(brokers, client):
        parts = await _topic(brokers, client, 1)
        await client.send("q", 0, 0)
        parts[0].leader, parts[0].epoch = 2, 4
        with pytest.raises(DefiniteError):                         # leader moved: refused
            await client.send("q", 0, 1)
        # broker 1 restarted: its image has no topic yet (KIP-631: it waits to re-register)
        brokers.images[1] = {"ErrorCode": 0, "Brokers": [], "Topics": [], "MetadataOffset": 3}
        client.stale = True
        brokers.requests.clear()
        assert await client.send("q", 0, 2) == len(parts[0].log) - 1
        assert brokers.sent_to(api.METADATA) == [1, 2] and brokers.sent_to(api.PRODUCE) == [2]
        # broker 1 names an old leader in an older epoch than the client saw: not trusted
        brokers.images[1] = {"ErrorCode": 0, "Brokers": [{"Id": 1, "Host": "127.0.0.1", "Port": brokers.ports[1]}],
                             "Topics": [{"Name": "q", "Partitions": [{"Index": 0, "Leader": 1, "LeaderEpoch": 3}]}]}
        client.stale = True
        brokers.requests.clear()
        await client.send("q", 0, 3)
        assert brokers.sent_to(api.METADATA) == [1, 2] and brokers.sent_to(api.PRODUCE) == [2]
        # no broker knows a live leader: the best answer is used, nothing is sent
        parts[0].leader = -1
        client.stale = True
        with pytest.raises(DefiniteError) as e:
            await client.send("q", 0, 4)
        assert e.value.code == "LEADER_NOT_AVAILABLE"
    run(body)


def test_a_refusal_naming_the_new_leader_in_a_newer_epoch_is_followed_at_once():
    async def body(brokers, client):
        parts = await _topic(brokers, client, 1)
        await client.send("q", 0, 1)
        parts[0].leader, parts[0].epoch = 3, 1                     # a new leader, a new epoch
        with pytest.raises(DefiniteError):
            await client.send("q", 0, 2)
        brokers.requests.clear()
        assert await client.send("q", 0, 3) == 1
        assert [k for _, k, _ in brokers.requests] == [api.PRODUCE] and brokers.sent_to(api.PRODUCE) == [3]
    run(body)


def test_create_topic_errors_and_retries():
    async def body(brokers, client):
        brokers.errors[19] = [38]                # INVALID_REPLICATION_FACTOR
        with pytest.raises(DefiniteError) as e:
            await client.create_topic("q", 1, 5, CONFIGS)
        assert e.value.code == "INVALID_REPLICATION_FACTOR"
        brokers.errors[19] = [errors.REQUEST_TIMED_OUT]
        with pytest.raises(IndefiniteError):
            await client.create_topic("q", 1, 3, CONFIGS)
        await client.create_topic("q", 1, 3, CONFIGS)
        with pytest.raises(DefiniteError) as e:
            await client.create_topic("q", 1, 3, CONFIGS)
        assert e.value.code == "TOPIC_ALREADY_EXISTS"
        assert len(brokers.topics["q"]) == 1
    run(body)


def test_acks_zero_and_one_reach_the_broker():
    async def body(brokers, client):
        await _topic(brokers, client, 1)
        assert await client.send("q", 0, 1) == -1
        assert [b["Acks"] for _, k, b in brokers.requests if k == api.PRODUCE] == [0]
    run(body, acks=0)


def test_bad_input_is_a_clear_value_error():
    with pytest.raises(ValueError, match="acks"):
        check_acks(2)
    assert check_acks("all") == -1 and check_acks(1) == 1
    with pytest.raises(ValueError, match="host:port"):
        parse_endpoint("nohost")
    with pytest.raises(ValueError, match="--brokers"):
        KraftQueueClient([], "c1")

    class Options:
        acks, timeout_ms = 1, 700
    c = kraft_queue_factory("c1")(("127.0.0.1:1",), Options())
    assert (c.acks, c.timeout_ms, c.cluster_id) == (1, 700, "c1")
