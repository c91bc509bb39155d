"""``kraft-chaos run --cluster netns``: a real run of our quorum as namespaces on this host
(root, no Docker), with partitions and kills, judged; nothing left in ``ip netns list``,
``ip link`` or ``iptables -S`` afterwards. And ``--keep-cluster`` then ``kraft-chaos
teardown``."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.integration.conftest import harness_run_id, netns_leftovers, netns_skip_reason, run_processes

pytestmark = [pytest.mark.netns,
              pytest.mark.skipif(netns_skip_reason() is not None, reason=netns_skip_reason() or "")]

SUBNET = "10.88.30.0/24"


def test_netns_run_with_partitions_and_kills_gives_a_verdict(tmp_path):
    seed = 15015
    store = tmp_path / "store"
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--cluster", "netns", "--nodes", "5", "--time-limit", "20",
         "--nemesis", "partition,kill", "--nemesis-interval", "2", "--nemesis-duration", "4",
         "--subnet", SUBNET, "--store", str(store), "--seed", str(seed), "--no-progress"],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    assert "verdict: VALID" in proc.stdout, proc.stdout      # our quorum, no --unsafe switch
    run_dir = next(store.glob("append-partition+kill/*"))
    results = json.loads((run_dir / "results.json").read_text())
    assert results["valid"] is True
    assert results["stats"]["counts"]["append"]["ok"] > 100
    history = [json.loads(line) for line in (run_dir / "history.jsonl").open()]
    faults = {op["f"] for op in history if op["process"] == "nemesis"}
    assert {"start-partition", "start-kill"} <= faults, faults
    assert "backend: netns" in (run_dir / "harness.log").read_text()
    # every node's data was collected; the nodes' files stay under the run folder
    assert all((run_dir / "nodes" / f"n{i}" / "data" / "meta.properties").is_file() for i in range(1, 6))
    assert (run_dir / "netns" / "n1" / "upper" / "var" / "lib" / "kraft" / "node.log").is_file()
    run_id = harness_run_id(run_dir, seed)
    assert netns_leftovers(run_id) == []     # its namespaces, links and rules (another run's may exist)
    assert run_processes("kraft[.]node --config", str(run_dir / "netns")) == []      # its own nodes only


def test_kept_cluster_is_removed_by_kraft_chaos_teardown(tmp_path, monkeypatch, capsys):
    """``--keep-cluster`` leaves the nodes running; ``kraft-chaos teardown`` removes them
    (Docker and the lazyfs sweep are stubbed out here: they would touch other runs)."""
    seed = 15016
    store = tmp_path / "store"
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--cluster", "netns", "--nodes", "3", "--time-limit", "3",
         "--nemesis", "none", "--subnet", SUBNET, "--store", str(store), "--seed", str(seed),
         "--keep-cluster", "--no-progress"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run_id = harness_run_id(next(store.glob("append-*/*")), seed)
    kept = netns_leftovers(run_id)
    assert sum(x.startswith("netns") for x in kept) == 3
    import clusters.engine
    import harness.run.disks
    from clusters.errors import ClusterError
    from harness.cli import main as cli

    def no_engine(*a, **k):
        raise ClusterError("no engine (stubbed)")
    monkeypatch.setattr(clusters.engine, "connect_engine", no_engine)
    monkeypatch.setattr(harness.run.disks, "sweep_disks", lambda: [])
    assert cli.main(["teardown"]) == 0
    out = capsys.readouterr()
    assert f"removed netns kraft-chaos-{run_id}-n1" in out.out and "docker: skipped" in out.err
    assert netns_leftovers(run_id) == []
