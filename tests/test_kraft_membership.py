"""KIP-853 in real in-process clusters: kraft.version 1 bootstrapped with
--initial-controllers, directory ids, observers, AddRaftVoter / RemoveRaftVoter /
UpdateRaftVoter and the voter set following the log (also through truncation)."""
import asyncio

import pytest

from kraft.core import errors
from kraft.core.records import KRAFT_VERSION, LEADER_CHANGE, VOTERS
from kraft.core.states import StateKind
from kraft.wire import api
from kraft.wire.client import DefiniteError, IndefiniteError, KraftClient
from tests.kraft_inproc import CLUSTER_ID, Partition, loopback_cluster, wait_for_leader
from tests.kraft_inproc_v1 import V1Cluster, eventually


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


async def started(c: V1Cluster, ids=None, partition=None):
    for i in ids or c.ports:
        await c.start(i, partition)
    return await wait_for_leader(list(c.running.values()), timeout_s=10)


def observer(desc: dict, rid: int) -> dict | None:
    return next((o for o in desc["Observers"] if o["ReplicaId"] == rid), None)


async def caught_up_observer(c: V1Cluster, leader_id: int, rid: int) -> dict:
    async def check():
        client = c.client(leader_id)
        try:
            d = await client.describe_quorum()
        finally:
            await client.close()
        o = observer(d, rid)
        return o if o and o["LogEndOffset"] >= c.running[leader_id].node.log.end_offset else None
    return await eventually(check, 5, f"node {rid} caught up as an observer")


def test_v1_cluster_formatted_with_initial_controllers_elects_and_commits(tmp_path):
    async def main():
        c = V1Cluster(tmp_path, 3)
        try:
            leader = await started(c)
            client = c.client(leader.node.id)
            off, _ = await client.append("hello")
            types = [r.type for r in leader.node.log.records]
            # the first leader writes the bootstrap voter set into the log after its LeaderChange
            assert types[:3] == [LEADER_CHANGE, KRAFT_VERSION, VOTERS]
            assert leader.node.voter_history.last_offset == 2 and leader.node.voter_history.kraft_version == 1
            d = await client.describe_quorum()
            assert {(v["ReplicaId"], v["ReplicaDirectoryId"]) for v in d["CurrentVoters"]} == set(c.dir_ids.items())
            assert d["Observers"] == [] and d["HighWatermark"] > off
            with pytest.raises(DefiniteError) as e:                 # already a voter
                await client.add_voter(2, c.dir_ids[2], "127.0.0.1", c.ports[2])
            assert e.value.code == "DUPLICATE_VOTER"
            with pytest.raises(DefiniteError) as e:                 # right id, wrong directory
                await client.remove_voter(2, "not-its-directory")
            assert e.value.code == "VOTER_NOT_FOUND"
            follower = next(i for i in c.running if i != leader.node.id)
            with pytest.raises(DefiniteError) as e:
                await c.client(follower).add_voter(9, "x", "127.0.0.1", 1)
            assert e.value.code == "NOT_LEADER_OR_FOLLOWER" and e.value.leader_id == leader.node.id
            # UpdateRaftVoter: a new VotersRecord with the voter's endpoint, answered once appended
            with pytest.raises(DefiniteError) as e:
                await client.update_voter(follower, c.dir_ids[follower], "127.0.0.1", 1, leader.node.epoch - 1)
            assert e.value.code == "FENCED_LEADER_EPOCH"
            before = leader.node.voter_history.last_offset
            r = await client.update_voter(follower, c.dir_ids[follower], "localhost", c.ports[follower],
                                          leader.node.epoch)
            assert r["ErrorCode"] == 0 and r["CurrentLeader"]["LeaderId"] == leader.node.id
            assert leader.node.voter_history.last_offset > before
            assert leader.node.voters.get(follower).host == "localhost"
            await eventually(lambda: leader.node.hw > leader.node.voter_history.last_offset, 3, "the update to commit")
            await client.close()
        finally:
            await c.close()
    run(main())


