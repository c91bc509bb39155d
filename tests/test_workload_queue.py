"""The queue workload (workloads/queue.py, queue_drain.py) against an in-memory cluster.

Runs drive the real generator, workers and interpreter, then the drain, and
judge the history with the queue checkers: a healthy cluster gives valid
verdicts, and each misbehaving one (tests/queue_workload_fakes.py) makes its
checker fire.
"""
import asyncio
import json
import random

import pytest

from checkers.fold import CheckContext, ops_of
from checkers.registry import check_all_folds, make_checkers
from generator import Context
from history import HistoryWriter, read_history
from kraft import client as kclient
from tests.queue_workload_fakes import BROKERS, FakeQueueCluster, queue_topology
from workloads.base import WorkloadSetupError
from workloads.queue import (QueueGenerator, QueueOptions, QueueWorker, QueueWorkload,
                             assigned_partitions)
from workloads.queue_drain import drain, drain_partition
from workloads.registry import WORKLOAD_SPECS, workload_spec

QUEUE_CHECKERS = [n for n in WORKLOAD_SPECS["queue"].checkers if n.startswith("queue-")]


def make_wl(tmp_path, cluster, **opts):
    history = HistoryWriter(tmp_path / "history.jsonl")
    return QueueWorkload(queue_topology(cluster), "cid", history, 7, QueueOptions(**opts))


def run_queue(tmp_path, cluster, seconds=0.4, **opts):
    """setup, clients for ``seconds``, drain; returns (workload, history ops)."""
    opts = {"concurrency": 6, "rate": 2000.0, **opts}
    wl = make_wl(tmp_path, cluster, **opts)

    async def main():
        await wl.setup()
        stop = asyncio.Event()
        task = asyncio.create_task(wl.run(stop, monitor=False))
        await asyncio.sleep(seconds)
        stop.set()
        await task
        return await drain(wl, timeout_s=5.0, retry_s=0.01)

    wl.reached = asyncio.run(main())
    wl.history.close()
    return wl, read_history(wl.history.path)


def verdicts(ops):
    res = check_all_folds(ops_of(ops), QUEUE_CHECKERS)
    return {n: r["valid"] for n, r in res["checkers"].items()}, res["checkers"]


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
    from harness import runner

    class Wl:
        called = 0

        async def setup(self):
            Wl.called += 1
            raise WorkloadSetupError("topic refused")

    r = runner._Run(runner.RunConfig(seed=1, workload="queue"), tmp_path, False)
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
    assert res["queue-lost"]["acked"] > 50 and all(d["complete"] for d in res["queue-lost"]["drains"])
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
    assert valid["queue-lost"] is True and res["queue-lost"]["acked"] > 0
    assert res["queue-reordered"]["compared"] == 0


def test_failures_and_timeouts_are_recorded_and_new_processes_keep_the_run_valid(tmp_path):
    wl, ops = run_queue(tmp_path, FakeQueueCluster(fail_every=7, info_every=11))
    types = {o["type"] for o in ops if o["f"] in ("send", "poll")}
    assert {"fail", "info"} <= types
    valid, _ = verdicts(ops)
    assert valid == {n: True for n in QUEUE_CHECKERS}
    procs = {o["process"] for o in ops if o["f"] in ("send", "poll") and not o["value"].get("final")}
    assert len(procs) > 6                       # info ops replaced processes


@pytest.mark.parametrize("knobs,fires", [
    ({"drop_every": 5}, {"queue-lost"}),
    ({"duplicate_every": 5}, {"queue-duplicate"}),
    ({"misreport_every": 4}, {"queue-inconsistent-offsets", "queue-reordered"}),
    ({"phantoms": (-1, -2)}, {"queue-phantom"}),
    ({"rewind_every": 3}, {"queue-nonmonotonic-poll"}),
])
def test_each_misbehaviour_makes_its_checker_fire(tmp_path, knobs, fires):
    wl, ops = run_queue(tmp_path, FakeQueueCluster(**knobs))
    valid, res = verdicts(ops)
    assert {n for n, v in valid.items() if v is False} >= fires, res
    for n in fires:
        assert res[n]["anomalies"]
    if "drop_every" in knobs:
        a = res["queue-lost"]["anomalies"][0]
        assert {"op", "partition", "offset", "value"} <= set(a) and ops[a["op"]]["value"]["value"] == a["value"]


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
    assert valid["queue-lost"] == "unknown" and res["queue-lost"]["unjudged"] == 1


# -- the registry --------------------------------------------------------------------------

def test_the_queue_workload_is_registered_with_its_drain_and_checkers():
    spec = workload_spec("queue")
    assert spec.workload is QueueWorkload and set(spec.dbs) == {"kraft", "kafka"}
    assert spec.final is not None and spec.final.__name__ == "queue_final_phase"
    assert set(QUEUE_CHECKERS) == {"queue-lost", "queue-duplicate", "queue-inconsistent-offsets",
                                   "queue-reordered", "queue-nonmonotonic-poll", "queue-phantom"}
    assert set(make_checkers(spec.checkers, CheckContext())) == set(spec.checkers)


def test_the_final_phase_waits_for_a_quorum_leader_then_drains(tmp_path):
    cluster = FakeQueueCluster()
    wl = make_wl(tmp_path, cluster, partitions=2)
    asked = []

    class Quorum:
        async def wait_for_leader(self, timeout_s):
            asked.append("leader")
            return "n1"

        async def wait_for_catch_up(self, timeout_s):
            asked.append("catch-up")
            return True

    async def main():
        await wl.setup()
        cluster.topics["queue"][1].append(42)
        await workload_spec("queue").final(wl, Quorum())

    asyncio.run(main())
    wl.history.close()
    ops = read_history(wl.history.path)
    assert asked == ["leader", "catch-up"]
    assert [[42]] == [[v for _o, v in o["value"]["records"]] for o in ops
                      if o["type"] == "ok" and o["value"]["partition"] == 1]


def test_clients_fail_definitely_on_an_unknown_topic(tmp_path):
    """The fake's contract matches the real clients': an unknown partition is a definite error."""
    cluster = FakeQueueCluster()
    c = cluster.factory(BROKERS, QueueOptions())
    with pytest.raises(kclient.DefiniteError, match="UNKNOWN_TOPIC_OR_PARTITION"):
        asyncio.run(c.send("nope", 0, 1))


@pytest.mark.parametrize("knobs,valid", [({}, True), ({"drop_every": 4}, False)])
def test_a_stored_queue_run_is_checked_by_the_queue_checkers(tmp_path, knobs, valid):
    """``kraft-chaos check`` path: test.json names the workload; its spec picks the checkers."""
    from harness import store
    from harness.check_run import check_run_dir

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
    assert results["checkers"]["queue-lost"]["valid"] is valid
    if valid:
        assert all(results["checkers"][n]["valid"] is True for n in QUEUE_CHECKERS)
    else:       # the next send reuses a dropped ack's offset: two values there, out of order
        assert results["valid"] is False and results["anomalies"]["queue-lost"] > 0
        assert results["checkers"]["queue-inconsistent-offsets"]["valid"] is False
        assert results["checkers"]["queue-phantom"]["valid"] is True
