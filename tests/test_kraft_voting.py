"""Vote rules (KIP-595 Vote, KIP-996 Pre-Vote): the up-to-date comparison and
one vote per epoch surviving a restart."""
import asyncio

import pytest

from kraft.core.records import DATA, Record
from kraft.core.states import StateKind
from kraft.rules.voting import grant_pre_vote, grant_vote, is_up_to_date
from kraft.runtime.raft import RaftNode
from kraft.storage.meta import read_meta
from kraft.storage.quorum_state import read_state
from tests.kraft_inproc import make_configs


@pytest.mark.parametrize("cand,own,expected", [
    ((3, 10), (3, 10), True),     # equal logs
    ((3, 11), (3, 10), True),     # longer, same last epoch
    ((3, 9), (3, 10), False),     # shorter, same last epoch
    ((4, 1), (3, 100), True),     # higher last epoch wins even when much shorter
    ((2, 100), (3, 1), False),    # lower last epoch loses even when much longer
    ((0, 0), (0, 0), True),       # empty logs
])
def test_up_to_date_compares_epoch_then_offset(cand, own, expected):
    assert is_up_to_date(*cand, *own) is expected


def test_grant_vote_table():
    u = StateKind.UNATTACHED
    assert grant_vote(u, -1, -1, 2, True)
    assert not grant_vote(u, -1, -1, 2, False)        # candidate behind
    assert grant_vote(u, 2, -1, 2, False)             # same candidate again
    assert not grant_vote(u, 3, -1, 2, True)          # already voted for another
    assert not grant_vote(StateKind.FOLLOWER, -1, 1, 2, True)   # knows a leader
    assert not grant_vote(StateKind.CANDIDATE, 1, -1, 2, True)  # voted for itself


def test_pre_vote_table():
    assert not grant_pre_vote(StateKind.LEADER, False, True)
    assert not grant_pre_vote(StateKind.FOLLOWER, True, True)   # fetched from its leader
    assert grant_pre_vote(StateKind.FOLLOWER, False, True)
    assert grant_pre_vote(StateKind.PROSPECTIVE, False, True)
    assert not grant_pre_vote(StateKind.UNATTACHED, False, False)


def vote(cand, epoch, last_epoch=0, last_offset=0, pre=False):
    return {"CandidateEpoch": epoch, "CandidateId": cand, "LastOffsetEpoch": last_epoch,
            "LastOffset": last_offset, "PreVote": pre, "ClusterId": "x"}


async def _node(cfg):
    n = RaftNode(cfg, read_meta(cfg.data_dir))
    await n.start()
    return n


def test_one_vote_per_epoch_survives_restart(tmp_path):
    cfg = make_configs(tmp_path, 3)[0]

    async def first_life():
        n = await _node(cfg)
        r = await n.handle_vote(vote(2, 5))
        assert r["VoteGranted"] is True
        await n.close()

    async def second_life():
        n = await _node(cfg)
        assert (n.epoch, n.election.voted_id) == (5, 2)
        r = await n.handle_vote(vote(3, 5, 9, 100))      # another candidate, same epoch
        assert r["VoteGranted"] is False
        r = await n.handle_vote(vote(2, 5))               # the same candidate again
        assert r["VoteGranted"] is True
        r = await n.handle_vote(vote(3, 6))               # a higher epoch frees the vote
        assert r["VoteGranted"] is True
        await n.close()

    asyncio.run(first_life())
    assert read_state(cfg.data_dir).voted_id == 2
    asyncio.run(second_life())
    assert (read_state(cfg.data_dir).epoch, read_state(cfg.data_dir).voted_id) == (6, 3)


def test_forget_vote_switch_loses_the_vote_on_restart(tmp_path):
    cfg = make_configs(tmp_path, 3, unsafe=frozenset({"forget-vote"}))[0]

    async def life(cand):
        n = await _node(cfg)
        r = await n.handle_vote(vote(cand, 5))
        await n.close()
        return r["VoteGranted"]

    assert asyncio.run(life(2)) is True
    assert asyncio.run(life(3)) is True      # the bug: two votes in epoch 5


def test_vote_refused_to_a_candidate_with_a_stale_log(tmp_path):
    cfg = make_configs(tmp_path, 3)[0]

    async def run():
        n = await _node(cfg)
        for i, e in enumerate([1, 1, 2]):
            n.log.append(Record(i, e, DATA, i))
        n.log.flush()
        assert (await n.handle_vote(vote(2, 3, 1, 10)))["VoteGranted"] is False   # last epoch 1 < 2
        assert (await n.handle_vote(vote(2, 3, 2, 2)))["VoteGranted"] is False    # shorter in epoch 2
        assert (await n.handle_vote(vote(2, 3, 2, 3)))["VoteGranted"] is True
        # a pre-vote never changes the epoch or records a vote
        before = read_state(cfg.data_dir)
        assert (await n.handle_vote(vote(3, 9, 2, 3, pre=True)))["VoteGranted"] is True
        assert read_state(cfg.data_dir) == before and n.epoch == 3
        r = await n.handle_vote(vote(3, 2, 5, 50))
        assert r["VoteGranted"] is False and r["ErrorCode"] == 74   # FENCED_LEADER_EPOCH
        await n.close()

    asyncio.run(run())