def test_a_reformatted_voter_is_not_a_voter_but_an_observer(tmp_path):
    async def main():
        c = V1Cluster(tmp_path, 3)
        try:
            leader = await started(c)
            lid = leader.node.id
            a, b = [i for i in c.voter_ids if i != lid]
            await c.crash(a)
            new_dir = c.wipe(a)                          # disk lost: a new directory id
            wiped = await c.start(a)
            assert not wiped.node.is_voter
            o = await caught_up_observer(c, lid, a)      # it found the leader and replicates
            assert o["ReplicaDirectoryId"] == new_dir
            client = c.client(lid)
            d = await client.describe_quorum()
            assert (a, c.dir_ids[a]) in {(v["ReplicaId"], v["ReplicaDirectoryId"]) for v in d["CurrentVoters"]}
            assert wiped.node.kind is StateKind.FOLLOWER and wiped.node.leader_id == lid
            # Vote and BeginQuorumEpoch addressed to its old voter key are refused
            peer = c.client(a)
            r = await peer.request(api.VOTE, {
                "CandidateEpoch": leader.node.epoch + 1, "CandidateId": b, "CandidateDirectoryId": c.dir_ids[b],
                "VoterId": a, "VoterDirectoryId": c.dir_ids[a], "LastOffsetEpoch": 99, "LastOffset": 99,
                "PreVote": True})
            assert r["ErrorCode"] == errors.INVALID_VOTER_KEY and r["VoteGranted"] is False
            r = await peer.request(api.BEGIN_QUORUM_EPOCH, {"LeaderId": lid, "LeaderEpoch": leader.node.epoch,
                                                             "VoterId": a, "VoterDirectoryId": c.dir_ids[a]})
            assert r["ErrorCode"] == errors.INVALID_VOTER_KEY
            await peer.close()
            # its fetches do not count: with the other voter gone nothing commits
            await c.crash(b)
            with pytest.raises(IndefiniteError) as e:
                await client.append("needs a majority of real voters")
            assert e.value.code == "REQUEST_TIMED_OUT"
            assert wiped.node.log.end_offset == leader.node.log.end_offset   # though the observer has it
            await client.close()
        finally:
            await c.close()
    run(main())


def test_add_voter_of_a_caught_up_observer_and_it_counts_for_the_majority(tmp_path):
    async def main():
        c = V1Cluster(tmp_path, 3, n_observers=1)
        try:
            leader = await started(c)
            lid = leader.node.id
            new = c.running[4].node
            assert not new.is_voter
            o = await caught_up_observer(c, lid, 4)
            client = c.client(lid)
            resp = await client.add_voter(4, o["ReplicaDirectoryId"], "127.0.0.1", c.ports[4])
            assert resp["ErrorCode"] == 0
            last = leader.node.voter_history.last_offset
            assert leader.node.log.records[last].type == VOTERS and leader.node.hw > last   # committed
            assert leader.node.voters.ids == [1, 2, 3, 4]
            await eventually(lambda: new.is_voter, 3, "node 4 to see itself a voter")
            d = await client.describe_quorum()
            assert sorted(v["ReplicaId"] for v in d["CurrentVoters"]) == [1, 2, 3, 4] and d["Observers"] == []
            # 4 voters: a majority is 3. With one old follower down, the leader, the other
            # and node 4 commit; without node 4 counting, 2 of 4 would not.
            other = next(i for i in c.voter_ids if i != lid)
            await c.crash(other)
            off, _ = await client.append("committed with the new voter")
            assert leader.node.hw > off
            await client.close()
        finally:
            await c.close()
    run(main())


def test_add_voter_of_a_replica_that_is_not_caught_up_fails(tmp_path):
    async def main():
        c = V1Cluster(tmp_path, 3, n_observers=1)
        try:
            leader = await started(c, ids=c.voter_ids)       # node 4 never fetched
            client = c.client(leader.node.id)
            before = leader.node.log.end_offset
            with pytest.raises(IndefiniteError) as e:
                await client.add_voter(4, "some-directory", "127.0.0.1", c.ports[4])
            assert e.value.code == "REQUEST_TIMED_OUT" and "lagging" in str(e.value)
            assert leader.node.log.end_offset == before and leader.node.voters.ids == [1, 2, 3]
            await client.close()
        finally:
            await c.close()
    run(main())


