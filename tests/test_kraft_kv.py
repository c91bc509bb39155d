"""The key-value state machine (kraft/state_machines/kv.py) and its API on a single node
(kraft/runtime/kv_service.py)."""
import asyncio
import dataclasses
import random

import pytest

from kraft.core import errors
from kraft.core.records import DATA, LEADER_CHANGE, Record
from kraft.core.states import StateKind
from kraft.quorum.transitions import persist
from kraft.runtime.kv_service import KvService
from kraft.runtime.raft import InvalidRequest, RaftNode
from kraft.state_machines.kv import (ApplyResult, CommandError, KvStateMachine, cas_command, parse_command,
                                     put_command)
from kraft.storage.log import Log
from kraft.storage.meta import read_meta
from kraft.storage.quorum_state import ElectionState
from tests.kraft_inproc import make_configs

LC = {"LeaderId": 1, "Voters": [1, 2, 3], "GrantingVoters": [1, 2]}


def records(*payloads, epoch=1):
    """Records at offsets 0.. : a LeaderChange first, then one data record per payload."""
    out = [Record(0, epoch, LEADER_CHANGE, LC)]
    return out + [Record(i + 1, epoch, DATA, p) for i, p in enumerate(payloads)]


class ListLog:
    def __init__(self, recs):
        self.records = list(recs)

    def read(self, start, end, max_records=None):
        return self.records[start:end]


def test_put_and_cas_apply_in_offset_order_with_their_results():
    sm = KvStateMachine()
    recs = records(put_command("a", 1), cas_command("a", 1, 2), cas_command("a", 1, 3),
                   cas_command("b", None, 7), put_command("a", None), cas_command("a", None, 4))
    results = [sm.apply(r) for r in recs]
    assert results == [None,
                       ApplyResult(1, True, None),
                       ApplyResult(2, True, 1),
                       ApplyResult(3, False, 2),      # compare failed: no effect
                       ApplyResult(4, True, None),    # a fresh key is null, so cas(null, 7) wins
                       ApplyResult(5, True, 2),
                       ApplyResult(6, True, None)]
    assert sm.snapshot() == {"a": 4, "b": 7}
    assert sm.applied == 7
    assert sm.get("never-written") is None


def test_apply_refuses_records_out_of_order():
    sm = KvStateMachine()
    recs = records(put_command("a", 1), put_command("a", 2))
    sm.apply(recs[0])
    with pytest.raises(ValueError, match="out of order"):
        sm.apply(recs[2])
    with pytest.raises(ValueError, match="out of order"):
        sm.apply(recs[0])
    assert sm.applied == 1 and sm.snapshot() == {}


def test_records_that_are_not_kv_commands_are_no_ops():
    sm = KvStateMachine()
    recs = records(17, {"Kv": "put", "Key": 3, "Value": 1}, {"Kv": "put", "Key": "a", "Value": True},
                   {"Kv": "cas", "Key": "a", "Value": 1}, {"Kv": "delete", "Key": "a"},
                   {"Key": "a", "Value": 1}, put_command("a", 5))
    assert [sm.apply(r) for r in recs][:-1] == [None] * 7
    assert sm.snapshot() == {"a": 5} and sm.applied == 8


def test_commands_are_validated():
    with pytest.raises(CommandError, match="Key must be a string"):
        put_command(1, 1)
    with pytest.raises(CommandError, match="Key must be 1..256 bytes"):
        put_command("", 1)
    with pytest.raises(CommandError, match="Value must be an int or null"):
        put_command("a", 1.5)
    with pytest.raises(CommandError, match="Expected must be an int or null"):
        cas_command("a", False, 1)
    assert parse_command(cas_command("a", None, 1)) == {"Kv": "cas", "Key": "a", "Expected": None,
                                                        "Value": 1}


def random_commands(rng, n):
    out = []
    for _ in range(n):
        k = f"k{rng.randrange(3)}"
        if rng.random() < 0.5:
            out.append(put_command(k, rng.choice([None, 0, 1, 2])))
        else:
            out.append(cas_command(k, rng.choice([None, 0, 1, 2]), rng.randrange(3)))
    return out


def test_cas_results_are_deterministic_across_nodes():
    recs = records(*random_commands(random.Random(5), 300), 99)
    nodes = [KvStateMachine() for _ in range(3)]
    # each node learns the high watermark in different steps; all end alike
    log = ListLog(recs)
    for sm, steps in zip(nodes, ([len(recs)], [10, 11, 200, len(recs)], range(1, len(recs) + 1))):
        for hw in steps:
            sm.apply_committed(log, hw)
        assert sm.applied == len(recs)
    assert nodes[0].snapshot() == nodes[1].snapshot() == nodes[2].snapshot()
    assert nodes[0].snapshot()                          # something was written
    results = []
    for _ in range(2):
        sm = KvStateMachine()
        results.append([sm.apply(r) for r in recs])
    assert results[0] == results[1]
    assert {r.succeeded for r in results[0] if r is not None} == {True, False}


