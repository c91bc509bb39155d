"""The metadata workload's pure parts: topic names, error mapping, the final reads' shape."""
import json
import random

import pytest
from confluent_kafka import KafkaError, KafkaException

from generator import Context
from history import HistoryWriter
from history import outcomes
from workloads.metadata import (MetadataGenerator, MetadataOptions, _error, as_final_records,
                                caught_up_nodes, metadata_final_reads, topic_name, topic_value,
                                voters_caught_up)
from targets.kraft_client import kraft_client
from workloads.topology import Topology


def test_topic_names_round_trip_and_other_names_are_not_ours():
    assert topic_name(17) == "t-17" and topic_value("t-17") == 17
    for other in ("__consumer_offsets", "t-", "t-1x", "x-1", None, 5, "t--1"):
        assert topic_value(other) is None


@pytest.mark.parametrize("code,kind", [
    (KafkaError.INVALID_REPLICATION_FACTOR, outcomes.DefiniteError),
    (KafkaError.NOT_CONTROLLER, outcomes.DefiniteError),
    (KafkaError.REQUEST_TIMED_OUT, outcomes.IndefiniteError),
    (KafkaError._TIMED_OUT, outcomes.IndefiniteError),
    (KafkaError._TRANSPORT, outcomes.IndefiniteError),
    # only we create t-V, once: "already exists" means an earlier attempt (a retried forward) landed
    (KafkaError.TOPIC_ALREADY_EXISTS, outcomes.IndefiniteError),
])
def test_errors_are_definite_only_when_kafka_refused(code, kind):
    err = _error(KafkaException(KafkaError(code)))
    assert type(err) is kind and err.code == KafkaError(code).name()


def test_generator_deletes_only_acknowledged_topics_each_once():
    gen = MetadataGenerator(MetadataOptions(delete_fraction=0.5))
    ctx = Context(time=0.0, thread=0, process=0, rng=random.Random(3))
    created, deleted = set(), []
    for _ in range(200):
        op = gen.op(ctx)
        if op["f"] == "append":
            if op["value"] % 3:             # two in three creations are acknowledged
                gen.update(ctx, op, {"type": "ok", "f": "append", "value": {"value": op["value"]}})
                created.add(op["value"])
        else:
            deleted.append(op["value"])
    assert deleted and set(deleted) <= created and len(deleted) == len(set(deleted))


RECORDS = [(0, 1, "LeaderChange", {"LeaderId": 1, "Voters": [1, 2, 3], "GrantingVoters": [1, 2]}),
           (1, 1, "TopicRecord", {"name": "t-4", "topicId": "abc"}),
           (2, 1, "TopicRecord", {"name": "__consumer_offsets", "topicId": "def"}),
           (3, 1, "PartitionRecord", {"partitionId": 0}),
           (4, 2, "TopicRecord", {"name": "t-9", "topicId": "ghi"})]


def test_final_records_turn_our_topics_into_data_and_stop_at_the_high_watermark():
    assert as_final_records(RECORDS, 4) == [
        [0, 1, "LeaderChange", {"LeaderId": 1, "Voters": [1, 2, 3], "GrantingVoters": [1, 2]}],
        [1, 1, "data", 4],
        [2, 1, "TopicRecord", {"name": "__consumer_offsets", "topicId": "def"}],
        [3, 1, "PartitionRecord", {"partitionId": 0}]]


TOPO = Topology(("c1", "c2", "c3"), {n: ("10.0.0.1", 9093) for n in ("c1", "c2", "c3")},
                {"c1": 1, "c2": 2, "c3": 3}, kraft_client, bootstrap=("10.0.0.9:9092",))
BODY = {"LeaderId": 2, "LeaderEpoch": 3, "HighWatermark": 5,
        "CurrentVoters": [{"ReplicaId": 1, "LogEndOffset": 5}, {"ReplicaId": 2, "LogEndOffset": 5},
                          {"ReplicaId": 3, "LogEndOffset": 3}]}


def test_caught_up_nodes_are_those_at_the_leaders_log_end():
    assert caught_up_nodes(BODY, TOPO) == ["c1", "c2"]


def test_voters_caught_up_refuses_a_lagging_or_unfetched_voter():
    assert not voters_caught_up(BODY)
    fresh = {**BODY, "CurrentVoters": [{"ReplicaId": 1, "LogEndOffset": -1},
                                       {"ReplicaId": 2, "LogEndOffset": 5}, {"ReplicaId": 3, "LogEndOffset": 5}]}
    assert not voters_caught_up(fresh)          # a new Kafka leader before voter 1's first Fetch
    done = {**BODY, "CurrentVoters": [{"ReplicaId": i, "LogEndOffset": 5} for i in (1, 2, 3)]}
    assert voters_caught_up(done)
    assert not voters_caught_up({**done, "LeaderId": 7}) and not voters_caught_up({})


