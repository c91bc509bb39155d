"""Voter changes through the DB interface (targets/base.py, targets/voters.py,
targets/kafka/voters.py): KraftDB's reformat at kraft.version 1, add/remove refused at
kraft.version 0, our quorum's AddRaftVoter/RemoveRaftVoter on a real in-process cluster
(the membership nemesis replacing a wiped voter), and Kafka's tool argv and outcomes."""
import asyncio
import random
import shlex

import pytest

from kraft.__main__ import main as kraft_main
from kraft.storage.bootstrap import read_bootstrap
from kraft.storage.meta import read_meta
from nemesis.faults import Fault
from nemesis.membership import Membership
from targets import voters
from targets.base import DB
from targets.kafka import voters as kv
from targets.kafka.db import KafkaDB
from targets.kraft_client import kraft_client as kraft_quorum_client
from targets.kraft_db import KraftDB
from tests.kraft_inproc import CLUSTER_ID
from tests.kraft_inproc_v1 import V1Cluster, eventually
from tests.nemesis_fakes import FakeCluster, FakeRemote


def test_reformat_at_kraft_version_1_makes_an_observer_with_a_fresh_directory_id(tmp_path):
    remote = FakeRemote()
    db = KraftDB(FakeCluster(3, remote), "CID", seed=5, kraft_version=1)
    db.reformat("n3")
    argv = shlex.split(remote.execs("n3")[-1].split("&& cd / && ", 1)[1])
    assert "--no-initial-controllers" in argv and not any(a.startswith("--initial-controllers") for a in argv)
    data = tmp_path / "data"
    assert kraft_main([a if a != db.paths.data_dir else str(data) for a in argv[3:]]) == 0
    assert read_bootstrap(data) == (1, None)            # kraft.version 1, no voters: an observer
    first = read_meta(data).directory_id
    data2 = tmp_path / "data2"
    assert kraft_main([a if a != db.paths.data_dir else str(data2) for a in argv[3:]]) == 0
    assert read_meta(data2).directory_id != first


def test_reformat_at_kraft_version_0_is_unchanged():
    remote = FakeRemote()
    KraftDB(FakeCluster(3, remote), "CID", seed=5).reformat("n3")
    assert "--no-initial-controllers" not in remote.execs("n3")[-1]


@pytest.mark.parametrize("make", [
    lambda: KraftDB(FakeCluster(3), "CID", seed=5),
    lambda: KafkaDB(FakeCluster(3), "CID", seed=5, topology="combined", kraft_version=0),
])
def test_voter_changes_are_refused_at_kraft_version_0(make):
    db = make()
    for call in (lambda: db.add_voter("n2"), lambda: db.remove_voter("n2", "d")):
        with pytest.raises(voters.VoterChangeError, match="not supported at kraft.version 0"):
            call()


class InprocDB:
    """The DB surface the voter changes use, on an in-process V1Cluster (KraftDB's RPCs)."""

    kraft_version = 1
    cluster_id = CLUSTER_ID
    voter_state, add_voter, remove_voter = DB.voter_state, DB.add_voter, DB.remove_voter
    _voter_change = KraftDB._voter_change

    def __init__(self, c: V1Cluster):
        self.c = c
        self.nodes = [f"n{i}" for i in c.ports]

    def node_id(self, node):
        return int(node[1:])

    def node_for_id(self, i):
        if i not in self.c.ports:
            raise ValueError(i)
        return f"n{i}"

    def address(self, node):
        return "127.0.0.1", self.c.ports[self.node_id(node)]

    def quorum_nodes(self):
        return list(self.nodes)

    def quorum_client_factory(self):
        return kraft_quorum_client

    def disk_state(self, node):
        return {"directory_id": read_meta(self.c.data_dir(self.node_id(node))).directory_id}


