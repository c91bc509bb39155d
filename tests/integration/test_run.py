"""A short real run: a 3-node quorum in Docker under partitions, kills and pauses.

Asserts, from the stored history itself, that faults were injected for at
least 20 s (at least 2 of them), at least 100 appends were acknowledged, and
the checkers judged the run valid; and that nothing is left behind.
"""
from __future__ import annotations

import json

import pytest

from harness.history import read_history
from harness.plots import fault_intervals
from tests.integration.conftest import harness_run_id, run_labelled

pytestmark = pytest.mark.docker

SUBNET = "10.76.0.0/24"


def test_short_run_under_faults_is_valid(engine, kraft_chaos_run):
    results, run_dir = kraft_chaos_run(nodes=3, time_limit=32, nemesis=["partition", "kill", "pause"],
                                       nemesis_interval=2, nemesis_duration=6, concurrency=5, rate=50,
                                       subnet=SUBNET, seed=7)
    history = read_history(run_dir / "history.jsonl")
    windows = fault_intervals(history)
    assert len(windows) >= 2, windows
    assert sum(stop - start for _, start, stop in windows) >= 20, windows   # seconds
    ok_appends = [op for op in history if op["f"] == "append" and op["type"] == "ok"]
    assert len(ok_appends) >= 100
    assert results["valid"] is True, json.dumps(results["anomalies"])
    stored = json.loads((run_dir / "results.json").read_text())
    assert stored["valid"] is True
    for name in ("test.json", "harness.log"):
        assert (run_dir / name).is_file()
    for node in ("n1", "n2", "n3"):
        assert (run_dir / "nodes" / node / "data" / "meta.properties").is_file()
        assert (run_dir / "nodes" / node / "node.log").stat().st_size > 0
    # nothing of this run is left on the engine
    assert run_labelled(engine, harness_run_id(run_dir, 7)) == ([], [])
