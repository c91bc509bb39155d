"""targets.kafka.server_config: server.properties, the StorageTool argv, Kafka Uuids, JVM
options; and (when Java and the jars are at hand) the real StorageTool formatting with them."""
from __future__ import annotations

import base64
import shutil
import subprocess

import pytest

from targets.kafka import server_config as sc
from targets.kafka.server_config import (ROLE_BROKER, ROLE_COMBINED, ROLE_CONTROLLER, Controller, Timeouts,
                                         cluster_uuid, directory_id, format_argv, is_kafka_uuid, kafka_uuid,
                                         render_server_properties)
from targets.kafka.voters import parse_quorum_status

CONTROLLERS = [Controller(i, f"10.0.0.{10 + i}", directory_id(7, i)) for i in (1, 2, 3)]
CID = cluster_uuid("run-1", 7)


def props(role, node_id, kraft_version=1, n_brokers=3, **kw):
    text = render_server_properties(role=role, node_id=node_id, host=f"10.0.0.{10 + node_id}",
                                    controllers=CONTROLLERS, kraft_version=kraft_version,
                                    log_dirs="/d", metadata_log_dir="/m", n_brokers=n_brokers, **kw)
    lines = text.splitlines()
    assert text.endswith("\n") and lines[0].startswith("# ")
    return dict(line.split("=", 1) for line in lines[1:])


def test_dedicated_controller_kraft1():
    p = props(ROLE_CONTROLLER, 2)
    assert p["process.roles"] == "controller" and p["node.id"] == "2"
    assert p["listeners"] == p["advertised.listeners"] == "CONTROLLER://10.0.0.12:9093"
    assert p["controller.listener.names"] == "CONTROLLER"
    assert p["controller.quorum.bootstrap.servers"] == "10.0.0.11:9093,10.0.0.12:9093,10.0.0.13:9093"
    assert "controller.quorum.voters" not in p and "inter.broker.listener.name" not in p
    assert p["log.dirs"] == "/d" and p["metadata.log.dir"] == "/m"
    assert p["controller.quorum.election.timeout.ms"] == "1000"
    assert p["controller.quorum.fetch.timeout.ms"] == "2000"


def test_broker_kraft0_uses_static_voters():
    p = props(ROLE_BROKER, 5, kraft_version=0)
    assert p["process.roles"] == "broker"
    assert p["listeners"] == p["advertised.listeners"] == "PLAINTEXT://10.0.0.15:9092"
    assert p["inter.broker.listener.name"] == "PLAINTEXT" and p["controller.listener.names"] == "CONTROLLER"
    assert p["controller.quorum.voters"] == "1@10.0.0.11:9093,2@10.0.0.12:9093,3@10.0.0.13:9093"
    assert "controller.quorum.bootstrap.servers" not in p
    assert p["listener.security.protocol.map"] == "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
    # only the workload makes topics; no unclean leaders
    assert p["auto.create.topics.enable"] == "false" and p["unclean.leader.election.enable"] == "false"


def test_combined_has_both_listeners():
    p = props(ROLE_COMBINED, 1)
    assert p["process.roles"] == "broker,controller"
    assert p["listeners"] == "PLAINTEXT://10.0.0.11:9092,CONTROLLER://10.0.0.11:9093"
    assert p["inter.broker.listener.name"] == "PLAINTEXT"


@pytest.mark.parametrize("n_brokers, rf, isr", [(1, 1, 1), (2, 2, 2), (3, 3, 2), (7, 3, 2)])
def test_internal_topics_fit_the_brokers(n_brokers, rf, isr):
    p = props(ROLE_BROKER, 5, n_brokers=n_brokers)
    assert p["offsets.topic.replication.factor"] == p["transaction.state.log.replication.factor"] == str(rf)
    assert p["default.replication.factor"] == str(rf)
    assert p["transaction.state.log.min.isr"] == p["min.insync.replicas"] == str(isr)


