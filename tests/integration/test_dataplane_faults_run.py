"""The data plane's faults on a real Kafka cluster (Docker; 1 controller, 3 brokers, the queue
workload): pauses aimed at a partition's leader, found from the Metadata at each start
(``pause:partition-leader``), and clean stops of a broker (``stop``), then power losses of one
broker at a time (``kafka-broker-power``'s fault) with every reverted file listed. Nothing
acknowledged may be lost: a broker that stops cleanly or loses power is never a partition's
last in-sync replica here. Slow (a run takes about 1.5 minutes)."""
from __future__ import annotations

import json

import pytest

from history import NEMESIS, read_history

pytestmark = [pytest.mark.docker, pytest.mark.kafka, pytest.mark.slow]

BROKERS = {"n2", "n3", "n4"}


def _starts(history, f):
    return [op["value"] for op in history
            if op["process"] == NEMESIS and op["f"] == f and op["type"] == "info"]


def test_located_pauses_and_clean_stops_hit_brokers_and_lose_nothing(engine, kraft_chaos_run):
    results, run_dir = kraft_chaos_run(db="kafka", workload="queue", nodes=1, brokers=3, time_limit=45,
                                       nemesis=["pause:partition-leader", "stop:one"], nemesis_mode="serial",
                                       nemesis_interval=4.0, nemesis_duration=3.0, nemesis_targets="clients",
                                       concurrency=6, rate=60, subnet="10.152.0.0/24", seed=21,
                                       cluster="docker", acks=-1, min_insync_replicas=2)
    history = read_history(run_dir / "history.jsonl")
    pauses, stops = _starts(history, "start-pause"), _starts(history, "start-stop")
    assert pauses and stops
    assert all(set(v["targets"]) <= BROKERS and len(v["targets"]) == 1 for v in pauses + stops)
    assert any(not v.get("leader_unknown") for v in pauses)          # the leader was found
    assert not results["checkers"]["unseen"]["anomalies"], json.dumps(results["checkers"]["unseen"])[:500]
    assert results["checkers"]["crashed-node"]["valid"] is True


def test_broker_power_losses_list_every_reverted_file_and_lose_nothing(engine, kraft_chaos_run):
    results, run_dir = kraft_chaos_run(db="kafka", workload="queue", nodes=1, brokers=3, time_limit=60,
                                       nemesis=["power-loss:one"], nemesis_mode="serial", nemesis_interval=20.0,
                                       nemesis_duration=3.0, nemesis_targets="clients", concurrency=6, rate=60,
                                       subnet="10.152.0.0/24", seed=22, cluster="docker", acks=-1,
                                       min_insync_replicas=2)
    history = read_history(run_dir / "history.jsonl")
    losses = _starts(history, "start-power-loss")
    assert losses and all(set(v["targets"]) <= BROKERS for v in losses)
    reverted = [p for v in losses for lost in v["lost"].values() for p in lost["reverted_files"]]
    assert any(p.startswith("data/queue-") and p.endswith(".log") for p in reverted)   # segments never fsynced
    assert not results["checkers"]["unseen"]["anomalies"]
    assert results["checkers"]["unsynced-checkpoint"]["power_losses"] == len(losses)
