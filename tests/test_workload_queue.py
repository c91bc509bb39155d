"""The queue workload (workloads/queue.py) against an in-memory cluster.

Runs drive the real generator, workers and interpreter, then the drain, and
judge the history with the queue checkers: a healthy cluster gives valid
verdicts, and each misbehaving one (tests/queue_workload_fakes.py) makes its
checker fire. The drain, the registry and stored runs: test_workload_queue_drain.py.
"""
import asyncio
import json
import random

import pytest

from generator import Context
from history import HistoryWriter
from tests.queue_workload_fakes import (BROKERS, QUEUE_CHECKERS, FakeQueueCluster, make_wl,
                                        queue_topology, run_queue, verdicts)
from workloads.base import WorkloadSetupError
from workloads.queue import (QueueGenerator, QueueOptions, QueueWorker, QueueWorkload,
                             assigned_partitions)

# -- options, generator ----------------------------------------------------------------

@pytest.mark.parametrize("field,bad", [
    ("partitions", 0), ("replication_factor", 0), ("acks", 2), ("acks", True), ("acks", "some"),
    ("min_insync_replicas", 0), ("min_insync_replicas", 4), ("unclean_leader_election", "yes"),
    ("topic", ""), ("topic", "bad topic"), ("topic", ".."), ("poll_max_records", 0),
    ("drain_max_records", -1), ("poll_fraction", 1.5), ("idempotence", 1), ("concurrency", 0),
])
def test_bad_options_name_the_field(field, bad):
    with pytest.raises(ValueError, match=field):
        QueueOptions(**{field: bad})


def test_options_defaults_and_topic_configs():
    o = QueueOptions(acks="all")
    assert (o.partitions, o.replication_factor, o.acks, o.min_insync_replicas) == (3, 3, -1, 2)
    assert o.topic_configs() == {"min.insync.replicas": 2, "unclean.leader.election.enable": False}
    assert QueueOptions(unclean_leader_election=True, min_insync_replicas=1).topic_configs() == {
        "min.insync.replicas": 1, "unclean.leader.election.enable": True}


@pytest.mark.parametrize("partitions,concurrency", [(3, 10), (3, 2), (5, 5), (1, 4), (4, 1)])
def test_every_partition_has_a_consumer_and_threads_share_evenly(partitions, concurrency):
    assigned = [assigned_partitions(t, partitions, concurrency) for t in range(concurrency)]
    assert all(assigned)
    assert sorted({p for a in assigned for p in a}) == list(range(partitions))


def test_generator_sends_unique_values_and_polls_only_assigned_partitions():
    gen = QueueGenerator(QueueOptions(partitions=3, concurrency=6, poll_fraction=0.5))
    values, polls = [], []
    for i in range(600):
        thread = i % 6
        op = gen.op(Context(0.0, thread, thread, random.Random(i)))
        if op["f"] == "send":
            assert 0 <= op["value"]["partition"] < 3
            values.append(op["value"]["value"])
        else:
            assert op["value"]["partition"] in assigned_partitions(thread, 3, 6)
            polls.append(op)
    assert len(values) == len(set(values)) and sorted(values) == list(range(len(values)))
    assert 200 < len(polls) < 400


def test_the_workload_needs_a_factory_and_brokers(tmp_path):
    h = HistoryWriter(tmp_path / "h.jsonl")
    with pytest.raises(ValueError, match="queue_client_factory"):
        QueueWorkload(queue_topology(None), "cid", h, 1)
    topo = queue_topology(FakeQueueCluster())
    import dataclasses
    with pytest.raises(ValueError, match="brokers"):
        QueueWorkload(dataclasses.replace(topo, bootstrap=()), "cid", h, 1)
    h.close()


# -- setup -------------------------------------------------------------------------------

def test_setup_creates_the_topic_with_its_configs(tmp_path):
    cluster = FakeQueueCluster()
    wl = make_wl(tmp_path, cluster, partitions=4, replication_factor=3, min_insync_replicas=1,
                 unclean_leader_election=True, topic="q1")
    asyncio.run(wl.setup())
    assert cluster.created == [("q1", 4, 3, {"min.insync.replicas": 1, "unclean.leader.election.enable": True})]
    assert len(cluster.topics["q1"]) == 4 and all(c.closed for c in cluster.clients)


def test_setup_retries_an_unknown_outcome_and_takes_already_exists_after_it(tmp_path):
    cluster = FakeQueueCluster(create_errors=("info-created",), leaderless_requests=3)
    wl = make_wl(tmp_path, cluster)
    asyncio.run(wl.setup(timeout_s=5, retry_s=0.01))
    assert len(cluster.created) == 2 and "queue" in cluster.topics


