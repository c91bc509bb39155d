"""A short real run of the ``txn`` workload (Jepsen's Kafka workload in transactions) on Apache
Kafka in Docker: 1 controller and 3 brokers, kills and pauses of the brokers, each client.

Asserts, from the stored run itself: transactions committed and acknowledged sends in Jepsen's
shapes, crashes that were replaced by fresh processes, a final phase that read every key from
its beginning, Jepsen's checker's verdict (valid), test.json naming the client and its
version, and nothing left behind.
"""
from __future__ import annotations

import json

import pytest

from history import read_history, store
from tests.integration.conftest import harness_run_id, run_labelled

pytestmark = [pytest.mark.docker, pytest.mark.kafka, pytest.mark.slow]


@pytest.mark.parametrize("client, seed, subnet", [("librdkafka", 31, "10.151.0.0/24"),
                                                  ("java", 32, "10.156.0.0/24")])
def test_txn_on_kafka_under_broker_faults(engine, kraft_chaos_run, client, seed, subnet):
    results, run_dir = kraft_chaos_run(db="kafka", workload="txn", nodes=1, time_limit=30,
                                       nemesis=["kill:one", "pause:one"], nemesis_targets="clients",
                                       nemesis_interval=5, nemesis_duration=4, nemesis_mode="serial",
                                       concurrency=6, rate=120, subnet=subnet, seed=seed, cluster="docker",
                                       client=client)
    history = read_history(run_dir / "history.jsonl")
    data = [op for op in history if op["f"] in ("send", "poll", "txn") and op["type"] != "invoke"]
    ok_sends = [m for op in data if op["type"] == "ok" for m in op["value"] if m[0] == "send"]
    assert len(ok_sends) >= 200, len(ok_sends)
    assert all(isinstance(m[2], list) and isinstance(m[2][0], int) for m in ok_sends)   # [offset, value]
    assert any(op["f"] == "txn" and op["type"] == "ok" for op in data)
    assert any(op["f"] == "crash" and op["type"] == "info" for op in history)
    assert any(op.get("error") == "aborted-on-purpose" for op in data)
    final = [op for op in history if op.get("final") and op["type"] == "ok"]
    assert final and any(op["f"] == "assign" and op.get("seek_to_beginning") for op in history)
    test = store.read_test_json(run_dir)
    assert test["client"]["client"] == client and test["client"]["sessions"] >= 6
    assert ("librdkafka" if client == "librdkafka" else "kafka_clients") in test["client"]
    assert test["config"]["client"] == client and f"--client {client}" in test["command"]
    txn = results["checkers"]["kafka-txn"]
    assert txn["valid"] is True, json.dumps(txn.get("anomalies"))[:2000]
    assert results["valid"] is True, json.dumps(results["anomalies"])
    assert run_labelled(engine, harness_run_id(run_dir, seed)) == ([], [])
