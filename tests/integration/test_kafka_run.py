"""A short real run on Apache Kafka (``--db kafka``): 3 combined controller+broker nodes in
Docker under partitions, kills and pauses, with the metadata workload.

Asserts, from the stored history itself, that faults were injected, topic creations were
acknowledged, the monitor saw a leader through DescribeQuorum, the final reads carry the
controllers' metadata logs, and the checkers judged the run valid; and that nothing is
left behind.
"""
from __future__ import annotations

import json

import pytest

from harness.reports.plot_data import fault_intervals
from history import read_history
from tests.integration.conftest import harness_run_id, run_labelled

pytestmark = [pytest.mark.docker, pytest.mark.kafka]

SUBNET = "10.72.0.0/24"


@pytest.mark.slow      # about 60 s; tests/test_kafka_describe_quorum_live.py starts real Kafka controllers
def test_short_kafka_run_under_faults_is_valid(engine, kraft_chaos_run):
    results, run_dir = kraft_chaos_run(db="kafka", workload="metadata", kafka_topology="combined", nodes=3,
                                       time_limit=30, nemesis=["partition", "kill", "pause"],
                                       nemesis_interval=4, nemesis_duration=5, nemesis_mode="serial",
                                       concurrency=5, rate=40, subnet=SUBNET, seed=5)
    history = read_history(run_dir / "history.jsonl")
    windows = fault_intervals(history)
    assert len(windows) >= 2, windows
    ok_creates = [op for op in history if op["f"] == "append" and op["type"] == "ok"]
    assert len(ok_creates) >= 50
    assert all(op["value"] == {"value": op["value"]["value"]} for op in ok_creates)   # no offset from Kafka
    leaders = {op["value"]["LeaderId"] for op in history
               if op["f"] == "describe-quorum" and op["type"] == "ok"}
    assert leaders and leaders <= {1, 2, 3}
    finals = [op for op in history if op["f"] == "read" and op["type"] == "ok" and op["value"]["final"]]
    assert any(op["value"]["linearizable"] for op in finals)
    created = {op["value"]["value"] for op in ok_creates}
    in_log = {r[3] for r in finals[0]["value"]["records"] if r[2] == "data"}
    assert created <= in_log
    assert results["valid"] is True, json.dumps(results["anomalies"])
    lost = results["checkers"]["lost-write"]
    assert lost["acked"] == len(ok_creates) and lost["unjudged"] == 0
    assert len(results["checkers"]["divergence"]["high_watermarks"]) >= 2
    for node in ("n1", "n2", "n3"):
        assert (run_dir / "nodes" / node / "metadata" / "__cluster_metadata-0" / "quorum-state").is_file()
        assert (run_dir / "nodes" / node / "server.log").stat().st_size > 0
    assert run_labelled(engine, harness_run_id(run_dir, 5)) == ([], [])
