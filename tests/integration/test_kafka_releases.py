"""Real runs of Apache Kafka releases other than the default (``--kafka-version``), and of a
distribution assembled from a release's Maven jars (``--kafka-dist``), judged from their
histories.

* The default suite runs one short run on a 3.x release (3.7.2: log4j 1, static voters,
  controllers without ``advertised.listeners``, DescribeQuorum v1; the first line with
  check quorum, KAFKA-15489) on 3 combined nodes; the other Kafka runs of the default suite
  use the newest 4.x (the default version).
* ``--kafka-dist`` on a distribution assembled from 3.9.2's Maven jars: the ``.tgz`` on docker
  and the folder on netns in the default suite (about 40 s each), the ``.tgz`` on ssh hosts
  in ``-m slow`` (about 110 s).
* ``-m slow``: the newest patch of every other line of the releases table.

A run must reach a verdict with acknowledged creations, faults and leaders seen, and show no
anomaly but the election and fencing anomalies its release is known for (the Kafka bug catalogue's
:func:`harness.catalogue.kafka_bugs.known_kinds`).
"""
from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import pytest

from harness.catalogue.kafka_bugs import known_kinds
from history import read_history
from targets.kafka.releases import DEFAULT_VERSION, RELEASES, release
from tests.integration.conftest import harness_run_id, netns_skip_reason, run_labelled
from tests.sshd_hosts import SshdHosts, sshd_skip_reason

pytestmark = [pytest.mark.kafka,
              pytest.mark.skipif(shutil.which("mvn") is None, reason="Maven (mvn) resolves Kafka's jars")]

FAULTS = dict(workload="metadata", kafka_topology="combined", nodes=3, nemesis=["partition", "kill", "pause"],
              nemesis_interval=4, nemesis_duration=5, nemesis_mode="serial", concurrency=5, rate=40)
SHORT_3X = "3.7.2"


def judged(results: dict, run_dir: Path, version: str) -> list[dict]:
    """Assert the run of ``version`` was a real one (faults, acknowledged creations, a leader
    through DescribeQuorum, final reads of the metadata logs) whose anomalies are at most its
    release's known ones; returns its history."""
    history = read_history(run_dir / "history.jsonl")
    assert {op["f"] for op in history if op["process"] == "nemesis"} & {"start-partition", "start-kill"}
    assert sum(op["f"] == "append" and op["type"] == "ok" for op in history) >= 30
    assert any(op["f"] == "describe-quorum" and op["type"] == "ok" for op in history)
    assert any(op["f"] == "read" and op["type"] == "ok" and op["value"]["final"] for op in history)
    assert results["valid"] in (True, False), results
    found = {name for name, n in results["anomalies"].items() if n}
    test = json.loads((run_dir / "test.json").read_text())
    # partitions, kills and pauses can show a release's known election and fencing bugs (every 3.x
    # lacks Pre-Vote, KAFKA-16164; 3.3-3.6 lack check quorum, KAFKA-15489); never lost or
    # divergent data, which those bugs do not cause without a disk fault
    known = set(known_kinds(version, test["config"]["kraft_version"])) & {"disruptive-election", "stale-leader"}
    assert found <= known, f"Kafka {version}: {json.dumps(results['anomalies'])} (known: {sorted(known)})"
    assert test["config"]["kafka_version"] == version
    assert test["config"]["kraft_version"] == release(version, newer=True).default_kraft_version
    return history


@pytest.mark.docker
def test_a_short_run_on_a_3x_release(engine, kraft_chaos_run):
    results, run_dir = kraft_chaos_run(db="kafka", kafka_version=SHORT_3X, time_limit=25, subnet="10.122.0.0/24",
                                       seed=7, **FAULTS)
    judged(results, run_dir, SHORT_3X)        # disruptive-election at most: 3.7 has no Pre-Vote
    props = (run_dir / "nodes" / "n1" / "server.properties").read_text()
    assert "controller.quorum.voters=1@" in props and "CONTROLLER://" not in props.split("advertised.listeners=")[1]
    assert "(org.apache.kafka.raft.QuorumState)" in (run_dir / "nodes" / "n1" / "server.log").read_text()
    assert run_labelled(engine, harness_run_id(run_dir, 7)) == ([], [])


OTHERS = [r.newest for r in RELEASES if r.newest not in (SHORT_3X, DEFAULT_VERSION)]


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("version", OTHERS)
def test_every_other_release_runs_to_a_verdict(engine, kraft_chaos_run, version):
    results, run_dir = kraft_chaos_run(db="kafka", kafka_version=version, time_limit=25,
                                       subnet="10.123.0.0/24", seed=11, **FAULTS)
    judged(results, run_dir, version)
    assert run_labelled(engine, harness_run_id(run_dir, 11)) == ([], [])


