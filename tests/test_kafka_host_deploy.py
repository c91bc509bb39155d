"""``--db kafka`` on host processes (``--cluster netns`` and ``ssh``): what the deploy table
gives (targets/registry.py, targets/kafka/host_files.py: Kafka's jars and the image's log4j2
configs at the image's paths, Java >= 17), how a host's java is judged (clusters/jre.py), and a
host whose java is too old: this host for netns, an sshd host for ssh (tests/sshd_hosts.py),
each a cluster error (exit 4) naming the host and cause, with nothing left behind."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from clusters import jre
from clusters.errors import ClusterError
from clusters.registry import Resolved
from clusters.ssh_scripts import preflight_script
from harness import exits
from harness.cli import main as cli
from targets.kafka import host_files
from targets.kafka.image import config_files
from targets.kafka.logging_stacks import CONFIG_DIR
from targets.kafka.server_config import LIBS_DIR, server_argv
from targets.kafka.settings import KafkaSettings
from targets.registry import node_software, target_spec
from tests.sshd_hosts import SshdHosts, sshd_skip_reason

OPENJDK_17 = 'openjdk version "17.0.15" 2025-04-15'


def fake_java(folder: Path, version_line: str) -> Path:
    """``folder/java``: a script that prints ``version_line`` to stderr for ``-version``."""
    folder.mkdir(parents=True, exist_ok=True)
    java = folder / "java"
    java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\necho 'Runtime Environment (fake)' >&2\n")
    java.chmod(0o755)
    return folder


@pytest.fixture
def fake_libs(tmp_path, monkeypatch):
    """Kafka's jars resolved into ``tmp_path/cache/4.3.1/libs`` (no Maven: a stand-in jar)."""
    libs = tmp_path / "cache" / "4.3.1" / "libs"
    libs.mkdir(parents=True)
    (libs / "kafka_2.13-4.3.1.jar").write_bytes(b"PK")
    asked = []

    def resolve(version, cache_root=None, log=None):
        asked.append(version)
        return libs
    monkeypatch.setattr(host_files, "resolve_jars", resolve)
    return libs, asked


@pytest.mark.parametrize("backend", ["netns", "ssh"])
def test_the_deploy_table_gives_kafka_its_jars_configs_and_java(backend, fake_libs):
    libs, asked = fake_libs
    sw = node_software(target_spec("kafka"), Resolved(backend), KafkaSettings(kafka_version="4.3.1"), print)
    assert asked == ["4.3.1"]
    assert sw.image is None and sw.min_java == 17
    assert sw.files == {"/opt/kafka/libs": libs, "/opt/kafka/config": libs.parent / "config"}
    assert sw.env == {"KAFKA_HOME": "/opt/kafka", "KAFKA_VERSION": "4.3.1"}
    # the very configs baked into the node image, where the server's and the tools' command lines look
    for name, data in config_files("4.3.1").items():
        assert (libs.parent / name).read_bytes() == data
    assert {CONFIG_DIR, LIBS_DIR} == set(sw.files)
    assert f"-Dlog4j2.configurationFile={CONFIG_DIR}/log4j2.properties" in server_argv("controller")
    argv = server_argv("controller")
    assert argv[0] == "java" and f"{LIBS_DIR}/*" in argv and "-Xmx256m" in argv
    assert "-Xmx512m" in server_argv("broker")


def test_configs_are_rewritten_only_when_they_differ(tmp_path):
    files = config_files("4.3.1")
    dest = host_files.write_configs(tmp_path / "config", files)
    f = dest / "log4j2.properties"
    before = f.stat().st_mtime_ns
    host_files.write_configs(dest, files)
    assert f.stat().st_mtime_ns == before
    f.write_text("stale")
    host_files.write_configs(dest, files)
    assert f.read_bytes() == files["config/log4j2.properties"]
    assert sorted(p.name for p in dest.iterdir()) == ["log4j2.properties", "tools-log4j2.properties"]


@pytest.mark.parametrize("line, major", [
    (OPENJDK_17, 17), ('openjdk version "21" 2023-09-19', 21), ('java version "1.8.0_292"', 8),
    ('openjdk version "11.0.2" 2019-01-15', 11), ('openjdk version "17-ea"', 17), ("no version here", None)])
def test_java_major(line, major):
    assert jre.java_major(line) == major


