"""``kraft-chaos run --db kafka`` on host JVMs, no Docker: on ``--cluster netns`` (namespaces on
this host, this host's Java 17) and on ``--cluster ssh`` (sshd hosts in namespaces that the test
makes, tests/sshd_hosts.py), with partitions and kills, the metadata workload, judged; nothing
left behind (no namespace, link, iptables rule, ``kafka.Kafka`` JVM, host folder), and no copy
of Kafka's jars kept in the store. Slow: each takes one to three minutes."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from tests.integration.conftest import harness_run_id, netns_leftovers, netns_skip_reason, run_processes
from tests.sshd_hosts import SshdHosts, sshd_skip_reason

pytestmark = [pytest.mark.netns, pytest.mark.kafka, pytest.mark.slow,
              pytest.mark.skipif(shutil.which("java") is None, reason="no `java` on PATH (Kafka needs Java 17+)")]


def _run(store, *args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", "run", "--db", "kafka", "--workload", "metadata",
                           "--nemesis", "partition,kill", "--nemesis-interval", "3", "--nemesis-duration", "4",
                           "--store", str(store), "--no-progress", *args],
                          capture_output=True, text=True, timeout=timeout)


def _judged(proc: subprocess.CompletedProcess, store, nodes_path) -> tuple[dict, object]:
    """The run's results and folder; ``nodes_path(run_dir)``: the path only this run's nodes use
    (their processes are found by it, never another run's)."""
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    assert "verdict: " in proc.stdout, proc.stdout
    run_dir = next(store.glob("metadata-partition+kill/*"))
    results = json.loads((run_dir / "results.json").read_text())
    history = [json.loads(line) for line in (run_dir / "history.jsonl").open()]
    assert sum(op["f"] == "append" and op["type"] == "ok" for op in history) >= 20
    assert {"start-partition", "start-kill"} & {op["f"] for op in history if op["process"] == "nemesis"}
    assert any(op["f"] == "read" and op["type"] == "ok" and op["value"]["final"] for op in history)
    assert (run_dir / "nodes" / "n1" / "metadata" / "__cluster_metadata-0" / "quorum-state").is_file()
    assert (run_dir / "nodes" / "n1" / "server.log").stat().st_size > 0
    assert run_processes("kafka[.]Kafka", nodes_path(run_dir)) == []
    return results, run_dir


@pytest.mark.skipif(netns_skip_reason() is not None, reason=netns_skip_reason() or "")
def test_kafka_on_netns_gives_a_verdict_and_leaves_nothing(tmp_path):
    seed, store = 41, tmp_path / "store"
    proc = _run(store, "--cluster", "netns", "--time-limit", "20", "--seed", str(seed),
                "--subnet", "10.83.40.0/24", timeout=600)
    results, run_dir = _judged(proc, store, lambda run_dir: str(run_dir / "netns"))
    assert results["valid"] is True, json.dumps(results["anomalies"])
    assert "backend: netns" in (run_dir / "harness.log").read_text()
    assert not (run_dir / "netns" / "software" / "files").exists()      # the jars are not kept per run
    assert netns_leftovers(harness_run_id(run_dir, seed)) == []


@pytest.mark.skipif(sshd_skip_reason() is not None, reason=sshd_skip_reason() or "")
def test_kafka_on_ssh_gives_a_verdict_and_leaves_nothing(tmp_path):
    with SshdHosts(4, 41, net="10.84") as hosts:
        run_dir_on_hosts = str(hosts.dir / "runs")
        f = hosts.hosts_toml(run_dir=run_dir_on_hosts)
        store = tmp_path / "store"
        proc = _run(store, "--cluster", "ssh", "--hosts", str(f), "--nodes", "3", "--brokers", "1",
                    "--time-limit", "20", "--seed", "42", timeout=900)
        results, run_dir = _judged(proc, store, lambda run_dir: run_dir_on_hosts)
        assert results["valid"] is True, json.dumps(results["anomalies"])
        assert "backend: ssh" in (run_dir / "harness.log").read_text()
        assert hosts.leftovers(run_dir_on_hosts) == []
