"""targets.kafka.db.KafkaDB: roles, ids and commands against fakes; the process scripts
against a stand-in ``java`` on this machine; and (marked ``docker``) a real 3-node
combined Kafka cluster: leader, kill -9, restart, teardown."""
from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import time
import types
import uuid
from pathlib import Path

import pytest

from clusters.remote import ExecResult, Remote, RemoteError
from targets.errors import TargetError
from targets.kafka import server_config as sc
from targets.kafka.db import KafkaDB, node_count
from targets.kafka.server_config import KafkaPaths
from targets.kafka.settings import KafkaSettings
from tests.nemesis_fakes import FakeCluster, FakeRemote


def _props(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


# --- roles, ids, addresses and commands, against the recording fake -------------------

def test_dedicated_roles_ids_and_addresses():
    db = KafkaDB(FakeCluster(8), "CID", seed=7)                # default: 5 controllers + 3 brokers
    assert db.controllers() == db.quorum_nodes() == ["n1", "n2", "n3", "n4", "n5"]
    assert db.brokers() == db.client_nodes() == ["n6", "n7", "n8"]
    assert [db.role(n) for n in ("n1", "n6")] == ["controller", "broker"]
    assert db.node_id("n6") == 6 and db.node_for_id(6) == "n6"
    assert db.address("n2") == ("10.77.0.12", 9093) and db.address("n7") == ("10.77.0.17", 9092)
    assert db.controller_addresses()[0] == ("10.77.0.11", 9093) and len(db.controller_addresses()) == 5
    assert db.bootstrap_servers() == "10.77.0.16:9092,10.77.0.17:9092,10.77.0.18:9092"
    assert db.client_endpoint("n6") == "10.77.0.16:9092"
    assert len(db.kafka_cluster_id) == 22 and db.kafka_cluster_id == sc.cluster_uuid("CID", 7)
    with pytest.raises(ValueError, match="unknown node"):
        db.node_id("n9")
    with pytest.raises(ValueError, match="no node with id 9"):
        db.node_for_id(9)


def test_nemesis_targets_are_the_controllers_by_default_and_the_brokers_on_request():
    db = KafkaDB(FakeCluster(8), "CID", seed=7)
    assert db.fault_nodes() == db.fault_nodes("quorum") == ["n1", "n2", "n3", "n4", "n5"]
    assert db.fault_nodes("clients") == ["n6", "n7", "n8"]
    assert db.fault_nodes("all") == [f"n{i}" for i in range(1, 9)]
    with pytest.raises(ValueError, match="unknown nemesis targets 'brokers'"):
        db.fault_nodes("brokers")


def test_combined_topology_and_configs():
    db = KafkaDB(FakeCluster(3), "CID", seed=7, topology="combined", kraft_version=0)
    assert db.controllers() == db.brokers() == ["n1", "n2", "n3"] and db.role("n2") == "broker,controller"
    assert db.bootstrap_servers() == "10.77.0.11:9092,10.77.0.12:9092,10.77.0.13:9092"
    p = _props(db.config_text("n2"))
    assert p["controller.quorum.voters"] == "1@10.77.0.11:9093,2@10.77.0.12:9093,3@10.77.0.13:9093"
    assert p["listeners"] == "PLAINTEXT://10.77.0.12:9092,CONTROLLER://10.77.0.12:9093"
    assert p["offsets.topic.replication.factor"] == "3"


def test_dedicated_broker_config_and_format_argv():
    db = KafkaDB(FakeCluster(4), "CID", seed=1, n_controllers=3, extra_properties={"num.partitions": 4})
    p = _props(db.config_text("n4"))
    assert p["process.roles"] == "broker" and p["node.id"] == "4" and p["num.partitions"] == "4"
    assert p["controller.quorum.bootstrap.servers"] == "10.77.0.11:9093,10.77.0.12:9093,10.77.0.13:9093"
    assert p["offsets.topic.replication.factor"] == "1"       # one broker
    assert db.format_argv("n4")[-1] == "--no-initial-controllers"
    argv = db.format_argv("n1")
    voters = argv[argv.index("--initial-controllers") + 1].split(",")
    assert voters[0] == f"1@10.77.0.11:9093:{sc.directory_id(1, 1)}" and len(voters) == 3


def test_node_count_and_for_run():
    assert node_count("dedicated", 5) == 8 and node_count("combined", 3) == 3
    with pytest.raises(ValueError):
        node_count("mixed", 3)
    settings = KafkaSettings(seed=4, nodes=3, kafka_version="4.3.1", kafka_topology="dedicated", kraft_version=0,
                             kafka_props={"a.b": "1"})
    db = KafkaDB.for_run(FakeCluster(6), "CID", settings)
    assert (db.n_controllers, db.n_brokers, db.kraft_version, db.seed) == (3, 3, 0, 4)
    assert db.extra_properties == {"a.b": "1"} and db.version == "4.3.1"
    combined = dataclasses.replace(settings, kafka_topology="combined")
    assert KafkaDB.for_run(FakeCluster(3), "CID", combined).brokers() == ["n1", "n2", "n3"]


@pytest.mark.parametrize("kwargs, message", [
    ({}, "do not fit"),                                      # 5 + 3 defaults on 4 nodes
    ({"n_controllers": 4}, "at least one broker"),
    ({"n_controllers": 2, "n_brokers": 1}, "do not fit"),
    ({"topology": "mixed"}, "topology"),
    ({"kraft_version": 2, "n_controllers": 3}, "kraft_version"),
    ({"cluster_id": "a b", "n_controllers": 3}, "cluster_id"),
    ({"seed": "x", "n_controllers": 3}, "seed"),
])
def test_bad_arguments(kwargs, message):
    args = {"cluster_id": "CID", "seed": 1, **kwargs}
    with pytest.raises(ValueError, match=message):
        KafkaDB(FakeCluster(4), **args)


def test_bad_version_is_a_target_error():
    with pytest.raises(TargetError, match="4.3"):
        KafkaDB(FakeCluster(3), "CID", 1, topology="combined", version="4.3")


def test_setup_names_the_node_whose_jvm_died_with_its_log_tail():
    def handler(node, cmd):
        if isinstance(cmd, str) and cmd.startswith("pid=$(cat") and node == "n2":
            return ExecResult(1, "", "")                     # n2's JVM is gone
        if isinstance(cmd, str) and cmd.startswith("tail -n"):
            return ExecResult(0, f"FATAL on {node}: bad config\n", "")
        return None
    remote = FakeRemote(handler)
    db = KafkaDB(FakeCluster(3, remote), "CID", 1, topology="combined", startup_check_s=0)
    with pytest.raises(TargetError, match=r"(?s)exited right after start on n2\b.*FATAL on n2: bad config"):
        db.setup()
    puts = {c[1]: c[3] for c in remote.calls if c[0] == "put"}
    assert sorted(puts) == ["n1", "n2", "n3"] and "process.roles=broker,controller" in puts["n1"]
    formats = [c for c in remote.execs("n3") if isinstance(c, str) and "StorageTool" in c]
    assert len(formats) == 1 and "--initial-controllers" in formats[0]


def test_setup_reports_every_node_that_failed_to_format():
    remote = FakeRemote(lambda node, cmd: ExecResult(1, "", "boom") if "StorageTool" in str(cmd)
                        and node != "n1" else None)
    db = KafkaDB(FakeCluster(3, remote), "CID", 1, topology="combined", startup_check_s=0)
    with pytest.raises(TargetError, match=r"kafka format failed on n2, n3"):
        db.setup()


def test_teardown_stops_brokers_before_controllers_and_is_tolerant():
    remote = FakeRemote()
    remote.down.add("n2")
    db = KafkaDB(FakeCluster(4, remote), "CID", 1, n_controllers=3)
    errors = db.teardown()
    assert list(errors) == ["n2"] and "node is down" in errors["n2"]
    stops = [c[1] for c in remote.calls if c[0] == "exec" and "kill -TERM" in c[2]]
    assert stops[0] == "n4" and sorted(stops[1:]) == ["n1", "n2", "n3"]


# --- the process scripts, run on this machine against a stand-in java -------------------

FAKE_JAVA = """#!{python}
# Stand-in for java: StorageTool writes meta.properties into metadata.log.dir; kafka.Kafka
# sleeps (SIGTERM ends it) or, with FAKE_KAFKA_CRASH set, exits at once.
import os, sys, time
args = sys.argv[1:]
if "kafka.tools.StorageTool" in args:
    conf = dict(l.split("=", 1) for l in open(args[args.index("--config") + 1]) if "=" in l and l[0] != "#")
    meta = conf["metadata.log.dir"].strip()
    os.makedirs(meta, exist_ok=True)
    open(os.path.join(meta, "meta.properties"), "w").write("node.id=" + conf["node.id"].strip())
    sys.exit(0)
print("fake kafka up", flush=True)
if os.environ.get("FAKE_KAFKA_CRASH"):
    sys.exit("Exiting Kafka: bad listener")
# as KafkaRaftManager does at start-up: the metadata partition's directory
conf = dict(l.split("=", 1) for l in open(args[-1]) if "=" in l and l[0] != "#")
os.makedirs(os.path.join(conf["metadata.log.dir"].strip(), "__cluster_metadata-0"), exist_ok=True)
time.sleep(120)
"""


class LocalRemote(Remote):
    """Runs every command on this machine (``env`` added to the environment)."""

    def __init__(self, env=None):
        self.env = {**os.environ, **(env or {})}

    def exec(self, node, cmd, *, check=True, detach=False, timeout_s=30.0):
        argv = ["sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, env=self.env)
        result = ExecResult(p.returncode, p.stdout, p.stderr)
        if check and p.returncode:
            raise RemoteError(node, cmd, f"exit {p.returncode}: {p.stderr}", result)
        return result

    def put(self, node, local_path, remote_path):
        shutil.copy(local_path, remote_path)

    def get(self, node, remote_path, local_path):
        src = Path(remote_path)
        if not src.exists():
            raise RemoteError(node, remote_path, "no such file")
        Path(local_path).parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copy)(src, local_path)


class LocalCluster(FakeCluster):
    def __init__(self, remote):
        super().__init__(1, remote)

    def ip(self, node):
        return "127.0.0.1"


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes() != b""
    except FileNotFoundError:
        return False


@pytest.fixture
def local_db(tmp_path):
    java = tmp_path / "java"
    java.write_text(FAKE_JAVA.format(python=sys.executable))
    java.chmod(0o755)
    root = tmp_path / "root"
    paths = KafkaPaths(config=str(root / "etc/server.properties"), data_dir=str(root / "data"),
                       metadata_dir=str(root / "meta"), log_dir=str(root / "logs"), pid=str(root / "kafka.pid"),
                       java=str(java))
    started = []

    def make(**env):
        db = KafkaDB(LocalCluster(LocalRemote(env)), "CID", 3, topology="combined", paths=paths,
                     stop_timeout_s=2.0, startup_check_s=0.5)
        started.append(db)
        return db

    yield make
    for db in started:      # kill only what these tests started, by pid
        pidfile = Path(db.paths.pid)
        if pidfile.exists() and pidfile.read_text().strip() and _alive(int(pidfile.read_text())):
            os.kill(int(pidfile.read_text()), signal.SIGKILL)


def _state_becomes(pid: int, states: str, timeout_s: float = 5.0) -> bool:
    """True once /proc/<pid>/stat shows a state in ``states`` within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if Path(f"/proc/{pid}/stat").read_text().split()[2] in states:
            return True
        time.sleep(0.02)
    return False


def test_local_setup_signals_kill_restart_collect(local_db, tmp_path):
    db = local_db()
    db.setup()
    pid = int(Path(db.paths.pid).read_text())
    assert db.is_running("n1") and _alive(pid)
    assert Path(db.paths.metadata_dir, "meta.properties").read_text() == "node.id=1"
    assert db.start("n1") is False                             # already running
    assert db.pause("n1") and _state_becomes(pid, "Tt")         # SIGSTOP lands asynchronously
    assert db.resume("n1") and db.is_running("n1")
    assert db.kill("n1") and not db.is_running("n1") and not db.kill("n1")
    assert db.start("n1") and db.is_running("n1")
    assert db.stop("n1") and not db.is_running("n1")           # SIGTERM ends the stand-in
    missing = db.collect("n1", tmp_path / "out")
    assert sorted(missing) == ["controller.log", "server.log"]   # the stand-in writes no log4j files
    assert (tmp_path / "out" / "metadata" / "meta.properties").is_file()
    assert "fake kafka up" in (tmp_path / "out" / "kafka.out").read_text()
    assert "process.roles=broker,controller" in (tmp_path / "out" / "server.properties").read_text()


def test_setup_waits_for_every_controllers_metadata_partition_directory():
    """The power-loss disks' baseline is synced when setup returns (O1: Kafka never fsyncs the
    folder that holds __cluster_metadata-0/), so setup waits until each controller made it."""
    made = {"n1": 0, "n2": 3, "n3": 1}          # n2's appears at its fourth look
    looks = {n: 0 for n in made}

    def handler(node, cmd):
        if isinstance(cmd, str) and cmd.startswith("test -d") and cmd.endswith("__cluster_metadata-0"):
            looks[node] += 1
            return ExecResult(0 if looks[node] > made[node] else 1, "", "")
        return None
    db = KafkaDB(FakeCluster(4, FakeRemote(handler)), "CID", 1, n_controllers=3, startup_check_s=0)
    db.setup()
    assert looks == {"n1": 1, "n2": 4, "n3": 2}             # the broker (n4) is not asked
    stuck = KafkaDB(FakeCluster(3, FakeRemote(lambda node, cmd: ExecResult(1, "", "") if str(cmd).startswith(
        "test -d") else None)), "CID", 1, topology="combined", startup_check_s=0)
    assert stuck.wait_for_partition_dirs(timeout_s=0.2) == ["n1", "n2", "n3"]


def test_local_kill_also_gets_a_stray_jvm_with_our_config(local_db):
    db = local_db()
    db.install_config("n1")
    stray = subprocess.Popen([db.paths.java, "-cp", "x", "kafka.Kafka", db.paths.config],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        assert not db.is_running("n1")                         # not in the pid file
        assert db.kill("n1") and stray.wait(timeout=5) == -signal.SIGKILL
    finally:
        if stray.poll() is None:
            stray.kill()


def test_local_setup_fails_with_the_jvm_output(local_db):
    db = local_db(FAKE_KAFKA_CRASH="1")
    with pytest.raises(TargetError, match=r"(?s)exited right after start on n1.*kafka.out.*bad listener"):
        db.setup()


# --- a real cluster ----------------------------------------------------------------------

SUBNET = os.environ.get("KRAFT_CHAOS_KAFKA_TEST_SUBNET", "10.92.0.0/24")


@pytest.mark.docker
@pytest.mark.slow      # about 90 s; the dedicated topology runs in the default suite
def test_combined_cluster_elects_survives_kill9_and_tears_down():
    """3 combined Kafka nodes: a leader, kill -9 of the leader, a new leader, the old
    leader restarted and serving again, teardown with nothing left (about 40-60 s)."""
    from clusters.docker_cluster import DockerCluster
    from clusters.engine import connect_engine
    from clusters.errors import ClusterError
    from targets.kafka.image import ensure_kafka_image
    try:
        engine = connect_engine(timeout_s=3)
    except ClusterError as e:
        pytest.skip(f"no Docker engine: {e}")
    image = ensure_kafka_image(engine, log=lambda m: None)
    run_id = f"tkafka{uuid.uuid4().hex[:8]}"
    cluster = DockerCluster(3, run_id, image, subnet=SUBNET, client=engine)
    try:
        cluster.setup()
        db = KafkaDB(cluster, "test-cluster", 11, topology="combined")
        db.setup()
        leader = db.node_for_id(db.wait_for_leader(timeout_s=90))
        assert db.kill(leader) and not db.is_running(leader)
        others = [n for n in db.controllers() if n != leader]
        deadline = time.monotonic() + 60
        while True:                                            # a new leader among the other two
            try:
                status = db.quorum_status(via=others[0], timeout_s=30)
                if int(status.get("LeaderId", -1)) not in (-1, db.node_id(leader)):
                    break
            except RemoteError:
                pass
            assert time.monotonic() < deadline, f"no new leader after killing {leader}"
            time.sleep(0.5)
        assert db.start(leader) and db.is_running(leader)
        started = f"grep -c 'Kafka Server started' {db.paths.log_file('server.log')}"
        while db.remote.exec(leader, started, check=False).stdout.strip() != "2":
            assert time.monotonic() < deadline + 60 and db.is_running(leader), db.log_tail(leader)
            time.sleep(0.5)
        records = db.read_log(others[0])                        # the metadata log, copied and parsed
        assert records and [r[0] for r in records] == sorted({r[0] for r in records})
        assert db.teardown() == {}
        assert not any(db.is_running(n) for n in cluster.nodes)
    finally:
        cluster.teardown()
    assert engine.containers.list(all=True, filters={"label": f"kraft-chaos.run={run_id}"}) == []


class _CutShort(FakeRemote):
    """A remote whose first ``failures`` copies are cut short (as the docker engine's archive is
    when Kafka deletes a segment while it is read), then copies an empty metadata dir."""

    def __init__(self, failures: int, message: str = "copy failed: the archive was cut short"):
        super().__init__()
        self.failures, self.message, self.gets = failures, message, 0

    def get(self, node, remote_path, local_path):
        self.gets += 1
        if self.gets <= self.failures:
            raise RemoteError(node, f"get {remote_path}", self.message)
        Path(local_path).mkdir(parents=True)


def _read_log_db(monkeypatch, remote):
    import targets.kafka.db as kdb
    import targets.kafka.metadata_log as ml
    monkeypatch.setattr(kdb, "READ_LOG_RETRY_S", 0.0)
    entry = types.SimpleNamespace(offset=7, epoch=2, type="TopicRecord", payload={"name": "t"})
    monkeypatch.setattr(ml, "read_metadata_dir", lambda path, strict: types.SimpleNamespace(entries=[entry]))
    return KafkaDB(FakeCluster(3, remote), "CID", 1, topology="combined")


def test_read_log_copies_a_live_metadata_dir_again_when_a_copy_is_cut_short(monkeypatch):
    """The final read of the leader's log copies a directory Kafka's cleaner is deleting from:
    a 3.5.2 run's only final read failed with a cut-short archive, leaving every acknowledged
    creation unjudged. A cut-short copy is made again; a missing dir is not."""
    remote = _CutShort(failures=2)
    assert _read_log_db(monkeypatch, remote).read_log("n1") == [(7, 2, "TopicRecord", {"name": "t"})]
    assert remote.gets == 3
    always = _CutShort(failures=99)
    with pytest.raises(RemoteError, match="cut short"):
        _read_log_db(monkeypatch, always).read_log("n1")
    assert always.gets == 3
    missing = _CutShort(failures=99, message="remote path does not exist")
    with pytest.raises(RemoteError, match="does not exist"):
        _read_log_db(monkeypatch, missing).read_log("n1")
    assert missing.gets == 1


def test_docker_get_names_an_archive_cut_short_instead_of_a_bare_tar_error(tmp_path):
    """The engine ends its archive early when a file vanishes while it is read; the copy fails
    with a RemoteError naming the node and the path, not a bare tarfile.ReadError."""
    import io
    import tarfile
    from clusters.docker_remote import DockerRemote
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        data = b"x" * 5000
        info = tarfile.TarInfo("metadata/00000000000000000000.log")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    cut = buf.getvalue()[:2048]                                   # the header and part of the data
    container = types.SimpleNamespace(get_archive=lambda path: (iter([cut]), {"name": "metadata"}))
    client = types.SimpleNamespace(containers=types.SimpleNamespace(get=lambda name: container))
    with pytest.raises(RemoteError, match=r"n1: copy failed: the archive was cut short .*vanished"):
        DockerRemote(client, {"n1": "c1"}).get("n1", "/var/lib/kafka/metadata", tmp_path / "m")