def test_probe_problems_name_the_cause():
    assert jre.probe_problem(f"python /usr/bin/python3.11 3.11\njava /usr/lib/jvm/j17/bin/java {OPENJDK_17}", 17) is None
    assert "no java on PATH" in jre.probe_problem("overlay\njava-missing\n", 17)
    assert "openjdk-17-jre-headless" in jre.probe_problem("java-missing", 17)
    old = jre.probe_problem('java /opt/j11/bin/java openjdk version "11.0.2"', 17)
    assert old == "/opt/j11/bin/java is Java 11; the nodes need Java >= 17"
    assert "did not report a version" in jre.probe_problem("java /x/java Error: broken", 17)
    assert "could not be read" in jre.probe_problem("", 17)


def test_local_java_is_judged_on_the_nodes_path(tmp_path):
    old = fake_java(tmp_path / "old", 'java version "1.8.0_292"')
    new = fake_java(tmp_path / "new", OPENJDK_17)
    path = "/usr/bin:/bin"
    assert "is Java 8; the nodes need Java >= 17" in jre.local_java_problem(17, f"{old}:{path}")
    assert jre.local_java_problem(17, f"{new}:{path}") is None
    assert "no java on PATH" in jre.local_java_problem(17, str(tmp_path / "empty"))


def test_the_ssh_preflight_asks_for_java_only_when_a_jvm_runs():
    assert "java-missing" in preflight_script("python3", java=True)
    assert "java" not in preflight_script("python3")


def _netns_skip() -> str | None:
    from tests.integration.conftest import netns_skip_reason
    return netns_skip_reason()


@pytest.mark.netns
@pytest.mark.skipif(_netns_skip() is not None, reason=_netns_skip() or "")
def test_netns_refuses_a_host_whose_java_is_too_old(tmp_path):
    from clusters.netns_cluster import NetnsCluster
    old = fake_java(tmp_path / "bin", 'openjdk version "11.0.2" 2019-01-15')
    c = NetnsCluster(2, "kcjre", subnet="10.83.9.0/24", env={"PATH": f"{old}:/usr/bin:/bin"}, min_java=17)
    with pytest.raises(ClusterError, match=r"this host's java cannot run the nodes: .*/java is Java 11; "
                                           r"the nodes need Java >= 17"):
        c.setup()
    from tests.integration.conftest import netns_leftovers
    assert netns_leftovers("kcjre") == []


def _kafka_jars_skip() -> str | None:
    from targets.kafka.jars import DEFAULT_VERSION, cached_libs
    if cached_libs(DEFAULT_VERSION) is None and shutil.which("mvn") is None:
        return "Kafka's jars are not cached and Maven is missing (scripts/ensure-maven.sh)"
    return None


@pytest.mark.netns
@pytest.mark.kafka
@pytest.mark.skipif(sshd_skip_reason() is not None, reason=sshd_skip_reason() or "")
@pytest.mark.skipif(_kafka_jars_skip() is not None, reason=_kafka_jars_skip() or "")
def test_ssh_run_on_a_host_whose_java_is_too_old_is_exit_4_naming_it(tmp_path, capsys):
    with SshdHosts(3, 5, net="10.84") as hosts:
        # host 2's sshd sees a Java 11 first on PATH (/usr/local/bin comes before /usr/bin)
        hosts.bind_in_host(2, fake_java(hosts.dir / "oldjava", 'openjdk version "11.0.2" 2019-01-15'),
                           "/usr/local/bin")
        run_dir = str(hosts.dir / "runs")
        f = hosts.hosts_toml(run_dir=run_dir)
        code = cli.main(["run", "--db", "kafka", "--cluster", "ssh", "--hosts", str(f), "--nodes", "3",
                         "--kafka-topology", "combined", "--time-limit", "5", "--nemesis", "none",
                         "--store", str(tmp_path / "store"), "--seed", "1", "--no-progress"])
        err = capsys.readouterr().err
        assert code == exits.EXIT_CLUSTER, err
        assert (f"ssh host root@{hosts.ips[1]}:22: /usr/local/bin/java is Java 11; the nodes need Java >= 17"
                in err), err
        assert hosts.ips[0] not in err and hosts.ips[2] not in err and "Traceback" not in err
        assert hosts.leftovers(run_dir) == []