def test_only_records_below_the_high_watermark_are_applied():
    sm = KvStateMachine()
    log = ListLog(records(put_command("a", 1), put_command("a", 2), put_command("a", 3)))
    assert sm.apply_committed(log, 0) == 0 and sm.applied == 0
    assert sm.apply_committed(log, 2) == 2
    assert sm.get("a") == 1 and sm.applied == 2
    assert sm.apply_committed(log, 1) == 0            # a lower high watermark changes nothing
    assert sm.apply_committed(log, 3) == 1 and sm.get("a") == 2
    assert sm.apply_committed(log, 4) == 1 and sm.get("a") == 3


def test_results_are_kept_only_for_expected_offsets():
    sm = KvStateMachine()
    log = ListLog(records(put_command("a", 1), cas_command("a", 5, 6)))
    sm.expect(2)
    sm.apply_committed(log, 3)
    assert sm.take_result(1) is None                   # nobody asked for it
    assert sm.take_result(2) == ApplyResult(2, False, 1)
    assert sm.take_result(2) is None                   # taken once


def test_kv_cas_at_propose_answers_the_outcome_decided_before_the_commands_ahead_applied():
    cmds = (put_command("a", 1), put_command("a", 5), cas_command("a", 1, 6))
    for buggy in (False, True):
        sm = KvStateMachine(decide_at_propose=buggy)
        log = ListLog(records(*cmds))          # offsets 1..3, all appended before any commits
        sm.expect(3, cmds[2])
        sm.apply_committed(log, 4)
        assert sm.get("a") == 5                # the state machine itself applies in log order
        # decided at proposal (a was null then): the compare fails, and it really did fail;
        # correct: the outcome of applying it after the put of 5
        assert sm.take_result(3) == (ApplyResult(3, False, None) if buggy else ApplyResult(3, False, 5))
    sm = KvStateMachine(decide_at_propose=True)
    sm.apply_committed(ListLog(records(put_command("a", 1))), 2)
    sm.expect(3, cmds[2])                      # proposed while "put a 5" at offset 2 is uncommitted
    sm.apply_committed(ListLog(records(put_command("a", 1), put_command("a", 5), cmds[2])), 4)
    assert sm.get("a") == 5 and sm.take_result(3) == ApplyResult(3, True, 1)    # told it succeeded: it did not


def test_replay_of_the_log_on_disk_rebuilds_the_same_state(tmp_path):
    cmds = random_commands(random.Random(9), 200)
    log = Log(tmp_path / "log", segment_bytes=2048)   # several segments
    log.open()
    for r in records(*cmds):
        log.append(r)
    log.flush()
    before = KvStateMachine()
    before.apply_committed(log, log.end_offset)
    log.close()
    reopened = Log(tmp_path / "log", segment_bytes=2048)
    reopened.open()
    after = KvStateMachine()
    after.apply_committed(reopened, reopened.end_offset)
    reopened.close()
    assert after.snapshot() == before.snapshot() and after.applied == before.applied == len(cmds) + 1


# -- a single RaftNode: followers apply what commits, the leader answers after commit --------

async def node(cfg, kind, epoch=1, leader=1, payloads=()):
    n = RaftNode(cfg, read_meta(cfg.data_dir))
    await n.start()
    persist(n.core.state, ElectionState(epoch, leader, leader))
    if kind is StateKind.LEADER:
        n.core.state.votes_granted = {1, 2}
        n.become_leader()
    else:
        n.core.state.kind = kind
    return n


def test_a_follower_applies_only_what_the_leader_says_is_committed(tmp_path):
    cfg = make_configs(tmp_path, 3)[1]

    async def run():
        f = await node(cfg, StateKind.FOLLOWER)
        recs = [r.to_wire() for r in records(put_command("a", 1), put_command("a", 2),
                                             cas_command("a", 2, 3))]
        base = {"ErrorCode": 0, "LeaderId": 1, "LeaderEpoch": 1, "LogStartOffset": 0}
        assert f.apply_fetch_response({**base, "HighWatermark": 2, "Records": recs})
        assert f.log.end_offset == 4 and f.hw == 2
        assert f.kv.applied == 2 and f.kv.get("a") == 1
        assert f.apply_fetch_response({**base, "HighWatermark": 4, "Records": []})
        assert f.kv.applied == 4 and f.kv.get("a") == 3
        await f.close()

    asyncio.run(run())


