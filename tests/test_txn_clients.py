"""The transactional clients' registry (targets/kafka/txn_clients.py), the librdkafka
driver's reading of ``KafkaError`` flags and its send path (a fake producer), and the Java
client's build (targets/kafka/java_build.py): one line for a release that does not
resolve, a cache reused per release and rebuilt for a changed source."""
from __future__ import annotations

import asyncio
import shutil
import threading

import pytest
from confluent_kafka import KafkaError, KafkaException

from targets.errors import TargetError
from targets.kafka import java_build
from targets.kafka.txn_clients import CLIENTS, check_client, client_factory, client_spec
from targets.kafka.txn_errors import LibraryError
from targets.kafka.txn_librdkafka import RdkafkaDriver, library_error
from targets.txn_client import SessionConfig, TxnDefiniteError, TxnIndefiniteError
from tests.test_queue_kafka_client import FakeMessage

FAILING_MVN = """#!/bin/sh
echo "[ERROR] Failed to execute goal on project kafka-java-client-libs: Could not resolve dependencies for project x:y:pom:1: The following artifacts could not be resolved: org.apache.kafka:kafka-clients:jar:4.3.9 (absent): Could not find artifact org.apache.kafka:kafka-clients:jar:4.3.9 in central (https://repo.maven.apache.org/maven2) -> [Help 1]"
exit 1
"""


def test_the_table_and_unknown_clients():
    assert set(CLIENTS) == {"librdkafka", "java"}
    with pytest.raises(ValueError, match="unknown client 'jvm'; known: java, librdkafka"):
        client_spec("jvm")
    with pytest.raises(ValueError, match="unknown client"):
        check_client("kafkajs", "4.4.0")
    check_client("librdkafka", "4.4.0")       # nothing to build


def test_java_with_a_bad_release_is_one_line_before_maven(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))           # no mvn: it must not be needed
    for version in ("9.9.9", "4.4", "latest"):
        with pytest.raises(ValueError) as e:
            check_client("java", version)
        assert "\n" not in str(e.value) and str(e.value).startswith(f"--client java with Kafka {version}: ")


def test_java_with_a_release_whose_jar_does_not_resolve_is_one_line(monkeypatch, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mvn = bin_dir / "mvn"
    mvn.write_text(FAILING_MVN)
    mvn.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setattr(java_build, "DEFAULT_CACHE_ROOT", tmp_path / "cache")
    with pytest.raises(ValueError) as e:
        check_client("java", "4.3.9")
    msg = str(e.value)
    assert "\n" not in msg and "could not find org.apache.kafka:kafka-clients:jar:4.3.9" in msg
    assert msg.startswith("--client java with Kafka 4.3.9: ")


def test_no_javac_names_the_package(monkeypatch, tmp_path):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(TargetError, match="openjdk-17-jdk-headless"):
        java_build.find_javac()


@pytest.mark.kafka
@pytest.mark.skipif(shutil.which("mvn") is None or shutil.which("javac") is None, reason="needs mvn and javac")
def test_the_build_is_cached_per_release_and_rebuilt_for_a_new_source(tmp_path):
    from targets.kafka.releases import DEFAULT_VERSION
    # the jars come from the machine's cache (resolved there once, by Maven); only javac runs here
    shared = java_build.ensure_java_client(DEFAULT_VERSION)
    cache = tmp_path / "cache"
    shutil.copytree(shared.libs.parent, cache / DEFAULT_VERSION, ignore=shutil.ignore_patterns("classes-*"))
    logs: list[str] = []
    first = java_build.ensure_java_client(DEFAULT_VERSION, cache, log=logs.append)
    assert (first.classes / "TxnClient.class").is_file() and (first.classes / "ClientSession.class").is_file()
    assert {p.name for p in first.libs.glob("kafka-clients-*.jar")} == {f"kafka-clients-{DEFAULT_VERSION}.jar"}
    assert any(p.name.startswith("gson-") for p in first.libs.glob("*.jar"))
    assert sum("compiling" in m for m in logs) == 1 and not any("Maven" in m for m in logs)
    again = java_build.ensure_java_client(DEFAULT_VERSION, cache, log=logs.append)
    assert again == first and sum("compiling" in m for m in logs) == 1       # reused
    changed = tmp_path / "src"
    shutil.copytree(java_build.SOURCES, changed)
    (changed / "ClientSession.java").write_text((changed / "ClientSession.java").read_text() + "\n// changed\n")
    third = java_build.ensure_java_client(DEFAULT_VERSION, cache, log=logs.append, sources=changed)
    assert third.classes != first.classes and (third.classes / "ClientSession.class").is_file()
    assert str(third.classes) in third.classpath() and third.argv()[-1] == "TxnClient"


@pytest.mark.parametrize("err,want", [
    (KafkaError(KafkaError._TIMED_OUT, retriable=True), ("_TIMED_OUT", True, False, False)),
    (KafkaException(KafkaError(KafkaError._STATE, txn_requires_abort=True)), ("_STATE", False, True, False)),
    (KafkaException(KafkaError(KafkaError._FENCED, fatal=True)), ("_FENCED", False, False, True)),
    (KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION), ("NOT_LEADER_OR_FOLLOWER", False, False, False)),
])
def test_rdkafka_flags(err, want):
    e = library_error(err)
    assert (e.code, e.retriable, e.abortable, e.fatal) == want
    assert library_error(BufferError("full")).local and library_error(BufferError("x")).code == "_QUEUE_FULL"


