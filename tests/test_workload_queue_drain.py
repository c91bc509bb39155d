"""The queue workload's drain (workloads/queue_drain.py), its registry entry and final phase,
and a stored queue run checked by its workload's checkers."""
import asyncio

import pytest

from checkers.fold import CheckContext
from checkers.registry import make_checkers
from history import HistoryWriter, read_history
from history import outcomes
from tests.queue_workload_fakes import (BROKERS, QUEUE_CHECKERS, FakeQueueCluster, make_wl, queue_topology,
                                        verdicts)
from workloads.queue import QueueOptions, QueueWorker, QueueWorkload
from workloads.queue_drain import drain, drain_partition
from workloads.registry import workload_spec


# -- the drain -------------------------------------------------------------------------------

def test_the_drain_reads_in_pages_and_records_an_empty_page_for_an_empty_partition(tmp_path):
    cluster = FakeQueueCluster()
    wl = make_wl(tmp_path, cluster, drain_max_records=4, partitions=2)

    async def main():
        await wl.setup()
        cluster.topics["queue"][0].extend(range(100, 110))
        return await drain(wl, timeout_s=5, retry_s=0.01)

    assert asyncio.run(main()) == {0: 10, 1: 0}
    wl.history.close()
    ops = read_history(wl.history.path)
    p0 = [o["value"] for o in ops if o["type"] == "ok" and o["value"]["partition"] == 0]
    assert [(v["from"], len(v["records"])) for v in p0] == [(0, 4), (4, 4), (8, 2)]
    assert all(v["final"] is True and v["end"] == 10 for v in p0)
    p1 = [o["value"] for o in ops if o["type"] == "ok" and o["value"]["partition"] == 1]
    assert p1 == [{"partition": 1, "from": 0, "final": True, "end": 0, "records": []}]


def test_the_drain_waits_for_a_leader_and_follows_a_growing_high_watermark(tmp_path):
    cluster = FakeQueueCluster()
    wl = make_wl(tmp_path, cluster, drain_max_records=100, partitions=1)
    real_end = None

    async def main():
        nonlocal real_end
        await wl.setup()
        cluster.topics["queue"][0].extend([1, 2])
        cluster.knobs["leaderless_requests"] = 5
        calls = 0
        client_end = type(cluster.clients[0]).end_offset
        real_end = client_end

        async def end_offset(self, topic, partition):     # the HW catches up once after the first ask
            nonlocal calls
            hw = await client_end(self, topic, partition)    # raises while there is no leader
            calls += 1
            if calls == 1:
                cluster.topics["queue"][0].append(3)
            return hw

        type(cluster.clients[0]).end_offset = end_offset
        try:
            return await drain_partition(wl, 0, timeout_s=5, retry_s=0.01)
        finally:
            type(cluster.clients[0]).end_offset = real_end

    assert asyncio.run(main()) == 3
    wl.history.close()
    recs = [r for o in read_history(wl.history.path) if o["type"] == "ok" for r in o["value"]["records"]]
    assert recs == [[0, 1], [1, 2], [2, 3]]


def test_a_drain_that_never_finds_a_leader_gives_up_and_lost_is_unknown(tmp_path):
    cluster = FakeQueueCluster()
    wl = make_wl(tmp_path, cluster, partitions=1)

    async def main():
        await wl.setup()
        w = QueueWorker(wl, 0)
        await w.invoke({"f": "send", "value": {"partition": 0, "value": 5}}, 1)
        await w.close()
        cluster.knobs["leaderless_requests"] = 10**6
        return await drain(wl, timeout_s=0.1, retry_s=0.01)

    assert asyncio.run(main()) == {0: None}
    wl.history.close()
    valid, res = verdicts(read_history(wl.history.path))
    assert valid["unseen"] == "unknown" and res["unseen"]["unjudged"] == 1


# -- the registry --------------------------------------------------------------------------

def test_the_queue_workload_is_registered_with_its_drain_and_checkers():
    spec = workload_spec("queue")
    assert spec.workload is QueueWorkload and set(spec.dbs) == {"kraft", "kafka"}
    assert spec.final is not None and spec.final.__name__ == "queue_final_phase"
    assert set(QUEUE_CHECKERS) == {"queue", "G1a", "lost-write", "unseen", "duplicate", "inconsistent-offsets",
                                   "nonmonotonic-poll", "int-nonmonotonic-poll", "phantom", "reordered-send"}
    assert set(make_checkers(spec.checkers, CheckContext())) == set(spec.checkers)