@pytest.mark.parametrize("errors,match", [(("INVALID_REPLICATION_FACTOR",), "INVALID_REPLICATION_FACTOR"),
                                          (("TOPIC_ALREADY_EXISTS",), "TOPIC_ALREADY_EXISTS")])
def test_setup_refused_or_topic_already_there_is_a_setup_error(tmp_path, errors, match):
    wl = make_wl(tmp_path, FakeQueueCluster(create_errors=errors))
    with pytest.raises(WorkloadSetupError, match=match):
        asyncio.run(wl.setup(timeout_s=5, retry_s=0.01))


def test_setup_gives_up_when_partitions_never_get_a_leader(tmp_path):
    wl = make_wl(tmp_path, FakeQueueCluster(leaderless_requests=10**6))
    with pytest.raises(WorkloadSetupError, match="no leader"):
        asyncio.run(wl.setup(timeout_s=0.1, retry_s=0.01))


def test_the_runner_calls_setup_and_turns_its_failure_into_a_run_setup_error(tmp_path):
    from harness.config.resolved import resolve
    from harness.config.run import RunConfig
    from harness.run import runner

    class Wl:
        called = 0

        async def setup(self):
            Wl.called += 1
            raise WorkloadSetupError("topic refused")

    r = runner._Run(resolve(RunConfig(seed=1, workload="queue")), tmp_path, False)
    with pytest.raises(runner.RunSetupError, match="workload queue: topic refused"):
        asyncio.run(r._setup_workload(Wl()))
    assert Wl.called == 1


def test_topology_from_db_takes_the_targets_queue_client_factory():
    from workloads.topology import Topology

    def factory(bootstrap, options):
        return ("client", bootstrap)

    class Db:
        def quorum_nodes(self): return ["n1"]
        def address(self, n): return ("10.0.0.1", 9093)
        def node_id(self, n): return 1
        def quorum_client_factory(self): return None
        def client_nodes(self): return ["n4"]
        def client_endpoint(self, n): return "10.0.0.4:9092"
        def queue_client_factory(self): return factory

    topo = Topology.from_db(Db())
    assert topo.queue_client_factory is factory and topo.bootstrap == ("10.0.0.4:9092",)
    del Db.queue_client_factory
    assert Topology.from_db(Db()).queue_client_factory is None


# -- the worker ----------------------------------------------------------------------------

def test_workers_bootstrap_from_every_broker_their_own_first(tmp_path):
    cluster = FakeQueueCluster()
    wl = make_wl(tmp_path, cluster, concurrency=4)
    ws = wl.workers()
    assert [w.node for w in ws.values()] == [BROKERS[0], BROKERS[1], BROKERS[2], BROKERS[0]]
    assert all(sorted(w.bootstrap) == sorted(BROKERS) for w in ws.values())


def test_positions_follow_each_process_and_a_new_process_starts_from_the_committed_one(tmp_path):
    cluster = FakeQueueCluster()
    wl = make_wl(tmp_path, cluster, poll_max_records=2)

    async def main():
        await wl.setup()
        cluster.topics["queue"][0].extend([10, 11, 12, 13, 14])
        a, b = QueueWorker(wl, 0), QueueWorker(wl, 1)
        poll = {"f": "poll", "value": {"partition": 0}}
        outs = [await a.invoke(poll, 1), await a.invoke(poll, 1)]      # [0,2) then [2,4)
        outs.append(await b.invoke(poll, 2))     # b's process starts at the committed 4
        outs.append(await a.invoke(poll, 3))     # a crashed (new process 3): from the committed 5
        first_client = a.client
        await a.close()
        await b.close()
        return outs, first_client

    outs, client = asyncio.run(main())
    assert [o.op["value"]["from"] for o in outs] == [0, 2, 4, 5]
    assert [o.op["value"]["records"] for o in outs] == [[[0, 10], [1, 11]], [[2, 12], [3, 13]],
                                                        [[4, 14]], []]
    assert wl.committed_position(0) == 5
    assert sum(c.closed for c in cluster.clients) == len(cluster.clients)
    assert len(cluster.clients) == 4         # setup's, a's first, b's, a's after the new process


