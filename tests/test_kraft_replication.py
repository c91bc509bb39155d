"""Fetch handling: DivergingEpoch and truncation, and the high-watermark rule (KIP-595)."""
import asyncio

import pytest

from kraft.core.records import DATA, Record
from kraft.core.states import StateKind
from kraft.quorum.follower import truncate_diverging
from kraft.quorum.transitions import persist
from kraft.rules.high_watermark import end_quorum_backoff_ms, majority_position, next_high_watermark
from kraft.runtime.raft import FatalError, RaftNode
from kraft.storage.meta import read_meta
from kraft.storage.quorum_state import ElectionState, write_state
from tests.kraft_inproc import make_configs


def test_majority_position():
    assert majority_position([10, 5, 7]) == 7
    assert majority_position([10, 5, 7, 1, 9]) == 7
    assert majority_position([10, -1, -1]) == -1


def test_high_watermark_waits_for_the_epochs_leader_change():
    # epoch starts at offset 10 (the LeaderChange record); a majority has only 10
    assert next_high_watermark(4, [12, 10, 3], epoch_start_offset=10) == 4
    assert next_high_watermark(4, [12, 11, 3], epoch_start_offset=10) == 11
    # KAFKA-12619 when the check is switched off
    assert next_high_watermark(4, [12, 10, 3], 10, require_epoch_commit=False) == 10
    # never backwards
    assert next_high_watermark(20, [12, 11, 3], 10) == 20


def test_end_quorum_backoff():
    assert end_quorum_backoff_ms(0) == 0
    assert end_quorum_backoff_ms(1) == 20
    assert end_quorum_backoff_ms(3) == 80
    assert end_quorum_backoff_ms(10) == 1000
    assert end_quorum_backoff_ms(None) == 1000


async def started(cfg, epochs=(), election=None):
    if election is not None:
        write_state(cfg.data_dir, election)
    n = RaftNode(cfg, read_meta(cfg.data_dir))
    n.log.open()
    for e in epochs:
        n.log.append(Record(n.log.end_offset, e, DATA, n.log.end_offset))
    n.log.flush()
    n.log.close()
    n = RaftNode(cfg, read_meta(cfg.data_dir))
    await n.start()
    return n


def fetch(offset, last_epoch, epoch, rid=2):
    return {"ReplicaId": rid, "ReplicaEpoch": epoch, "FetchOffset": offset,
            "LastFetchedEpoch": last_epoch, "MaxWaitMs": 0}


def test_leader_answers_diverging_epoch_and_follower_truncates(tmp_path):
    leader_cfg, follower_cfg, _ = make_configs(tmp_path, 3)

    async def run():
        # leader log: epochs 1 1 1 3 3 (offsets 0..4), now leading epoch 4
        leader = await started(leader_cfg, [1, 1, 1, 3, 3], ElectionState(3, -1, 1))
        persist(leader.core.state, ElectionState(4, -1, 1))
        leader.core.state.votes_granted = {1, 2}
        leader.become_leader()                       # LeaderChange at offset 5, epoch 4
        # follower log: 1 1 1 2 2 2 (it led epoch 2 alone; never committed)
        follower = await started(follower_cfg, [1, 1, 1, 2, 2, 2], ElectionState(4, 1, 1))
        follower.core.state.kind = StateKind.FOLLOWER
        r = await leader.handle_fetch(fetch(6, 2, 4))
        assert r["DivergingEpoch"] == {"Epoch": 1, "EndOffset": 3}
        assert r["Records"] == []
        assert follower.apply_fetch_response({**r, "LeaderId": 1, "LeaderEpoch": 4})
        assert follower.log.end_offset == 3 and follower.log.last_epoch == 1
        # the next fetch is consistent and gets the leader's records
        r = await leader.handle_fetch(fetch(3, 1, 4))
        assert "DivergingEpoch" not in r
        assert [rec[1] for rec in r["Records"]] == [3, 3, 4]
        follower.apply_fetch_response({**r, "LeaderId": 1, "LeaderEpoch": 4})
        assert [x.epoch for x in follower.log.records] == [1, 1, 1, 3, 3, 4]
        # a fetch past the end of a matching epoch also diverges
        r = await leader.handle_fetch(fetch(5, 3, 4, rid=3))
        assert "DivergingEpoch" not in r
        r = await leader.handle_fetch(fetch(7, 3, 4, rid=3))
        assert r["DivergingEpoch"] == {"Epoch": 3, "EndOffset": 5}
        for n in (leader, follower):
            await n.close()

    asyncio.run(run())