def test_the_final_phase_waits_for_a_quorum_leader_then_drains(tmp_path):
    cluster = FakeQueueCluster()
    wl = make_wl(tmp_path, cluster, partitions=2)
    asked = []

    ops = run_final_phase(wl, cluster, asked, logs=None)
    assert asked == ["leader", "catch-up", "describe", "logs"]
    assert [[42]] == [[v for _o, v in o["value"]["records"]] for o in ops
                      if o["type"] == "ok" and o["f"] == "poll" and o["value"]["partition"] == 1]
    assert not [o for o in ops if o["f"] == "read"]     # a target without readable logs: no reads


def run_final_phase(wl, cluster, asked, logs):
    """The queue final phase against a stand-in quorum whose controllers' logs are ``logs``."""
    body = {"LeaderId": 1, "LeaderEpoch": 2, "HighWatermark": 2,
            "CurrentVoters": [{"ReplicaId": 1, "LogEndOffset": 2}]}

    class Quorum:
        async def wait_for_leader(self, timeout_s):
            asked.append("leader")
            return "n1"

        async def wait_for_catch_up(self, timeout_s):
            asked.append("catch-up")
            return True

        async def describe_leader(self):
            asked.append("describe")
            return "n1", body

        async def read_logs(self):
            asked.append("logs")
            return {"n1": logs}

    async def main():
        await wl.setup()
        cluster.topics["queue"][1].append(42)
        await workload_spec("queue").final(wl, Quorum())

    asyncio.run(main())
    wl.history.close()
    return read_history(wl.history.path)


def test_the_final_phase_reads_the_controllers_logs_where_the_target_can(tmp_path):
    """On Kafka the quorum checkers (divergence) need the metadata log's final reads."""
    cluster = FakeQueueCluster()
    wl = make_wl(tmp_path, cluster, partitions=2)
    logs = [(0, 2, "LeaderChange", {"LeaderId": 1}), (1, 2, "TopicRecord", {"name": "queue"})]
    ops = run_final_phase(wl, cluster, [], logs=logs)
    reads = [o for o in ops if o["f"] == "read" and o["type"] == "ok"]
    assert [o["node"] for o in reads] == ["n1", "n1"]       # the linearizable one, then n1's own
    assert reads[0]["value"]["high_watermark"] == 2 and len(reads[0]["value"]["records"]) == 2


def test_clients_fail_definitely_on_an_unknown_topic(tmp_path):
    """The fake's contract matches the real clients': an unknown partition is a definite error."""
    cluster = FakeQueueCluster()
    c = cluster.factory(BROKERS, QueueOptions())
    with pytest.raises(outcomes.DefiniteError, match="UNKNOWN_TOPIC_OR_PARTITION"):
        asyncio.run(c.send("nope", 0, 1))


@pytest.mark.parametrize("knobs,valid", [({}, True), ({"drop_every": 4}, False)])
def test_a_stored_queue_run_is_checked_by_the_queue_checkers(tmp_path, knobs, valid):
    """``kraft-chaos check`` path: test.json names the workload; its spec picks the checkers."""
    from history import store
    from harness.run.check import check_run_dir

    run = store.create_run_dir(tmp_path / "store", "queue-none", "20250101T000000.000Z")
    cluster = FakeQueueCluster(**knobs)
    wl = QueueWorkload(queue_topology(cluster), "cid", HistoryWriter(run / "history.jsonl"), 3,
                       QueueOptions(concurrency=4, rate=1000.0))

    async def main():
        await wl.setup()
        stop = asyncio.Event()
        task = asyncio.create_task(wl.run(stop, monitor=False))
        await asyncio.sleep(0.2)
        stop.set()
        await task
        await drain(wl, timeout_s=5.0, retry_s=0.01)

    asyncio.run(main())
    wl.history.close()
    store.write_test_json(run, {"nodes": 3, "workload": "queue", "db": "kafka"}, 3,
                          "kraft-chaos run --workload queue")
    results = check_run_dir(run)
    assert set(QUEUE_CHECKERS) <= set(results["checkers"])
    assert results["checkers"]["unseen"]["valid"] is valid
    if valid:
        assert all(results["checkers"][n]["valid"] is True for n in QUEUE_CHECKERS)
    else:       # the next send reuses a dropped ack's offset: two values there, out of order
        assert results["valid"] is False and results["anomalies"]["unseen"] > 0
        assert results["checkers"]["inconsistent-offsets"]["valid"] is False
        assert results["checkers"]["phantom"]["valid"] is True
