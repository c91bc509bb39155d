"""Short real runs of the queue workload (Jepsen's Kafka queue) in Docker, without faults,
on both targets: our brokers (``--db kraft``: 3 controllers and, by the workload's
default, 3 brokers) and Apache Kafka's (``--db kafka``: 3 controllers and 3 brokers,
dedicated). Asserts from the stored history itself that sends were acknowledged with
offsets, consecutive per partition, polls read them back, the final drain reached every
partition's end, and the queue checkers judged the run valid; and that nothing is left
behind.
"""
from __future__ import annotations

import json

import pytest

from checkers.registry import reported_names
from history import read_history
from tests.integration.conftest import harness_run_id, run_labelled

pytestmark = [pytest.mark.docker]

#: the queue checker and each of its kinds (Jepsen's names)
QUEUE_CHECKERS = tuple(reported_names(["queue"]))


def _check(history, results, min_acked: int) -> list[dict]:
    sends = [op for op in history if op["f"] == "send" and op["type"] == "ok"]
    assert len(sends) >= min_acked, len(sends)
    by_partition: dict[int, list[int]] = {}
    for op in sends:
        by_partition.setdefault(op["value"]["partition"], []).append(op["value"]["offset"])
    assert set(by_partition) == {0, 1, 2}
    for offsets in by_partition.values():          # no faults: every send landed, one after another
        assert sorted(offsets) == list(range(len(offsets)))
    assert not [op for op in history if op["f"] == "send" and op["type"] in ("fail", "info")]
    polls = [op for op in history if op["f"] == "poll" and op["type"] == "ok" and not op["value"].get("final")]
    assert sum(len(op["value"]["records"]) for op in polls) > 0
    finals = [op for op in history if op["f"] == "poll" and op["type"] == "ok" and op["value"].get("final")]
    drained = {(op["value"]["partition"], r[0]): r[1] for op in finals for r in op["value"]["records"]}
    assert all(drained.get((op["value"]["partition"], op["value"]["offset"])) == op["value"]["value"]
               for op in sends)
    for name in QUEUE_CHECKERS:
        assert results["checkers"][name]["valid"] is True, (name, json.dumps(results["checkers"][name])[:500])
    assert results["checkers"]["unseen"]["acked"] == len(sends)
    return sends


@pytest.mark.slow      # about 45 s; tests/test_queue_kraft_inproc.py runs the queue client on real brokers in-process
def test_queue_on_our_brokers_without_faults(engine, kraft_chaos_run):
    results, run_dir = kraft_chaos_run(db="kraft", workload="queue", nodes=3, time_limit=30, nemesis=[],
                                       concurrency=6, rate=60, subnet="10.77.44.0/24", seed=17,
                                       cluster="docker")
    history = read_history(run_dir / "history.jsonl")
    _check(history, results, 400)
    assert results["valid"] is True, json.dumps(results["anomalies"])
    test = json.loads((run_dir / "test.json").read_text())
    assert test["config"]["brokers"] == 3 and "--brokers 3" in test["command"]
    for node in ("n4", "n5", "n6"):               # the brokers' partition replicas were collected
        assert "process.roles=broker" in (run_dir / "nodes" / node / "node.properties").read_text()
        assert list((run_dir / "nodes" / node / "data").glob("partitions/queue-*"))
    assert run_labelled(engine, harness_run_id(run_dir, 17)) == ([], [])


@pytest.mark.kafka
@pytest.mark.slow      # about 85 s; tests/test_queue_kafka_client.py tests the client without brokers
def test_queue_on_kafka_brokers_without_faults(engine, kraft_chaos_run):
    results, run_dir = kraft_chaos_run(db="kafka", workload="queue", nodes=3, time_limit=30, nemesis=[],
                                       concurrency=6, rate=60, subnet="10.77.45.0/24", seed=18,
                                       cluster="docker", acks=-1, min_insync_replicas=2)
    history = read_history(run_dir / "history.jsonl")
    _check(history, results, 400)
    # the final phase reads the controllers' metadata logs too, so the quorum checkers judge them
    assert results["valid"] is True, json.dumps(results["anomalies"])
    assert results["checkers"]["divergence"]["valid"] is True
    assert not any(results["anomalies"].values())
    assert run_labelled(engine, harness_run_id(run_dir, 18)) == ([], [])