def test_a_poll_past_the_log_end_seeks_to_the_high_watermark(tmp_path):
    cluster = FakeQueueCluster()
    wl = make_wl(tmp_path, cluster)

    async def main():
        await wl.setup()
        cluster.topics["queue"][1].extend([1, 2, 3])
        wl.commit(1, 9)                        # positions past a log that was truncated
        w = QueueWorker(wl, 0)
        poll = {"f": "poll", "value": {"partition": 1}}
        first = await w.invoke(poll, 1)
        second = await w.invoke(poll, 1)
        await w.close()
        return first, second

    first, second = asyncio.run(main())
    assert first.type == "fail" and first.op["error"] == "OFFSET_OUT_OF_RANGE"
    assert second.type == "ok" and second.op["value"] == {"partition": 1, "from": 3, "records": []}
    assert wl.committed_position(1) == 3


def test_a_malformed_poll_answer_is_info_not_a_crash(tmp_path):
    cluster = FakeQueueCluster()
    wl = make_wl(tmp_path, cluster)

    async def bad_poll(*a):
        return [(0, 1, 2)]

    async def main():
        await wl.setup()
        w = QueueWorker(wl, 0)
        w.client = wl.make_client(w.bootstrap)
        w.process = 1
        w.client.poll = bad_poll
        out = await w.invoke({"f": "poll", "value": {"partition": 0}}, 1)
        await w.close()
        return out

    out = asyncio.run(main())
    assert out.type == "info" and "malformed" in out.op["error"]


# -- whole runs -----------------------------------------------------------------------------

def test_a_healthy_run_is_valid_and_its_ops_have_the_contracts_shapes(tmp_path):
    cluster = FakeQueueCluster()
    wl, ops = run_queue(tmp_path, cluster)
    valid, res = verdicts(ops)
    assert valid == {n: True for n in QUEUE_CHECKERS}
    assert res["unseen"]["acked"] > 50 and all(d["complete"] for d in res["unseen"]["drains"])
    sends = [o for o in ops if o["f"] == "send" and o["type"] == "ok"]
    assert set(sends[0]["value"]) == {"partition", "value", "offset"}
    polls = [o for o in ops if o["f"] == "poll" and o["type"] == "ok" and not o["value"].get("final")]
    assert polls and set(polls[0]["value"]) == {"partition", "from", "records"}
    finals = [o for o in ops if o["f"] == "poll" and o["value"].get("final")]
    for p, log in enumerate(cluster.topics["queue"]):
        mine = [o for o in finals if o["value"]["partition"] == p and o["type"] == "ok"]
        assert [v for o in mine for _off, v in o["value"]["records"]] == log
        assert mine[-1]["value"]["end"] == len(log) and wl.reached[p] == len(log)
    json.dumps(ops)                             # the history stays JSON


def test_acks_zero_sends_have_no_offset_and_are_still_judged_by_the_drain(tmp_path):
    wl, ops = run_queue(tmp_path, FakeQueueCluster(), acks=0)
    assert {o["value"]["offset"] for o in ops if o["f"] == "send" and o["type"] == "ok"} == {-1}
    valid, res = verdicts(ops)
    assert valid["unseen"] is True and res["unseen"]["acked"] > 0
    assert res["reordered-send"]["compared"] == 0


def test_failures_and_timeouts_are_recorded_and_new_processes_keep_the_run_valid(tmp_path):
    wl, ops = run_queue(tmp_path, FakeQueueCluster(fail_every=7, info_every=11))
    types = {o["type"] for o in ops if o["f"] in ("send", "poll")}
    assert {"fail", "info"} <= types
    valid, _ = verdicts(ops)
    assert valid == {n: True for n in QUEUE_CHECKERS}
    procs = {o["process"] for o in ops if o["f"] in ("send", "poll") and not o["value"].get("final")}
    assert len(procs) > 6                       # info ops replaced processes


@pytest.mark.parametrize("knobs,fires", [
    ({"drop_every": 5}, {"unseen", "lost-write"}),
    ({"duplicate_every": 5}, {"duplicate"}),
    ({"misreport_every": 4}, {"inconsistent-offsets", "reordered-send"}),
    ({"phantoms": (-1, -2)}, {"phantom"}),
    ({"rewind_every": 3}, {"nonmonotonic-poll"}),
])
def test_each_misbehaviour_makes_its_checker_fire(tmp_path, knobs, fires):
    wl, ops = run_queue(tmp_path, FakeQueueCluster(**knobs))
    valid, res = verdicts(ops)
    assert {n for n, v in valid.items() if v is False} >= fires, res
    for n in fires:
        assert res[n]["anomalies"]
    if "drop_every" in knobs:
        a = res["unseen"]["anomalies"][0]
        assert {"op", "partition", "offset", "value"} <= set(a) and ops[a["op"]]["value"]["value"] == a["value"]