class FakeProducer:
    """produce() queues the delivery report (or raises ``refuse``); poll() serves it."""

    def __init__(self, outcome, refuse=None):
        self.outcome, self.refuse, self.pending = outcome, refuse, []

    def produce(self, topic, value, partition, on_delivery):
        if self.refuse is not None:
            raise self.refuse
        self.pending.append(on_delivery)

    def poll(self, timeout):
        import time
        while self.pending:
            self.pending.pop(0)(*self.outcome)
        time.sleep(min(timeout, 0.01))


def _rdkafka_send(producer, txn=False):
    from targets.kafka.txn_session import Session
    config = SessionConfig(("127.0.0.1:1",), "g", "tx" if txn else None, timeout_ms=500)
    driver = RdkafkaDriver(config)
    driver.producer = producer
    driver._reports = threading.Thread(target=driver._serve_reports, daemon=True)
    driver._reports.start()
    s = Session(config, driver, "librdkafka")
    s.in_txn = txn

    async def main():
        try:
            return await s.send(("q", 2), 17)
        finally:
            driver._closed.set()
    return asyncio.run(main())


def test_rdkafka_send_outcomes():
    assert _rdkafka_send(FakeProducer((None, FakeMessage(41)))) == 41
    with pytest.raises(TxnIndefiniteError) as e:
        _rdkafka_send(FakeProducer((KafkaError(KafkaError._MSG_TIMED_OUT), None)))
    assert e.value.code == "_MSG_TIMED_OUT"
    with pytest.raises(TxnIndefiniteError) as e:
        _rdkafka_send(FakeProducer((KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION), None)))
    assert e.value.code == "NOT_LEADER_OR_FOLLOWER"
    with pytest.raises(TxnDefiniteError) as e:
        _rdkafka_send(FakeProducer((KafkaError(KafkaError._PURGE_QUEUE), None)), txn=True)
    assert e.value.abortable
    with pytest.raises(TxnDefiniteError) as e:
        _rdkafka_send(FakeProducer(None, refuse=BufferError("queue full")))
    assert e.value.code == "_QUEUE_FULL"
    with pytest.raises(TxnDefiniteError) as e:
        _rdkafka_send(FakeProducer(None, refuse=KafkaException(KafkaError(KafkaError._STATE))))
    assert e.value.code == "_STATE"


