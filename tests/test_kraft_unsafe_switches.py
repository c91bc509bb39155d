"""The unsafe switches added for the bug catalogue: each brings back its bug, and only it.

Each test shows the correct behaviour with the switch off and the bug with
it on, on real RaftNodes in this process (no network between them: the
leader's handlers are called directly, as in test_kraft_replication.py).
"""
from __future__ import annotations

import asyncio
import dataclasses

import pytest

from kraft.core import errors, unsafe
from kraft.quorum.transitions import persist
from kraft.rules.high_watermark import majority_position, next_high_watermark
from kraft.rules.voting import is_up_to_date
from kraft.storage.quorum_state import ElectionState

from .kraft_inproc import make_configs
from .test_kraft_replication import fetch, started


def test_every_switch_has_a_class_and_parses():
    assert set(unsafe.CLASSES) == set(unsafe.SWITCHES)
    assert set(unsafe.CLASSES.values()) <= {"elections", "commit", "acknowledgement", "reads", "recovery"}
    assert unsafe.parse("lease-read, commit-minority") == {"lease-read", "commit-minority"}
    with pytest.raises(ValueError, match="unknown unsafe switch lease"):
        unsafe.parse("lease")


def test_vote_ignores_offset_lets_a_shorter_log_of_the_same_epoch_win():
    # candidate: last epoch 3, end 10; voter: last epoch 3, end 12
    assert is_up_to_date(3, 10, 3, 12) is False
    assert is_up_to_date(3, 10, 3, 12, compare_offsets=False) is True
    # an older last epoch still loses either way
    assert is_up_to_date(2, 50, 3, 12, compare_offsets=False) is False


def test_commit_minority_counts_two_of_five():
    positions = [10, 8, 5, 3, 1]
    assert majority_position(positions) == 5                      # 3 of 5 reached 5
    assert majority_position(positions, quorum_off_by_one=True) == 8
    assert next_high_watermark(0, positions, 0) == 5
    assert next_high_watermark(0, positions, 0, quorum_off_by_one=True) == 8
    assert majority_position([7], quorum_off_by_one=True) == 7    # one voter: nothing below it


def _leader_cfg(root, *switches):
    """Node 1's config of a fresh 3-voter quorum under ``root``, with ``switches`` on."""
    return dataclasses.replace(make_configs(root, 3)[0], unsafe=frozenset(switches))


async def _leader(cfg, epochs=(1, 1)):
    """A leader of epoch 2 over a log of ``epochs``, with its LeaderChange appended."""
    leader = await started(cfg, list(epochs), ElectionState(1, -1, 1))
    persist(leader.core.state, ElectionState(2, -1, 1))
    leader.core.state.votes_granted = {1, 2, 3}
    leader.become_leader()
    return leader


def test_no_fetch_validation_skips_the_diverging_epoch(tmp_path):

    async def run(c):
        leader = await _leader(c)                           # log 1 1 | LC@2 at offset 2
        r = await leader.handle_fetch(fetch(4, 1, 2))       # a follower with epoch-1 records up to 4
        await leader.close()
        return r

    good = asyncio.run(run(_leader_cfg(tmp_path / "good")))
    assert good["DivergingEpoch"] == {"Epoch": 1, "EndOffset": 2}
    bad = asyncio.run(run(_leader_cfg(tmp_path / "bad", "no-fetch-validation")))
    assert "DivergingEpoch" not in bad and bad["ErrorCode"] == errors.NONE


def test_ack_before_commit_answers_an_append_no_follower_has(tmp_path):

    async def run(c):
        leader = await _leader(c)
        leader.cfg = dataclasses.replace(leader.cfg, request_timeout_ms=300)
        r = await leader.handle_append({"Value": 7})       # no follower ever fetches
        hw = leader.hw
        await leader.close()
        return r, hw

    good, hw = asyncio.run(run(_leader_cfg(tmp_path / "good")))
    assert good["ErrorCode"] == errors.REQUEST_TIMED_OUT and hw == 0
    bad, hw = asyncio.run(run(_leader_cfg(tmp_path / "bad", "ack-before-commit")))
    assert bad["ErrorCode"] == errors.NONE and bad["Offset"] == 3 and hw == 0


def test_lease_read_answers_without_a_majority_round(tmp_path):

    async def run(c):
        leader = await _leader(c)
        leader.core.state.hw = 3                                 # as if the LeaderChange had committed
        try:
            return await leader.read_index(timeout_s=0.2)
        except Exception as e:                              # noqa: BLE001 - the correct outcome
            return e
        finally:
            await leader.close()

    good = asyncio.run(run(_leader_cfg(tmp_path / "good")))
    assert "REQUEST_TIMED_OUT" in str(good)                 # no follower confirmed leadership
    assert asyncio.run(run(_leader_cfg(tmp_path / "bad", "lease-read"))) == 3
