"""A short real kv run: a 3-node quorum in Docker, put/get/cas on 5 keys under faults.

Asserts from the stored history that faults were injected, that reads,
writes and cas were acknowledged, and that the linearizability checker (by
key) judged the run valid over every key.
"""
from __future__ import annotations

import json

import pytest

from history import read_history
from harness.reports.plot_data import fault_intervals
from tests.integration.conftest import harness_run_id, run_labelled

pytestmark = pytest.mark.docker

SUBNET = "10.76.0.0/24"


@pytest.mark.slow      # about 35 s; tests/test_runner_kv.py and tests/test_workload_kv.py test the kv run without a cluster
def test_short_kv_run_under_faults_is_linearizable(engine, kraft_chaos_run):
    results, run_dir = kraft_chaos_run(nodes=3, time_limit=24, nemesis=["partition", "kill", "pause"],
                                       nemesis_interval=2, nemesis_duration=5, nemesis_mode="serial", concurrency=5, rate=50,
                                       subnet=SUBNET, seed=11, workload="kv")
    history = read_history(run_dir / "history.jsonl")
    assert len(fault_intervals(history)) >= 2
    ok = {f: sum(1 for op in history if op["f"] == f and op["type"] == "ok") for f in ("read", "write", "cas")}
    assert ok["read"] >= 50 and ok["write"] >= 50 and ok["cas"] >= 5, ok
    lin = results["checkers"]["linearizability"]
    assert lin["valid"] is True, json.dumps(lin)
    assert lin["partitions"] == 5 and lin["ops"] >= sum(ok.values())
    assert results["valid"] is True
    assert run_labelled(engine, harness_run_id(run_dir, 11)) == ([], [])