# --- a user's own build: a distribution assembled from one release's Maven jars -------------

DIST_VERSION = "3.9.2"


@pytest.fixture(scope="module")
def assembled_dist(tmp_path_factory) -> tuple[Path, Path]:
    """``(folder, .tgz)`` of ``kafka_2.13-<DIST_VERSION>``: libs/ holding the jars Maven
    resolved for that release (its reload4j logging jars included), bin/ and config/ as a
    distribution has them: what a pre-release check of a branch's build looks like."""
    from targets.kafka.jars import resolve_jars
    root = tmp_path_factory.mktemp("dist")
    home = root / f"kafka_2.13-{DIST_VERSION}"
    shutil.copytree(resolve_jars(DIST_VERSION), home / "libs")
    (home / "bin").mkdir()
    (home / "bin" / "kafka-server-start.sh").write_text('#!/bin/sh\nexec java -cp "$(dirname "$0")/../libs/*" '
                                                        'kafka.Kafka "$@"\n')
    (home / "config").mkdir()
    (home / "config" / "server.properties").write_text("process.roles=broker,controller\n")
    archive = root / f"kafka_2.13-{DIST_VERSION}.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(home, arcname=home.name)
    return home, archive


def dist_judged(results: dict, run_dir: Path, dist: Path) -> None:
    from targets.kafka.dist import read_dist
    judged(results, run_dir, DIST_VERSION)    # disruptive-election at most: 3.9 has no Pre-Vote
    test = json.loads((run_dir / "test.json").read_text())
    assert test["config"]["kafka_dist"] == str(dist) and test["config"]["kafka_dist_digest"] == read_dist(dist).digest
    assert f"--kafka-dist {dist}" in test["command"] and "--kafka-version" not in test["command"]


@pytest.mark.docker
def test_a_distribution_tgz_runs_on_docker(engine, kraft_chaos_run, assembled_dist):
    _, archive = assembled_dist
    results, run_dir = kraft_chaos_run(db="kafka", kafka_dist=str(archive), time_limit=20, subnet="10.124.0.0/24",
                                       seed=13, **FAULTS)
    dist_judged(results, run_dir, archive)
    labels = engine.images.get(_image_of(run_dir)).labels
    # the image is keyed by the jars' digest: an earlier run's identical distribution (another
    # pytest tmp folder) may have built it, and its label names that run's path
    assert labels["kraft-chaos.kafka-source"].startswith("dist:")
    assert labels["kraft-chaos.kafka-source"].endswith(f"/{archive.name}")
    assert run_labelled(engine, harness_run_id(run_dir, 13)) == ([], [])


def _image_of(run_dir: Path) -> str:
    line = next(ln for ln in (run_dir / "harness.log").read_text().splitlines() if "image kraft-chaos-kafka:" in ln)
    return "kraft-chaos-kafka:" + line.split("image kraft-chaos-kafka:")[1].split()[0].rstrip(")")


@pytest.mark.netns
@pytest.mark.skipif(netns_skip_reason() is not None, reason=netns_skip_reason() or "")
def test_a_distribution_folder_runs_on_netns(kraft_chaos_run, assembled_dist):
    home, _ = assembled_dist
    results, run_dir = kraft_chaos_run(db="kafka", kafka_dist=str(home), cluster="netns", time_limit=20,
                                       subnet="10.125.0.0/24", seed=17, **FAULTS)
    dist_judged(results, run_dir, home)
    assert "backend: netns" in (run_dir / "harness.log").read_text()


@pytest.mark.netns
@pytest.mark.slow
@pytest.mark.skipif(sshd_skip_reason() is not None, reason=sshd_skip_reason() or "")
def test_a_distribution_runs_on_ssh_hosts(kraft_chaos_run, assembled_dist):
    """The same distribution on ``--cluster ssh`` (sshd hosts in namespaces, tests/sshd_hosts.py):
    its libs deployed as host files, run by the hosts' Java."""
    _, archive = assembled_dist
    with SshdHosts(3, 0, net="10.126") as hosts:
        run_dir_on_hosts = str(hosts.dir / "runs")
        f = hosts.hosts_toml(run_dir=run_dir_on_hosts)
        results, run_dir = kraft_chaos_run(db="kafka", kafka_dist=str(archive), cluster="ssh", hosts=str(f),
                                           time_limit=20, seed=19, **FAULTS)
        dist_judged(results, run_dir, archive)
        assert "backend: ssh" in (run_dir / "harness.log").read_text()
        assert hosts.leftovers(run_dir_on_hosts) == []