def test_settled_leader_waits_past_an_election_for_one_caught_up_answer():
    import asyncio
    from workloads.registry import settled_leader
    done = {**BODY, "CurrentVoters": [{"ReplicaId": i, "LogEndOffset": 5} for i in (1, 2, 3)]}
    answers = [(None, None), ("c2", {**BODY, "CurrentVoters": [{"ReplicaId": i, "LogEndOffset": -1 if i != 2 else 5}
                                                                 for i in (1, 2, 3)]}), ("c2", done)]

    class Q:
        calls = 0

        async def describe_leader(self):
            Q.calls += 1
            return answers[min(Q.calls, len(answers)) - 1]

    assert asyncio.run(settled_leader(Q(), 5.0, poll_s=0.01)) == ("c2", done) and Q.calls == 3
    Q.calls = 0
    answers[2] = answers[1]
    leader, body = asyncio.run(settled_leader(Q(), 0.05, poll_s=0.01))
    assert leader == "c2" and not voters_caught_up(body)     # gives up with the last answer


class _Wl:
    def __init__(self, path):
        from workloads.counters import Sequence
        self.history, self.pids, self.topology = HistoryWriter(path), Sequence(0), TOPO


async def _final(tmp_path, leader, body, logs):
    wl = _Wl(tmp_path / "h.jsonl")
    await metadata_final_reads(wl, leader, body, logs)
    wl.history.close()
    return [json.loads(line) for line in (tmp_path / "h.jsonl").read_text().splitlines()]


def test_final_reads_record_the_leaders_log_and_each_caught_up_controllers(tmp_path):
    import asyncio
    ops = asyncio.run(_final(tmp_path, "c2", BODY, {"c1": RECORDS, "c2": RECORDS, "c3": RECORDS[:3]}))
    oks = [o for o in ops if o["type"] == "ok"]
    assert [(o["node"], o["value"]["linearizable"]) for o in oks] == [("c2", True), ("c1", False), ("c2", False)]
    for o in oks:
        assert o["value"]["final"] is True and o["value"]["high_watermark"] == 5
        assert o["value"]["records"][-1] == [4, 2, "data", 9]


def test_final_read_without_a_leader_is_a_fail(tmp_path):
    import asyncio
    ops = asyncio.run(_final(tmp_path, None, None, {}))
    assert [o["type"] for o in ops] == ["invoke", "fail"]


def _acks_then_final(tmp_path, logs, values):
    """A history: ok creations of ``values``, then the final reads of ``logs`` (leader c2)."""
    import asyncio
    wl = _Wl(tmp_path / "h.jsonl")
    for v in values:
        op = wl.history.invoke(0, "append", v, node="10.0.0.9:9092")
        wl.history.complete(op, "ok", {"value": v})
    asyncio.run(metadata_final_reads(wl, "c2", BODY, logs))
    wl.history.close()
    return [json.loads(line) for line in (tmp_path / "h.jsonl").read_text().splitlines()]


def test_a_log_cleaned_up_to_a_snapshot_is_read_from_its_start_not_from_0(tmp_path):
    """kafka-power cleans the metadata log up to its latest snapshot: the leader's log then starts
    past 0 and the creations before it are state in the snapshot. The final read once claimed
    to cover [0, hw), and the lost-write checker reported every creation before the log start
    as lost (1591 of 1707 on a 3.5.2 run whose uncleaned n1 log held every one)."""
    from checkers.lost_write import check_lost_write
    cleaned = RECORDS[3:]                   # the leader's log starts at offset 3: t-4 is in the snapshot
    ops = _acks_then_final(tmp_path, {"c1": RECORDS, "c2": cleaned, "c3": cleaned}, [4, 9])
    reads = {(o["node"], o["value"]["linearizable"]): o["value"] for o in ops if o["f"] == "read" and o["type"] == "ok"}
    assert reads[("c2", True)]["from"] == 3 and reads[("c1", False)]["from"] == 0
    assert reads[("c2", False)]["from"] == 3
    res = check_lost_write(ops)
    assert res["valid"] is True and not res["anomalies"] and res["unjudged"] == 2
    # from 0 the checker still judges, and still finds a creation that no log holds
    (tmp_path / "b").mkdir()
    ops = _acks_then_final(tmp_path / "b", {"c1": RECORDS, "c2": RECORDS, "c3": RECORDS}, [4, 9, 7])
    res = check_lost_write(ops)
    assert res["valid"] is False and [a["value"] for a in res["anomalies"]] == [7]
    # a leader whose whole log below the high watermark is in its snapshot covers nothing
    (tmp_path / "c").mkdir()
    ops = _acks_then_final(tmp_path / "c", {"c1": RECORDS, "c2": [], "c3": RECORDS}, [4])
    assert [o["value"]["from"] for o in ops if o["f"] == "read" and o["type"] == "ok"][0] == BODY["HighWatermark"]
    assert check_lost_write(ops)["valid"] is True
