"""``kraft-chaos run --cluster ssh --hosts F``: a real run of our quorum on five sshd hosts that
the test makes (tests/sshd_hosts.py: Debian's sshd in network namespaces, generated keys and
known_hosts), with partitions and kills, judged; nothing left on the hosts afterwards (no
process, no run folder, no iptables chain). And ``--keep-cluster`` then ``kraft-chaos teardown
--cluster ssh --hosts F``."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness.cli import main as cli
from tests.integration.conftest import run_processes
from tests.sshd_hosts import SshdHosts, sshd_skip_reason

pytestmark = [pytest.mark.netns, pytest.mark.skipif(sshd_skip_reason() is not None, reason=sshd_skip_reason() or "")]


@pytest.fixture(scope="module")
def hosts():
    with SshdHosts(5, 2) as h:
        yield h


def test_ssh_run_with_partitions_and_kills_gives_a_verdict(hosts, tmp_path):
    seed, run_dir_on_hosts = 15017, str(hosts.dir / "runs")
    f = hosts.hosts_toml(run_dir=run_dir_on_hosts)
    store = tmp_path / "store"
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--cluster", "ssh", "--hosts", str(f), "--nodes", "5",
         "--time-limit", "20", "--nemesis", "partition,kill", "--nemesis-interval", "2", "--nemesis-duration", "4",
         "--store", str(store), "--seed", str(seed), "--no-progress"],
        capture_output=True, text=True, timeout=400)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    assert "verdict: VALID" in proc.stdout, proc.stdout      # our quorum, no --unsafe switch
    assert f"--cluster ssh --hosts {f}" in proc.stdout        # the repeat command names the hosts
    run_dir = next(store.glob("append-partition+kill/*"))
    results = json.loads((run_dir / "results.json").read_text())
    assert results["valid"] is True
    assert results["stats"]["counts"]["append"]["ok"] > 100
    history = [json.loads(line) for line in (run_dir / "history.jsonl").open()]
    faults = {op["f"] for op in history if op["process"] == "nemesis"}
    assert {"start-partition", "start-kill"} <= faults, faults
    log = (run_dir / "harness.log").read_text()
    assert "backend: ssh" in log and "removed iptables chain KC-partition" in log
    assert all((run_dir / "nodes" / f"n{i}" / "data" / "meta.properties").is_file() for i in range(1, 6))
    assert hosts.leftovers(run_dir_on_hosts) == []
    assert run_processes("kraft[.]node --config", run_dir_on_hosts) == []      # this run's nodes only


def test_kept_cluster_is_removed_by_kraft_chaos_teardown(hosts, tmp_path, capsys):
    run_dir_on_hosts = str(hosts.dir / "kept")
    f = hosts.hosts_toml("kept.toml", hosts=[{"host": ip} for ip in hosts.ips[:3]], run_dir=run_dir_on_hosts)
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--cluster", "ssh", "--hosts", str(f), "--nodes", "3",
         "--time-limit", "3", "--nemesis", "none", "--store", str(tmp_path / "store"), "--seed", "15018",
         "--keep-cluster", "--no-progress"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    left = hosts.leftovers(run_dir_on_hosts, settle_s=0)
    assert sum("kraft.node" in x for x in left) == 3, left       # the quorum still runs
    assert cli.main(["teardown", "--cluster", "ssh", "--hosts", str(f)]) == 0
    assert ": node init " in capsys.readouterr().out
    assert hosts.leftovers(run_dir_on_hosts) == []
