"""A short real run: a 3-node quorum in Docker under partitions, kills and pauses.

Asserts, from the stored history itself, that faults were injected for at
least 20 s (at least 2 of them), at least 100 appends were acknowledged, and
the checkers judged the run valid; and that nothing is left behind.
"""
from __future__ import annotations

import json

import pytest

from history import read_history
from harness.reports.plot_data import fault_intervals
from tests.integration.conftest import harness_run_id, run_labelled

pytestmark = pytest.mark.docker

SUBNET = "10.76.0.0/24"


def test_short_run_under_faults_is_valid(engine, kraft_chaos_run):
    results, run_dir = kraft_chaos_run(nodes=3, time_limit=32, nemesis=["partition", "kill", "pause"],
                                       nemesis_interval=2, nemesis_duration=6, nemesis_mode="serial", concurrency=5, rate=50,
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


@pytest.mark.spark
@pytest.mark.slow      # about 125 s; tests/test_spark_*.py test the analysis on made histories
def test_spark_analysis_of_real_runs_matches_check(engine, kraft_chaos_run, spark, tmp_path):
    """Real runs from our cluster (an append run and a kv run, 3 nodes under faults):
    the Spark path's verdicts, checker verdicts and anomaly counts equal ``check``'s."""
    from checkers.spark.analyze import analyze
    from checkers.spark.runs import find_runs
    from harness.run.check import run_target

    stored = {}
    for workload, subnet in (("append", "10.74.0.0/24"), ("kv", "10.73.0.0/24")):
        results, run_dir = kraft_chaos_run(nodes=3, time_limit=12, nemesis=["partition", "kill"],
                                           nemesis_interval=2, nemesis_duration=4, nemesis_mode="serial", concurrency=4,
                                           rate=40, subnet=subnet, seed=21, workload=workload)
        stored[run_dir.resolve()] = results
    roots = {d.parent.parent for d in stored}
    runs = [r for root in roots for r in find_runs(str(root), run_target)
            if r.history.parent.resolve() in stored]
    assert len(runs) == 2
    for i, r in enumerate(runs):
        r.run_id = i
    verdict = {True: "valid", False: "invalid"}
    for r in analyze(spark, runs, lin_timeout_s=60).runs:
        want = stored[r["info"].history.parent.resolve()]
        assert r["verdict"] == verdict.get(want["valid"], "unknown"), r
        for name, res in want["checkers"].items():
            assert r["checkers"][name] == verdict.get(res["valid"], "unknown"), name
            assert r["anomalies"][name] == want["anomalies"][name], name