def test_timeouts_and_extra_properties():
    p = props(ROLE_BROKER, 4, timeouts=Timeouts(election_ms=700, fetch_ms=1500, heartbeat_ms=200, session_ms=1800),
              extra={"num.partitions": 6, "auto.create.topics.enable": False, "log.flush.interval.messages": 1})
    assert p["controller.quorum.election.timeout.ms"] == "700" and p["controller.quorum.fetch.timeout.ms"] == "1500"
    assert p["broker.heartbeat.interval.ms"] == "200" and p["broker.session.timeout.ms"] == "1800"
    assert p["num.partitions"] == "6" and p["auto.create.topics.enable"] == "false"
    assert p["log.flush.interval.messages"] == "1"


@pytest.mark.parametrize("kw, message", [
    ({"role": "zookeeper", "node_id": 1}, "role must be"),
    ({"role": ROLE_BROKER, "node_id": 2}, "must not be in the controller set"),
    ({"role": ROLE_CONTROLLER, "node_id": 9}, "must be in the controller set"),
    ({"role": ROLE_BROKER, "node_id": 5, "kraft_version": 2}, "kraft_version"),
    ({"role": ROLE_BROKER, "node_id": 5, "kraft_version": True}, "kraft_version"),
    ({"role": ROLE_BROKER, "node_id": -1}, "node_id"),
    ({"role": ROLE_BROKER, "node_id": 5, "n_brokers": 0}, "n_brokers"),
    ({"role": ROLE_BROKER, "node_id": 5, "extra": {"a": "x y"}}, "whitespace"),
    ({"role": ROLE_BROKER, "node_id": 5, "extra": {"a": "x\n"}}, "whitespace"),
    ({"role": ROLE_BROKER, "node_id": 5, "extra": {"a=b": "x"}}, "bad property name"),
])
def test_bad_config_arguments(kw, message):
    with pytest.raises(ValueError, match=message):
        props(**kw)


def test_bad_timeouts():
    with pytest.raises(ValueError, match="heartbeat_ms"):
        Timeouts(heartbeat_ms=5000, session_ms=4000)
    with pytest.raises(ValueError, match="election_ms"):
        Timeouts(election_ms=0)


def test_format_argv_kraft1_controller_and_broker():
    argv = format_argv(role=ROLE_CONTROLLER, node_id=1, cluster_id=CID, config_path="/etc/kafka/server.properties",
                       controllers=CONTROLLERS)
    assert argv[0] == "java" and "-cp" in argv and argv[argv.index("-cp") + 1] == "/opt/kafka/libs/*"
    tail = argv[argv.index("kafka.tools.StorageTool"):]
    expected = ",".join(f"{c.node_id}@{c.host}:9093:{c.directory_id}" for c in CONTROLLERS)
    assert tail == ["kafka.tools.StorageTool", "format", "--config", "/etc/kafka/server.properties",
                    f"--cluster-id={CID}", "--initial-controllers", expected]
    broker = format_argv(role=ROLE_BROKER, node_id=4, cluster_id=CID, config_path="/c", controllers=CONTROLLERS,
                         release_version="4.3-IV0")
    assert broker[-3:] == ["--release-version", "4.3-IV0", "--no-initial-controllers"]


def test_format_argv_kraft0_has_no_quorum_flag():
    for role, nid in ((ROLE_COMBINED, 2), (ROLE_BROKER, 4)):
        argv = format_argv(role=role, node_id=nid, cluster_id=CID, config_path="/c", controllers=CONTROLLERS,
                           kraft_version=0)
        assert argv[-1] == f"--cluster-id={CID}"
        assert not {"--initial-controllers", "--no-initial-controllers", "--standalone"} & set(argv)


def test_format_argv_rejects_bad_ids():
    with pytest.raises(ValueError, match="cluster_id"):
        format_argv(role=ROLE_BROKER, node_id=4, cluster_id="not-a-uuid", config_path="/c", controllers=CONTROLLERS)
    with pytest.raises(ValueError, match="directory id"):
        format_argv(role=ROLE_CONTROLLER, node_id=1, cluster_id=CID, config_path="/c",
                    controllers=[Controller(1, "h", "")])


def test_kafka_uuids_are_deterministic_base64url_of_16_bytes():
    ids = [kafka_uuid(f"m{i}") for i in range(2000)]
    assert len(set(ids)) == len(ids) and ids[0] == kafka_uuid("m0")
    for text in ids:
        assert len(text) == 22 and is_kafka_uuid(text) and not text.startswith("-")
        raw = base64.urlsafe_b64decode(text + "==")
        assert len(raw) == 16 and raw[:8] != bytes(8)
    assert kafka_uuid("m0") == "gNAlT52AxsdSvfIMeT45XQ"      # fixed: must not change between releases