def test_our_quorum_replaces_a_wiped_voter_through_the_membership_nemesis(tmp_path):
    async def main():
        c = V1Cluster(tmp_path, 3)
        db = InprocDB(c)
        try:
            for i in c.ports:
                await c.start(i)
            state = await eventually(lambda: _leader_state(db), 10, "a leader")
            old = voters.voter_key(state, 3)
            assert old == c.dir_ids[3]
            await c.crash(3)
            new = c.wipe(3)
            await c.start(3)
            async def observed():
                s = await _state_async(db)
                return s is not None and voters.observed_key(s, 3) == new
            await eventually(observed, 10, "node 3 an observer under its new directory id")
            m = Membership(db, db.nodes, random.Random(1), catch_up_s=15, poll_s=0.1)
            value = await asyncio.to_thread(m.start, Fault("membership", "replace"))
            assert value["targets"] == ["n3"], value
            remove, add = value["changes"]
            assert (remove["op"], remove["outcome"], remove["directory_id"]) == ("remove", "ok", old), remove
            assert (add["op"], add["outcome"], add["directory_id"]) == ("add", "ok", new), add
            assert [3, new] in value["voters_after"] and [3, old] not in value["voters_after"]
            # again: nothing left to replace; a duplicate add is a definite refusal
            again = await asyncio.to_thread(m.start, Fault("membership", "replace", slot="again"))
            assert again["targets"] == []
            dup = await asyncio.to_thread(db.add_voter, "n3")
            assert (dup["outcome"], dup["error"]) == ("fail", "DUPLICATE_VOTER")
            gone = await asyncio.to_thread(db.remove_voter, "n2", "no-such-directory")
            assert (gone["outcome"], gone["error"]) == ("fail", "VOTER_NOT_FOUND")
        finally:
            await c.close()
    asyncio.run(asyncio.wait_for(main(), 90))


async def _state_async(db):
    return await asyncio.to_thread(_state, db)


def _state(db):
    try:
        return db.voter_state()
    except voters.VoterChangeError:
        return None


async def _leader_state(db):
    s = await _state_async(db)
    return s if s and s["leader"] else None


def test_kafka_tool_argv():
    rm = kv.remove_argv("h1:9093,h2:9093", 3, "AAAAAAAAAAAAAAAAAAAAAA", command_config="/tmp/c")
    assert rm[rm.index("-cp") + 2:] == [
        "org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-controller", "h1:9093,h2:9093",
        "--command-config", "/tmp/c", "remove-controller", "--controller-id", "3",
        "--controller-directory-id", "AAAAAAAAAAAAAAAAAAAAAA"]
    add = kv.add_argv("h1:9093", "/etc/kafka/server.properties")
    assert add[-5:] == ["--bootstrap-controller", "h1:9093", "--command-config", "/etc/kafka/server.properties",
                        "add-controller"]


@pytest.mark.parametrize("code, text, expected", [
    (0, "Added controller 3 with directory id x", {"outcome": "ok"}),
    (1, "org.apache.kafka.common.errors.DuplicateVoterException: voter 3 already", "fail DUPLICATE_VOTER"),
    (1, "java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.VoterNotFoundException: "
        "no such voter", "fail VOTER_NOT_FOUND"),
    (1, "org.apache.kafka.common.errors.TimeoutException: Timed out", "info REQUEST_TIMED_OUT"),
    (1, "org.apache.kafka.common.errors.UnsupportedVersionException: kraft.version 0", "fail UNSUPPORTED_VERSION"),
    (137, "Killed", "info tool"),
])
def test_kafka_tool_outcomes(code, text, expected):
    out = kv.parse_outcome(code, text)
    if isinstance(expected, dict):
        assert out == expected
    else:
        assert f"{out['outcome']} {out['error']}" == expected, out


def test_kafka_change_runs_add_on_the_joining_node_and_remove_on_the_leader(monkeypatch):
    remote = FakeRemote()
    db = KafkaDB(FakeCluster(3, remote), "CID", seed=5, topology="combined", kraft_version=1)
    monkeypatch.setattr(KafkaDB, "voter_state", lambda self: {"leader": "n2"})
    out = db._voter_change("add", "n3", "D3")
    assert out == {"voter_id": 3, "directory_id": "D3", "via": "n3", "outcome": "ok"}
    assert "add-controller" in remote.execs("n3")[-1]
    out = db._voter_change("remove", "n3", "D3")
    assert out["via"] == "n2" and "--controller-directory-id D3" in remote.execs("n2")[-1]
