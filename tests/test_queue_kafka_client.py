"""targets/kafka/queue_client.py without a Kafka: the definite/indefinite split of
librdkafka's errors, the send path's delivery reports (a fake Producer), the producer
and consumer settings, and bad input. The client against real brokers is in
tests/integration/test_queue_run.py."""
from __future__ import annotations

import asyncio

import pytest
from confluent_kafka import KafkaError, KafkaException

from history.outcomes import DefiniteError, IndefiniteError
from targets.kafka.queue_client import (CREATE_DEFINITE, PRODUCE_DEFINITE, KafkaQueueClient, acks_config,
                                        client_error, decode_value, kafka_queue_factory, topic_config)


@pytest.mark.parametrize("code,cls,name", [
    # a refusal that depends on the moment may answer a re-sent attempt (librdkafka re-sends
    # after a leader change): the first attempt may be in the old leader's log
    (KafkaError.NOT_LEADER_FOR_PARTITION, IndefiniteError, "NOT_LEADER_OR_FOLLOWER"),
    (KafkaError.NOT_ENOUGH_REPLICAS, IndefiniteError, "NOT_ENOUGH_REPLICAS"),
    (KafkaError.UNKNOWN_TOPIC_OR_PART, IndefiniteError, "UNKNOWN_TOPIC_OR_PARTITION"),
    (KafkaError._PURGE_QUEUE, DefiniteError, "_PURGE_QUEUE"),
    (KafkaError._UNKNOWN_PARTITION, DefiniteError, "_UNKNOWN_PARTITION"),
    (KafkaError.MSG_SIZE_TOO_LARGE, DefiniteError, "MSG_SIZE_TOO_LARGE"),
    (KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND, IndefiniteError, "NOT_ENOUGH_REPLICAS_AFTER_APPEND"),
    (KafkaError.REQUEST_TIMED_OUT, IndefiniteError, "REQUEST_TIMED_OUT"),
    (KafkaError._MSG_TIMED_OUT, IndefiniteError, "_MSG_TIMED_OUT"),
    (KafkaError._TRANSPORT, IndefiniteError, "_TRANSPORT"),
    (KafkaError._PURGE_INFLIGHT, IndefiniteError, "_PURGE_INFLIGHT"),
])
def test_produce_errors_split_definite_and_indefinite(code, cls, name):
    err = client_error(KafkaError(code), PRODUCE_DEFINITE, "produce to q-0")
    assert type(err) is cls and err.code == name and "produce to q-0" in str(err)


def test_create_and_read_errors():
    assert type(client_error(KafkaException(KafkaError(KafkaError.TOPIC_ALREADY_EXISTS)),
                             CREATE_DEFINITE, "c")) is DefiniteError
    assert type(client_error(KafkaException(KafkaError(KafkaError.INVALID_CONFIG)), CREATE_DEFINITE, "c")) is DefiniteError
    assert type(client_error(KafkaError(KafkaError._TIMED_OUT), CREATE_DEFINITE, "c")) is IndefiniteError
    # reads change nothing: every error is definite but timeouts
    assert type(client_error(KafkaError(KafkaError.LEADER_NOT_AVAILABLE), None, "r")) is DefiniteError
    assert type(client_error(KafkaError(KafkaError._TIMED_OUT), None, "r")) is IndefiniteError


class FakeMessage:
    def __init__(self, offset):
        self._offset = offset

    def offset(self):
        return self._offset


class FakeProducer:
    """produce() queues the delivery report; poll() (the client's report thread) hands it over."""

    def __init__(self, outcome):
        self.outcome, self.pending, self.produced = outcome, [], []

    def produce(self, topic, value, partition, on_delivery):
        self.produced.append((topic, partition, value))
        self.pending.append(on_delivery)

    def poll(self, timeout):
        import time
        while self.pending:
            self.pending.pop(0)(*self.outcome)
        time.sleep(min(timeout, 0.01))

    def flush(self, timeout):
        return 0