def test_cluster_and_directory_ids():
    assert cluster_uuid("run-1", 7) == CID != cluster_uuid("run-1", 8) != cluster_uuid("run-2", 7)
    assert cluster_uuid(CID, 99) == CID                       # already a Kafka Uuid: kept
    assert is_kafka_uuid(cluster_uuid("x" * 22, 1)) and not is_kafka_uuid("x" * 23)
    assert not is_kafka_uuid("AAAAAAAAAAAAAAAAAAAAAB")      # non-canonical trailing bits
    assert len({directory_id(7, i) for i in range(1, 9)}) == 8 and directory_id(7, 1) != directory_id(8, 1)


def test_jvm_opts_per_role():
    assert sc.jvm_opts(ROLE_CONTROLLER)[:2] == ["-Xmx256m", "-Xms256m"]
    assert sc.jvm_opts(ROLE_BROKER)[0] == sc.jvm_opts(ROLE_COMBINED)[0] == "-Xmx512m"
    assert "-XX:+UseSerialGC" in sc.jvm_opts(ROLE_BROKER)
    assert sc.jvm_opts(ROLE_BROKER, heap=["-Xmx1g"])[0] == "-Xmx1g"
    argv = sc.server_argv(ROLE_CONTROLLER)
    assert argv[-2:] == ["kafka.Kafka", "/etc/kafka/server.properties"]
    assert "-Dlog4j2.configurationFile=/opt/kafka/config/log4j2.properties" in argv
    assert "-Dkafka.logs.dir=/var/lib/kafka/logs" in argv


def test_parse_quorum_status():
    out = ("ClusterId:              hd1zFpMAqfTMnlUhFCpY-A\nLeaderId:               2\nLeaderEpoch:            7\n"
           "CurrentVoters:          [{\"id\": 1, \"endpoints\": [\"CONTROLLER://1.2.3.4:9093\"]}]\nnoise line\n")
    st = parse_quorum_status(out)
    assert st["LeaderId"] == "2" and st["LeaderEpoch"] == "7" and st["ClusterId"] == "hd1zFpMAqfTMnlUhFCpY-A"
    assert st["CurrentVoters"].startswith("[{") and "noise line" not in st


@pytest.fixture(scope="module")
def real_libs():
    """The real jars (resolved with Maven, cached) when Java 17+ and Maven are installed."""
    if shutil.which("java") is None or shutil.which("mvn") is None:
        pytest.skip("needs java and mvn on the host")
    from targets.kafka.jars import resolve_jars
    return resolve_jars()


@pytest.mark.parametrize("kraft_version", [0, 1])
def test_real_storage_tool_formats_controller_and_broker(real_libs, tmp_path, kraft_version):
    """Our properties and argv, fed to the real ``kafka.tools.StorageTool format``."""
    controllers = [Controller(1, "127.0.0.1", directory_id(3, 1))]
    for role, nid in ((ROLE_CONTROLLER, 1), (ROLE_BROKER, 2)):
        d = tmp_path / f"n{nid}"
        d.mkdir()
        (d / "server.properties").write_text(render_server_properties(
            role=role, node_id=nid, host="127.0.0.1", controllers=controllers, kraft_version=kraft_version,
            log_dirs=str(d / "data"), metadata_log_dir=str(d / "meta"), n_brokers=1))
        argv = format_argv(role=role, node_id=nid, cluster_id=CID, config_path=str(d / "server.properties"),
                           controllers=controllers, kraft_version=kraft_version, classpath=f"{real_libs}/*",
                           jvm_opts=sc.TOOL_HEAP_OPTS)
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        meta = dict(line.split("=", 1) for line in (d / "meta" / "meta.properties").read_text().splitlines()
                    if "=" in line and not line.startswith("#"))
        assert meta["cluster.id"] == CID and meta["node.id"] == str(nid)
        if role == ROLE_CONTROLLER and kraft_version == 1:
            assert meta["directory.id"] == directory_id(3, 1)    # --initial-controllers took our id
            assert "dynamic metadata voter directory" in proc.stdout