def test_rdkafka_factory_describes_its_versions():
    import confluent_kafka
    f = client_factory("librdkafka", "4.4.0")
    d = f.describe()
    assert d["client"] == "librdkafka" and d["transaction_version"] == 0
    assert d["confluent_kafka"] in str(confluent_kafka.version()) and d["confluent_kafka"].count(".") == 2
    assert d["librdkafka"] == confluent_kafka.libversion()[0]
    s = f.session(SessionConfig(("h:1",), "g", "tx"))
    assert s.info()["transaction_version"] == 0 and s.client == "librdkafka"


def test_library_error_is_an_exception_with_its_flags():
    e = LibraryError("NOT_LEADER_FOR_PARTITION", "m", retriable=True)
    assert isinstance(e, Exception) and e.code == "NOT_LEADER_OR_FOLLOWER" and "m" in str(e) and e.retriable


@pytest.mark.parametrize("code,name", [
    (87, "INVALID_RECORD"), (2, "CORRUPT_MESSAGE"), (-1, "UNKNOWN_SERVER_ERROR"),
    (KafkaError.NOT_LEADER_FOR_PARTITION, "NOT_LEADER_OR_FOLLOWER"),
    (KafkaError._MSG_TIMED_OUT, None), (KafkaError._TIMED_OUT, None), (KafkaError._STATE, None),
])
def test_rdkafka_a_brokers_code_is_recorded_by_kafkas_name(code, name):
    e = library_error(KafkaError(code))
    assert e.kafka_error == name
    if name is not None:
        assert e.code == name         # the history's error: Kafka's spelling too


def test_rdkafka_a_failed_send_carries_the_brokers_error_name_to_the_session_error():
    with pytest.raises(TxnIndefiniteError) as e:
        _rdkafka_send(FakeProducer((KafkaError(87), None)), txn=True)
    assert (e.value.code, e.value.kafka_error, e.value.abortable) == ("INVALID_RECORD", "INVALID_RECORD", True)
    with pytest.raises(TxnIndefiniteError) as e:
        _rdkafka_send(FakeProducer((KafkaError(KafkaError._MSG_TIMED_OUT), None)))
    assert e.value.kafka_error is None


def test_rdkafka_producer_settings_carry_compression_and_padded_values():
    config = SessionConfig(("127.0.0.1:1",), "g", "tx", compression="lz4", value_bytes=64)
    assert RdkafkaDriver(config)._producer_conf()["compression.type"] == "lz4"
    assert RdkafkaDriver(SessionConfig(("h:1",), "g"))._producer_conf()["compression.type"] == "none"
    sent = []

    class Recording(FakeProducer):
        def produce(self, topic, value, partition, on_delivery):
            sent.append(value)
            super().produce(topic, value, partition, on_delivery)
    from targets.kafka.txn_session import Session
    driver = RdkafkaDriver(config)
    driver.producer = Recording((None, FakeMessage(3)))
    driver._reports = threading.Thread(target=driver._serve_reports, daemon=True)
    driver._reports.start()

    async def main():
        try:
            return await Session(config, driver, "librdkafka").send(("q", 2), 17)
        finally:
            driver._closed.set()
    assert asyncio.run(main()) == 3
    assert len(sent[0]) == 64 and sent[0].startswith(b"17~")
    from targets.txn_values import decode_value
    assert decode_value(sent[0]) == 17


def test_java_error_answers_carry_the_brokers_error_name():
    from targets.kafka.java_protocol import library_error as java_error
    e = java_error({"class": "org.apache.kafka.common.InvalidRecordException", "message": "m",
                    "kafka_error": "INVALID_RECORD"})
    assert (e.code, e.kafka_error) == ("InvalidRecordException", "INVALID_RECORD")
    assert java_error({"class": "java.lang.IllegalStateException", "kafka_error": None}).kafka_error is None
    assert java_error({"class": "org.apache.kafka.common.KafkaException"}).kafka_error is None