def test_truncation_below_the_high_watermark_is_fatal(tmp_path):
    cfg = make_configs(tmp_path, 3)[1]

    async def run():
        f = await started(cfg, [1, 1, 1, 2], ElectionState(3, 1, -1))
        f.core.state.kind = StateKind.FOLLOWER
        f.core.state.hw = 4
        with pytest.raises(FatalError):
            truncate_diverging(f.core.state, 1, 2)
        assert f.log.end_offset == 4
        await f.close()

    asyncio.run(run())


def test_leader_high_watermark_follows_majority_fetches(tmp_path):
    cfgs = make_configs(tmp_path, 5)

    async def run():
        leader = await started(cfgs[0], [1, 1], ElectionState(1, -1, 1))
        persist(leader.core.state, ElectionState(2, -1, 1))
        leader.core.state.votes_granted = {1, 2, 3}
        leader.become_leader()                 # LeaderChange at offset 2
        for v in range(3):
            leader.log.append(Record(leader.log.end_offset, 2, DATA, v))
        leader.flush_now()
        assert leader.log.end_offset == 6 and leader.hw == 0
        await leader.handle_fetch(fetch(2, 1, 2, rid=2))
        await leader.handle_fetch(fetch(2, 1, 2, rid=3))
        assert leader.hw == 0                  # a majority has the old records, not the LeaderChange
        await leader.handle_fetch(fetch(4, 2, 2, rid=2))
        assert leader.hw == 0                  # only 2 of 5 voters past offset 2
        await leader.handle_fetch(fetch(5, 2, 2, rid=3))
        assert leader.hw == 4                  # leader 6, n3 5, n2 4 -> majority position 4
        await leader.handle_fetch(fetch(6, 2, 2, rid=4))
        assert leader.hw == 5
        await leader.handle_fetch(fetch(3, 2, 2, rid=5))
        assert leader.hw == 5                  # never backwards
        await leader.close()

    asyncio.run(run())


def test_a_fetch_response_holds_at_most_fetch_max_records(tmp_path):
    cfgs = make_configs(tmp_path, 3, fetch_max_records=2)

    async def run():
        leader = await started(cfgs[0], [1, 1, 1, 1, 1], ElectionState(1, -1, 1))
        persist(leader.core.state, ElectionState(2, -1, 1))
        leader.core.state.votes_granted = {1, 2}
        leader.become_leader()                 # LeaderChange at offset 5
        got, offset = [], 0
        while offset < leader.log.end_offset:
            recs = (await leader.handle_fetch(fetch(offset, 1 if offset else 0, 2)))["Records"]
            assert 1 <= len(recs) <= 2
            got += [r[0] for r in recs]
            offset = got[-1] + 1
        assert got == list(range(6))           # every record, two at a time
        await leader.close()

    asyncio.run(run())


def test_fetch_epoch_errors(tmp_path):
    cfg = make_configs(tmp_path, 3)[0]

    async def run():
        n = await started(cfg, [], ElectionState(5, 2, -1))
        assert (await n.handle_fetch(fetch(0, 0, 4)))["ErrorCode"] == 74    # FENCED_LEADER_EPOCH
        assert (await n.handle_fetch(fetch(0, 0, 6)))["ErrorCode"] == 75    # UNKNOWN_LEADER_EPOCH
        assert (await n.handle_fetch(fetch(0, 0, 5)))["ErrorCode"] == 6     # NOT_LEADER_OR_FOLLOWER
        await n.close()

    asyncio.run(run())
