"""The ``txn`` workload (workloads/txn.py, txn_worker.py, txn_final.py) on an in-memory Kafka:
the generator's ops, the worker's mapping of each session call and error onto the history,
the final phase, and whole runs judged by Jepsen's checker."""
from __future__ import annotations

import asyncio
import collections
import random

import pytest

from generator import Context
from history import read_history
from workloads.txn import TxnGenerator, TxnOptions, op_f
from workloads.txn_final import missing
from workloads.txn_worker import failed_outcome, key_name, key_of
from tests.txn_workload_fakes import (FakeKafka, definite, indefinite, kafka_txn_result, make_wl, run_txn)


def ctx(t=0.0, thread=0, rng=None):
    return Context(t, thread, thread, rng or random.Random(1))


# -- the generator ------------------------------------------------------------------------------

def test_ops_are_jepsen_micro_ops_with_their_f():
    o = TxnOptions()
    gen, rng = TxnGenerator(o), random.Random(3)
    fs, sizes, values = collections.Counter(), collections.Counter(), []
    for i in range(6400):
        op = gen.op(ctx(t=0.001 * i, rng=rng))
        fs[op["f"]] += 1
        if op["f"] in ("send", "poll", "txn"):
            mops = op["value"]
            assert 1 <= len(mops) <= o.max_mops
            assert op["f"] == op_f(mops)
            sizes[len(mops)] += 1
            for m in mops:
                assert m == ["poll"] or (m[0] == "send" and m[1] in o.keys() and isinstance(m[2], int))
                if m[0] == "send":
                    values.append(m[2])
        elif op["f"] in ("assign", "subscribe"):
            assert op["value"] and set(op["value"]) <= set(o.keys())
    assert len(values) == len(set(values))          # every value sent once
    assert set(sizes) == {1, 2, 3, 4}
    assert fs["send"] and fs["poll"] and fs["txn"]
    assert 40 <= fs["assign"] + fs["subscribe"] <= 170          # about 1 in 64
    assert fs["subscribe"] > 0 and fs["assign"] > 0


def test_about_one_transaction_in_32_aborts_on_purpose_and_none_without_transactions():
    rng = random.Random(5)
    ops = [TxnGenerator(TxnOptions(subscription_fraction=0)).op(ctx(rng=rng)) for _ in range(6400)]
    aborts = sum(1 for op in ops if op.get("abort"))
    assert 120 <= aborts <= 290
    ops = [TxnGenerator(TxnOptions(transactions=False)).op(ctx(rng=rng)) for _ in range(2000)]
    assert not any(op.get("abort") for op in ops)


def test_no_subscribe_without_it():
    rng = random.Random(2)
    gen = TxnGenerator(TxnOptions(subscribe=False, subscription_fraction=0.5))
    assert {gen.op(ctx(rng=rng))["f"] for _ in range(500)} & {"subscribe"} == set()


def test_each_thread_crashes_every_few_tens_of_seconds():
    gen, rng = TxnGenerator(TxnOptions(crash_interval_s=30.0)), random.Random(9)
    crashes = collections.Counter()
    for step in range(36000):                  # 3600 s, 10 ops/s on each of 2 threads
        for thread in (0, 1):
            if gen.op(ctx(t=step / 10, thread=thread, rng=rng))["f"] == "crash":
                crashes[thread] += 1
    for thread in (0, 1):
        assert 80 <= crashes[thread] <= 160     # about 120 in an hour