def fetch(offset, last_epoch, epoch=1, rid=2):
    return {"ReplicaId": rid, "ReplicaEpoch": epoch, "FetchOffset": offset,
            "LastFetchedEpoch": last_epoch, "MaxWaitMs": 0}


def test_the_leader_answers_a_write_only_once_committed_and_applied(tmp_path):
    cfg = make_configs(tmp_path, 3)[0]

    async def run():
        n = await node(cfg, StateKind.LEADER)          # LeaderChange at offset 0
        svc = KvService(n)
        await n.handle_fetch(fetch(1, 1))              # n2 has the LeaderChange: hw 1
        assert n.hw == 1
        put = asyncio.create_task(svc.handle_write({"Op": "put", "Key": "a", "Value": 4}))
        await asyncio.sleep(0.05)                      # appended and fsynced, not committed
        assert not put.done() and n.log.end_offset == 2
        assert n.kv.get("a") is None and n.kv.applied == 1
        await n.handle_fetch(fetch(2, 1))
        assert await put == {"ErrorCode": 0, "Offset": 1, "Epoch": 1, "Succeeded": True, "Previous": None}
        assert n.kv.get("a") == 4
        cas = asyncio.create_task(svc.handle_write({"Op": "cas", "Key": "a", "Expected": 3, "Value": 5}))
        await asyncio.sleep(0.05)
        await n.handle_fetch(fetch(3, 1))
        assert await cas == {"ErrorCode": 0, "Offset": 2, "Epoch": 1, "Succeeded": False, "Previous": 4}
        assert n.kv.snapshot() == {"a": 4} and n.kv._expected == {}
        await n.close()

    asyncio.run(run())


def test_a_write_whose_leader_resigns_is_indefinite_and_forgotten(tmp_path):
    cfg = make_configs(tmp_path, 3)[0]

    async def run():
        n = await node(cfg, StateKind.LEADER)
        svc = KvService(n)
        put = asyncio.create_task(svc.handle_write({"Op": "put", "Key": "a", "Value": 4}))
        await asyncio.sleep(0.02)
        n.resign("test")
        resp = await put
        assert resp["ErrorCode"] == errors.REQUEST_TIMED_OUT
        assert n.kv._expected == {}
        await n.close()

    asyncio.run(run())


@pytest.mark.parametrize("body, needle", [
    ({"Op": "delete", "Key": "a", "Value": 1}, "Op must be"),
    ({"Op": "put", "Key": 1, "Value": 1}, "Key must be a string"),
    ({"Op": "put", "Key": "a"}, "missing field Value"),
    ({"Op": "put", "Key": "a", "Value": "x"}, "Value must be an int or null"),
    ({"Op": "cas", "Key": "a", "Value": 1}, "missing field Expected"),
])
def test_bad_writes_are_invalid_requests(tmp_path, body, needle):
    cfg = make_configs(tmp_path, 3)[0]

    async def run():
        n = await node(cfg, StateKind.LEADER)
        with pytest.raises(InvalidRequest, match=needle):
            await KvService(n).handle_write(body)
        with pytest.raises(InvalidRequest, match="Key must be"):
            await KvService(n).handle_get({"Key": None})
        assert n.log.end_offset == 1                   # nothing but the LeaderChange
        await n.close()

    asyncio.run(run())


def test_a_non_leader_refuses_writes_and_gets_unless_read_index_is_off(tmp_path):
    cfgs = make_configs(tmp_path, 3)

    async def run():
        f = await node(cfgs[1], StateKind.FOLLOWER)
        svc = KvService(f)
        assert (await svc.handle_write({"Op": "put", "Key": "a", "Value": 1}))["ErrorCode"] == 6
        assert (await svc.handle_get({"Key": "a"}))["ErrorCode"] == 6
        assert f.log.end_offset == 0
        await f.close()
        unsafe_cfg = dataclasses.replace(cfgs[2], unsafe=frozenset({"no-read-index"}))
        g = await node(unsafe_cfg, StateKind.FOLLOWER)
        recs = [r.to_wire() for r in records(put_command("a", 1))]
        g.apply_fetch_response({"ErrorCode": 0, "LeaderId": 1, "LeaderEpoch": 1,
                                  "HighWatermark": 2, "Records": recs})
        assert await KvService(g).handle_get({"Key": "a"}) == {"ErrorCode": 0, "Value": 1,
                                                               "AppliedOffset": 2}
        await g.close()

    asyncio.run(run())