def _send(outcome, **kw):
    async def main():
        c = KafkaQueueClient(["127.0.0.1:1"], timeout_ms=500, **kw)
        fake = FakeProducer(outcome)
        c._producer = fake
        import threading
        c._poller = threading.Thread(target=c._serve_reports, daemon=True)
        c._poller.start()
        try:
            return await c.send("q", 2, 17), fake.produced
        finally:
            await c.close()
    return asyncio.run(main())


def test_send_returns_the_delivered_offset():
    assert _send((None, FakeMessage(41))) == (41, [("q", 2, b"17")])
    assert _send((None, FakeMessage(-1001)))[0] == -1          # acks=0: no offset


def test_send_maps_the_delivery_error():
    with pytest.raises(DefiniteError) as e:
        _send((KafkaError(KafkaError._QUEUE_FULL), None))
    assert e.value.code == "_QUEUE_FULL"
    with pytest.raises(IndefiniteError) as e:
        _send((KafkaError(KafkaError.NOT_ENOUGH_REPLICAS), None))
    assert e.value.code == "NOT_ENOUGH_REPLICAS"
    with pytest.raises(IndefiniteError) as e:
        _send((KafkaError(KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND), None))
    assert e.value.code == "NOT_ENOUGH_REPLICAS_AFTER_APPEND"


def test_send_to_no_broker_times_out_indefinite():
    async def main():
        c = KafkaQueueClient(["127.0.0.1:1"], timeout_ms=300)
        try:
            with pytest.raises(IndefiniteError) as e:
                await c.send("q", 0, 1)
            return e.value.code
        finally:
            await c.close()
    assert asyncio.run(main()) in ("_MSG_TIMED_OUT", "timeout")


def test_producer_and_consumer_settings():
    c = KafkaQueueClient(["a:9092", "b:9092"], timeout_ms=700, acks=1)
    p = c.producer()
    try:
        assert c.acks == "1" and not c.idempotence and c.bootstrap == "a:9092,b:9092"
    finally:
        asyncio.run(c.close())
    assert KafkaQueueClient(["a:1"], acks=-1, idempotence=True).acks == "all"
    assert p is not None


def test_bad_input():
    with pytest.raises(ValueError, match="acks"):
        acks_config(2)
    with pytest.raises(ValueError, match="acks"):
        acks_config(True)
    assert acks_config("all") == acks_config(-1) == "all" and acks_config(0) == "0"
    with pytest.raises(ValueError, match="idempotence needs acks=all"):
        KafkaQueueClient(["a:1"], acks=1, idempotence=True)
    with pytest.raises(ValueError, match="isolation"):
        KafkaQueueClient(["a:1"], isolation="dirty")
    with pytest.raises(ValueError, match="broker"):
        KafkaQueueClient([])
    with pytest.raises(ValueError, match="topic config"):
        topic_config({"x": [1]})
    assert topic_config({"min.insync.replicas": 2, "unclean.leader.election.enable": True}) == \
        {"min.insync.replicas": "2", "unclean.leader.election.enable": "true"}
    assert decode_value(b"12") == 12 and decode_value(b"x") == "x" and decode_value(None) is None


def test_poll_of_a_negative_offset_is_a_definite_fail():
    async def main():
        c = KafkaQueueClient(["127.0.0.1:1"])
        try:
            with pytest.raises(DefiniteError) as e:
                await c.poll("q", 0, -1, 10)
            return e.value.code
        finally:
            await c.close()
    assert asyncio.run(main()) == "OFFSET_OUT_OF_RANGE"


def test_factory_reads_the_workload_options():
    class Options:
        acks, timeout_ms, idempotence = 0, 900, False
    c = kafka_queue_factory(("h:9092",), Options())
    assert (c.acks, c.timeout_ms, c.isolation) == ("0", 900, "read_committed")