def test_options_refuse_bad_values():
    for bad in ({"txn_delay_ms": -1}, {"min_insync_replicas": 4}, {"abort_fraction": 2},
                {"crash_interval_s": 0}, {"max_mops": 0}, {"transactions": "yes"}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            TxnOptions(**bad)


def test_keys_are_topic_partitions():
    assert TxnOptions(topics=2, partitions=2).keys() == ["t0-0", "t0-1", "t1-0", "t1-1"]
    assert key_of("t1-12") == ("t1", 12) and key_name(("t1", 12)) == "t1-12"
    with pytest.raises(ValueError):
        key_of("t1")


def test_outcome_rules():
    d, i = definite(), indefinite()
    assert failed_outcome(d, transactional=True, aborted=True, sent=True) == "fail"
    assert failed_outcome(i, transactional=True, aborted=True, sent=True) == "fail"
    assert failed_outcome(d, transactional=True, aborted=False, sent=False) == "info"
    assert failed_outcome(i, transactional=True, aborted=None, sent=False) == "info"     # commit in doubt
    assert failed_outcome(d, transactional=True, aborted=None, sent=False) == "fail"     # commit aborted
    assert failed_outcome(d, transactional=False, aborted=None, sent=False) == "fail"
    assert failed_outcome(d, transactional=False, aborted=None, sent=True) == "info"
    assert failed_outcome(i, transactional=False, aborted=None, sent=False) == "info"


# -- the worker, one op at a time ------------------------------------------------------------------

def one_op(tmp_path, kafka, op, process=0, **opts):
    """Run ``op`` on worker 0 as ``process``; returns (outcome, history ops, worker)."""
    wl = make_wl(tmp_path, kafka, **opts)
    worker = wl.workers()[0]

    async def main():
        await wl.setup()
        out = await worker.invoke(op, process)
        return out
    out = asyncio.run(main())
    wl.history.close()
    return out, read_history(wl.history.path), worker


def test_a_transaction_records_offsets_and_polls_in_jepsen_shapes(tmp_path):
    kafka = FakeKafka()
    kafka.log(("t0", 0)).append([0, 100, "committed"])
    op = {"f": "txn", "value": [["send", "t0-1", 5], ["poll"], ["send", "t0-1", 6]]}
    out, ops, worker = one_op(tmp_path, kafka, op)
    assert out.type == "ok"
    assert [o["type"] for o in ops] == ["invoke", "ok"]
    assert ops[0]["value"] == [["send", "t0-1", 5], ["poll"], ["send", "t0-1", 6]]
    assert ops[1]["value"] == [["send", "t0-1", [0, 5]], ["poll", {"t0-0": [[0, 100]]}], ["send", "t0-1", [1, 6]]]
    assert [r[2] for r in kafka.log(("t0", 1))] == ["committed", "committed"]
    assert kafka.groups["kc-cid-abcd-7-w0"] == {("t0", 0): 1}          # send_offsets_to_transaction
    assert worker.wl.acked == {"t0-1": 1}
    s = kafka.sessions[0]
    assert s.config.transactional_id == "kc-cid-abcd-7-w0" and s.config.group_id == "kc-cid-abcd-7-w0"
    assert [c for c in kafka.calls if c != "poll"] == ["open", "assign", "begin", "send", "send",
                                                        "send_offsets", "commit"]


def test_an_abort_on_purpose_is_a_fail_and_the_consumer_seeks_back(tmp_path):
    kafka = FakeKafka()
    out, ops, worker = one_op(tmp_path, kafka, {"f": "send", "value": [["send", "t0-0", 1]], "abort": True})
    assert out.type == "fail" and ops[1]["error"] == "aborted-on-purpose"
    assert ops[1]["value"] == [["send", "t0-0", [0, 1]]]
    assert kafka.log(("t0", 0))[0][2] == "aborted" and "commit" not in kafka.calls
    assert kafka.sessions[0].seeks == 1 and not kafka.sessions[0].closed
    assert worker.wl.acked == {}


@pytest.mark.parametrize("err", [indefinite("_MSG_TIMED_OUT", abortable=True),
                                 indefinite("NOT_LEADER_OR_FOLLOWER", abortable=True),
                                 definite("_QUEUE_FULL")])
def test_a_failed_send_in_a_transaction_aborts_it_then_fail(tmp_path, err):
    kafka = FakeKafka({"send": [None, err]})
    op = {"f": "send", "value": [["send", "t0-0", 1], ["send", "t0-1", 2]]}
    out, ops, _w = one_op(tmp_path, kafka, op)
    assert out.type == "fail" and ops[1]["error"] == err.code
    assert ops[1]["value"] == [["send", "t0-0", [0, 1]], ["send", "t0-1", 2]]   # done, then as invoked
    assert "abort" in kafka.calls and kafka.log(("t0", 0))[0][2] == "aborted"


def test_an_abort_that_does_not_return_makes_the_op_info_and_closes_the_session(tmp_path):
    kafka = FakeKafka({"send": [indefinite()], "abort": [indefinite("_TIMED_OUT", fatal=True)]})
    out, ops, worker = one_op(tmp_path, kafka, {"f": "send", "value": [["send", "t0-0", 1]]})
    assert out.type == "info" and ops[1]["type"] == "info"
    assert kafka.sessions[0].closed and worker.session is None


def _two_sends(tmp_path, kafka):
    """A workload on ``kafka`` whose first worker sends twice (processes 0 then 1): the
    workload and the two outcomes."""
    wl = make_wl(tmp_path, kafka)
    worker = wl.workers()[0]

    async def main():
        await wl.setup()
        first = await worker.invoke({"f": "send", "value": [["send", "t0-0", 1]]}, 0)
        second = await worker.invoke({"f": "send", "value": [["send", "t0-0", 2]]}, 1)
        return first, second
    return wl, asyncio.run(main())


def test_a_commit_in_doubt_is_info_and_a_new_process_opens_a_new_session(tmp_path):
    kafka = FakeKafka({"commit": [indefinite("_TIMED_OUT", fatal=True, retriable=True)]})
    wl, (first, second) = _two_sends(tmp_path, kafka)
    assert (first.type, second.type) == ("info", "ok")
    assert len(kafka.sessions) == 2 and kafka.sessions[0].closed
    assert kafka.sessions[1].config.transactional_id == kafka.sessions[0].config.transactional_id  # fences it


def test_a_commit_the_session_aborted_is_a_fail(tmp_path):
    kafka = FakeKafka({"commit": [definite("INVALID_PRODUCER_EPOCH", abortable=True)]})
    out, ops, worker = one_op(tmp_path, kafka, {"f": "send", "value": [["send", "t0-0", 1]]})
    assert out.type == "fail" and kafka.sessions[0].seeks == 1


def test_a_session_that_cannot_open_makes_the_op_info(tmp_path):
    kafka = FakeKafka({"open": [indefinite("_TRANSPORT", fatal=True)]})
    out, ops, worker = one_op(tmp_path, kafka, {"f": "poll", "value": [["poll"]]})
    assert out.type == "info" and ops[1]["error"] == "_TRANSPORT" and worker.session is None


def test_without_transactions_a_definite_error_after_an_acked_send_is_info(tmp_path):
    kafka = FakeKafka({"send": [None, definite()]})
    out, _ops, _w = one_op(tmp_path, kafka, {"f": "send", "value": [["send", "t0-0", 1], ["send", "t0-0", 2]]},
                           transactions=False)
    assert out.type == "info"
    kafka = FakeKafka({"send": [definite()]})
    out, _ops, _w = one_op(tmp_path, kafka, {"f": "send", "value": [["send", "t0-0", 1]]}, transactions=False)
    assert out.type == "fail"
    assert kafka.sessions[0].config.transactional_id is None


def test_a_crash_closes_the_session_and_is_info(tmp_path):
    kafka = FakeKafka()
    wl = make_wl(tmp_path, kafka)
    worker = wl.workers()[0]

    async def main():
        await worker.invoke({"f": "poll", "value": [["poll"]]}, 0)
        return await worker.invoke({"f": "crash", "value": None}, 0)
    out = asyncio.run(main())
    wl.history.close()
    ops = read_history(wl.history.path)
    assert out.type == "info" and kafka.sessions[0].closed and worker.session is None
    assert [(o["f"], o["type"]) for o in ops][-2:] == [("crash", "invoke"), ("crash", "info")]


def test_assign_and_subscribe_replace_the_keys_of_later_sessions(tmp_path):
    kafka = FakeKafka()
    wl = make_wl(tmp_path, kafka)
    worker = wl.workers()[0]

    async def main():
        await worker.invoke({"f": "subscribe", "value": ["t1-0"]}, 0)
        await worker.invoke({"f": "crash", "value": None}, 0)
        await worker.invoke({"f": "poll", "value": [["poll"]]}, 1)
    asyncio.run(main())
    assert worker.keys == ["t1-0"] and worker.subscribed
    assert kafka.calls.count("subscribe") == 2          # the op, and the next session's start


def test_a_txn_delay_sleeps_between_micro_ops(tmp_path):
    kafka = FakeKafka()
    loop_time = []
    wl = make_wl(tmp_path, kafka, txn_delay_ms=50)
    worker = wl.workers()[0]

    async def main():
        await wl.setup()
        t = asyncio.get_running_loop().time()
        await worker.invoke({"f": "txn", "value": [["poll"], ["poll"], ["poll"]]}, 0)
        loop_time.append(asyncio.get_running_loop().time() - t)
    asyncio.run(main())
    assert loop_time[0] >= 0.1


# -- the final phase and whole runs ------------------------------------------------------------------

def test_missing_names_keys_not_read_to_their_highest_ack():
    assert missing({"a": 3, "b": 1}, {"a": 3, "b": 0}) == {"b": (0, 1)}
    assert missing({"a": 3}, {}) == {"a": (-1, 3)}


def test_a_run_on_a_correct_kafka_is_valid_in_jepsen_terms(tmp_path):
    wl, ops = run_txn(tmp_path, FakeKafka(), crash_interval_s=0.1)
    assert wl.left == {}
    fs = collections.Counter((o["f"], o["type"]) for o in ops)
    assert fs[("txn", "ok")] + fs[("send", "ok")] > 20 and fs[("crash", "info")] > 0
    final = [o for o in ops if o.get("final")]
    assert final and all(o["f"] == "poll" for o in final)
    assigns = [o for o in ops if o["f"] == "assign" and o.get("seek_to_beginning")]
    assert assigns and assigns[-1]["value"] == wl.options.keys()
    result = kafka_txn_result(ops)
    assert result["valid"] is True, result
    assert wl.describe()["client"] == "fake" and wl.describe()["sessions"] >= 2
    assert wl.factory.closed


def test_a_kafka_that_exposes_aborted_records_is_caught_as_g1a(tmp_path):
    wl, ops = run_txn(tmp_path, FakeKafka(lose_aborts=True), abort_fraction=0.3, seconds=0.6)
    result = kafka_txn_result(ops)
    assert result["valid"] is False and "G1a" in result["error_kinds"], result


def test_a_run_without_transactions_is_valid(tmp_path):
    wl, ops = run_txn(tmp_path, FakeKafka(), transactions=False)
    assert not any(o["f"] == "txn" for o in ops)
    assert all(len(o["value"]) == 1 for o in ops if o["f"] in ("send", "poll"))
    assert kafka_txn_result(ops)["valid"] is True


def test_an_op_during_which_the_group_moved_keys_carries_jepsens_rebalance_log(tmp_path):
    kafka = FakeKafka()
    kafka.log(("t1", 0)).append([0, 9, "committed"])
    wl = make_wl(tmp_path, kafka)
    worker = wl.workers()[0]

    async def main():
        await wl.setup()
        await worker.invoke({"f": "subscribe", "value": ["t1-0"]}, 0)
        await worker.invoke({"f": "poll", "value": [["poll"]]}, 0)
        await worker.invoke({"f": "poll", "value": [["poll"]]}, 0)
    asyncio.run(main())
    wl.history.close()
    polls = [o for o in read_history(wl.history.path) if o["f"] == "poll" and o["type"] == "ok"]
    assert polls[0]["rebalance_log"] == [{"keys": ["t1-0", "t1-1"]}]
    assert polls[0]["value"] == [["poll", {"t1-0": [[0, 9]]}]]
    assert "rebalance_log" not in polls[1]


def test_consecutive_sends_of_a_transaction_go_out_together_in_order(tmp_path):
    kafka = FakeKafka({"send": [None, None, indefinite("NOT_LEADER_OR_FOLLOWER", abortable=True)]})
    op = {"f": "send", "value": [["send", "t0-0", 1], ["send", "t0-0", 2], ["send", "t0-0", 3]]}
    out, ops, _w = one_op(tmp_path, kafka, op)
    assert [r[1] for r in kafka.log(("t0", 0))] == [1, 2]          # in order; the third refused
    assert out.type == "fail" and ops[1]["error"] == "NOT_LEADER_OR_FOLLOWER"
    assert ops[1]["value"] == [["send", "t0-0", [0, 1]], ["send", "t0-0", [1, 2]], ["send", "t0-0", 3]]
    kafka = FakeKafka()
    out, ops, _w = one_op(tmp_path, kafka, {"f": "txn", "value": [["send", "t0-0", 1], ["send", "t0-1", 2],
                                                                     ["poll"], ["send", "t0-0", 3]]})
    assert out.type == "ok" and [m[2][0] for m in ops[1]["value"] if m[0] == "send"] == [0, 0, 1]


def test_a_client_that_crashes_mid_op_is_info_and_replaced(tmp_path):
    crashed = indefinite("client-crashed", fatal=True, abortable=True)
    kafka = FakeKafka({"send": [crashed]})
    wl, (first, second) = _two_sends(tmp_path, kafka)
    wl.history.close()
    ops = read_history(wl.history.path)
    assert (first.type, second.type) == ("info", "ok")
    assert "abort" not in kafka.calls                      # a fatal session is not asked to abort
    assert kafka.sessions[0].closed and len(kafka.sessions) == 2
    assert [(o["process"], o["type"], o.get("error")) for o in ops if o["f"] == "send"] == \
        [(0, "invoke", None), (0, "info", "client-crashed"), (1, "invoke", None), (1, "ok", None)]


def test_a_failed_op_records_the_brokers_error_name_beside_the_clients(tmp_path):
    kafka = FakeKafka(script={"send": [indefinite("InvalidRecordException", kafka_error="INVALID_RECORD",
                                                  abortable=True)]})
    out, ops, _w = one_op(tmp_path, kafka, {"f": "send", "value": [["send", "t0-0", 1]]})
    assert out.type == "fail"           # the abort returned
    assert (ops[1]["error"], ops[1]["kafka_error"]) == ("InvalidRecordException", "INVALID_RECORD")
    r = kafka_txn_result(ops)
    assert r["valid"] is False and r["error_kinds"] == ["server-error"]
    # an error no broker answered carries no kafka_error
    out, ops, _w = one_op(tmp_path / "b", FakeKafka(script={"send": [indefinite()]}),
                          {"f": "send", "value": [["send", "t0-0", 1]]})
    assert "kafka_error" not in ops[1] and ops[1]["error"] == "_MSG_TIMED_OUT"