def test_a_second_voter_change_while_one_is_uncommitted_fails(tmp_path):
    async def main():
        c = V1Cluster(tmp_path, 3, n_observers=1)
        try:
            leader = await started(c)
            lid = leader.node.id
            o = await caught_up_observer(c, lid, 4)
            for i in [i for i in c.voter_ids if i != lid]:
                await c.crash(i)                          # {1,2,3,4} can then not commit
            client = c.client(lid)
            add = asyncio.ensure_future(client.add_voter(4, o["ReplicaDirectoryId"], "127.0.0.1", c.ports[4],
                                                         timeout_ms=300))
            await eventually(lambda: leader.node.voters.ids == [1, 2, 3, 4], 2, "the VotersRecord appended")
            assert leader.node.hw <= leader.node.voter_history.last_offset     # not committed
            second = c.client(lid)
            with pytest.raises(IndefiniteError) as e:
                await second.remove_voter(lid, c.dir_ids[lid])
            assert e.value.code == "REQUEST_TIMED_OUT" and "commit the latest voter change" in str(e.value)
            with pytest.raises(IndefiniteError) as e:
                await add
            assert e.value.code == "REQUEST_TIMED_OUT"
            await client.close()
            await second.close()
        finally:
            await c.close()
    run(main())


def test_remove_the_leader_itself_it_resigns_after_commit_and_the_rest_elect(tmp_path):
    async def main():
        c = V1Cluster(tmp_path, 3)
        try:
            leader = await started(c)
            lid = leader.node.id
            client = c.client(lid)
            resp = await client.remove_voter(lid, c.dir_ids[lid])
            assert resp["ErrorCode"] == 0
            rest = [c.running[i] for i in c.voter_ids if i != lid]
            new_leader = await wait_for_leader(rest, timeout_s=10)
            assert new_leader.node.voters.ids == sorted(i for i in c.voter_ids if i != lid)
            assert leader.node.kind is not StateKind.LEADER and not leader.node.is_voter
            nc = c.client(new_leader.node.id)
            off, _ = await nc.append("after the removal")
            # the removed leader finds the new one and replicates as an observer
            await caught_up_observer(c, new_leader.node.id, lid)
            await client.close()
            await nc.close()
        finally:
            await c.close()
    run(main())


def test_a_truncated_uncommitted_voters_record_reverts_the_voter_set(tmp_path):
    async def main():
        slow = dict(fetch_timeout_ms=3000, election_timeout_ms=1500)   # node 4 never stands first
        c = V1Cluster(tmp_path, 3, n_observers=1, overrides={4: slow})
        part = Partition()
        try:
            leader = await started(c, partition=part)
            lid = leader.node.id
            others = [i for i in c.voter_ids if i != lid]
            o = await caught_up_observer(c, lid, 4)
            part.isolate(lid, others)                       # the leader keeps only node 4
            await asyncio.sleep(0.2)     # Fetches parked before the cut are answered, then none
            client = c.client(lid)
            with pytest.raises(IndefiniteError):
                await client.add_voter(4, o["ReplicaDirectoryId"], "127.0.0.1", c.ports[4], timeout_ms=300)
            at = leader.node.voter_history.last_offset
            assert leader.node.voters.ids == [1, 2, 3, 4] and leader.node.hw <= at
            node4 = c.running[4].node
            await eventually(lambda: node4.voters.ids == [1, 2, 3, 4], 3, "node 4 to copy the VotersRecord")
            new_leader = await wait_for_leader([c.running[i] for i in others], timeout_s=10)
            part.heal()
            await eventually(lambda: leader.node.voters.ids == [1, 2, 3] and node4.voters.ids == [1, 2, 3], 10,
                             "the uncommitted voter set to be truncated away")
            assert not node4.is_voter and node4.voter_history.last_offset < at
            await caught_up_observer(c, new_leader.node.id, 4)
            await client.close()
        finally:
            await c.close()
    run(main())


def test_kraft_version_0_refuses_voter_changes_with_unsupported_version(tmp_path):
    async def main():
        async with loopback_cluster(tmp_path, 3) as (running, db, names):
            leader = await wait_for_leader(list(running.values()))
            client = KraftClient("127.0.0.1", leader.cfg.listen_port, CLUSTER_ID)
            assert leader.node.voter_history.kraft_version == 0
            for call in (client.add_voter(4, "d", "127.0.0.1", 1), client.remove_voter(2, "d"),
                         client.update_voter(2, "d", "127.0.0.1", 1, leader.node.epoch)):
                with pytest.raises(DefiniteError) as e:
                    await call
                assert e.value.code == "UNSUPPORTED_VERSION"
            assert [r.type for r in leader.node.log.records] == [LEADER_CHANGE]     # nothing else written
            d = await client.describe_quorum()
            assert sorted(v["ReplicaId"] for v in d["CurrentVoters"]) == [1, 2, 3]
            await client.close()
    run(main())
