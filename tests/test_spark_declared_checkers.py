"""``analyze`` judges a run by exactly the checkers ``check`` runs on it (its workload's):
the queue workload's checkers, which Spark has no job for, are run as Python fold
checkers; a Kafka metadata run's divergence takes each node's high watermark from the
history's final reads (its node data has none), as checkers/divergence.py does."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from checkers.registry import reported_names
from history import store
from harness.run.check import check_run_dir
from tests.queue_workload_fakes import FakeQueueCluster, run_queue
from tests.spark_helpers import analyze_store

pytestmark = pytest.mark.spark

KAFKA_RUN = Path(__file__).parent / "data" / "kafka" / "run"
VERDICT = {True: "valid", False: "invalid"}


def _name(v) -> str:
    return VERDICT.get(v, "unknown")


@pytest.fixture(scope="module")
def analysed(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("store")
    lossy = root / "queue-lossy"
    lossy.mkdir()
    run_queue(lossy, FakeQueueCluster(drop_every=5))
    store.write_test_json(lossy, {"workload": "queue", "nemesis": []}, 1, "queue, lost sends")
    shutil.copytree(KAFKA_RUN, root / "kafka-metadata")
    by_name, analysis = analyze_store(spark, root)
    checked = {name: check_run_dir(root / name, out_dir=tmp_path_factory.mktemp("out"))
               for name in ("queue-lossy", "kafka-metadata")}
    return by_name, checked


def test_queue_run_with_a_lost_send_is_invalid_with_its_jepsen_kinds_counted(analysed):
    by_name, checked = analysed
    r, c = by_name["queue-lossy"], checked["queue-lossy"]
    assert c["valid"] is False and c["anomalies"]["unseen"] > 0 and c["anomalies"]["lost-write"] > 0
    assert r["verdict"] == "invalid"
    assert r["checkers"]["unseen"] == r["checkers"]["lost-write"] == "invalid"
    assert r["anomalies"]["unseen"] == c["anomalies"]["unseen"]
    # the same checkers as check, with the same verdicts and counts: the queue's kinds stand in
    # for the Spark jobs' lost-write, duplicate, inconsistent-offsets and phantom
    assert set(r["checkers"]) == set(c["checkers"])
    for name, res in c["checkers"].items():
        if name in reported_names(["queue"]):
            assert r["checkers"][name] == _name(res["valid"]), name
            assert r["anomalies"][name] == c["anomalies"][name], name


def test_kafka_metadata_run_divergence_from_the_final_reads(analysed):
    by_name, checked = analysed
    r, c = by_name["kafka-metadata"], checked["kafka-metadata"]
    assert c["checkers"]["divergence"]["valid"] is True     # the nodes' data hold no high watermark
    assert r["checkers"]["divergence"] == "valid"
    assert set(r["checkers"]) == set(c["checkers"])
    assert r["checkers"] == {k: _name(v["valid"]) for k, v in c["checkers"].items()}
    assert r["verdict"] == _name(c["valid"])
