"""harness.run.leader: picking the leader from DescribeQuorum answers, and catch-up detection."""
from __future__ import annotations

import asyncio

import pytest

from harness.run import leader
from kraft.wire import client as kclient


class FakeDB:
    def address(self, node):
        return (node, 9093)

    def quorum_client_factory(self):
        from targets.kraft_client import kraft_client as kraft_quorum_client
        return kraft_quorum_client      # looks kclient.KraftClient up at call time


def fake_client_for(answers):
    """A KraftClient stand-in: ``answers[node]`` is a body, or an exception to raise."""
    class C:
        def __init__(self, host, port, cluster_id, timeout_ms=3000):
            self.node = host

        async def describe_quorum(self):
            a = answers[self.node]
            if isinstance(a, BaseException):
                raise a
            return a

        async def close(self):
            pass
    return C


def body(leader_id, epoch, ends=None):
    voters = [{"ReplicaId": r, "LogEndOffset": e} for r, e in (ends or {}).items()]
    return {"LeaderId": leader_id, "LeaderEpoch": epoch, "HighWatermark": 0,
            "CurrentVoters": voters, "Observers": []}


def test_pick_leader_prefers_the_highest_epoch():
    assert leader.pick_leader({"n1": body(1, 4), "n2": None, "n3": body(3, 5)}) == "n3"
    assert leader.pick_leader({"n1": None, "n2": None}) is None


def test_find_leader_sync_ignores_errors_and_stale_leaders(monkeypatch):
    answers = {"n1": body(1, 2),                                   # deposed, still answers
               "n2": kclient.DefiniteError("NOT_LEADER_OR_FOLLOWER", "", 3, 7),
               "n3": body(3, 7),
               "n4": kclient.IndefiniteError("timeout")}
    monkeypatch.setattr(kclient, "KraftClient", fake_client_for(answers))
    nodes = list(answers)
    assert leader.find_leader(FakeDB(), nodes, "cid") == "n3"

    async def from_inside_a_loop():   # the sync form must also work under a running loop
        return leader.find_leader(FakeDB(), nodes, "cid")
    assert asyncio.run(from_inside_a_loop()) == "n3"


def test_wait_for_leader_times_out_with_none(monkeypatch):
    answers = {"n1": kclient.IndefiniteError("connection")}
    monkeypatch.setattr(kclient, "KraftClient", fake_client_for(answers))
    assert asyncio.run(leader.wait_for_leader(FakeDB(), ["n1"], "cid", 0.3, poll_s=0.05)) is None


@pytest.mark.parametrize("ends, expected", [
    ({1: 10, 2: 10, 3: 10}, True),
    ({1: 10, 2: 9, 3: 10}, False),
    ({1: 10, 2: None, 3: 10}, False),
    ({}, False),
])
def test_caught_up(ends, expected):
    assert leader.caught_up(body(1, 3, ends)) is expected


def test_wait_for_catch_up_polls_until_equal(monkeypatch):
    answers = {"n1": body(1, 3, {1: 10, 2: 8})}
    monkeypatch.setattr(kclient, "KraftClient", fake_client_for(answers))

    async def main():
        waiter = asyncio.create_task(leader.wait_for_catch_up(FakeDB(), ["n1"], "cid", 3, poll_s=0.05))
        await asyncio.sleep(0.2)
        assert not waiter.done()
        answers["n1"] = body(1, 3, {1: 10, 2: 10})
        return await waiter
    assert asyncio.run(main()) is True
