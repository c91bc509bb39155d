"""The node under bad input and a real in-process quorum on loopback."""
import asyncio
import struct

import pytest

from kraft.core import errors
from kraft.runtime.config import ConfigError, parse_config
from kraft.runtime.raft import Refused
from kraft.storage.meta import MetaError, check_meta, format_dir
from kraft.wire import api, frames
from kraft.wire.client import DefiniteError, KraftClient
from tests.kraft_inproc import CLUSTER_ID, Running, make_configs, wait_for_leader


async def raw_request(port, payload: bytes) -> bytes:
    r, w = await asyncio.open_connection("127.0.0.1", port)
    w.write(payload)
    await w.drain()
    try:
        return await asyncio.wait_for(r.read(1 << 16), 2)
    finally:
        w.close()


def test_bad_input_never_crashes_the_node(tmp_path):
    async def run():
        nodes = [await Running(c).start() for c in make_configs(tmp_path, 1)]
        leader = await wait_for_leader(nodes)
        port = leader.cfg.listen_port
        # garbage bytes, an oversized length, a non-JSON body, JSON that is not a request
        assert await raw_request(port, b"GET / HTTP/1.1\r\n\r\n") == b""
        assert await raw_request(port, struct.pack(">I", 1 << 30)) == b""
        assert await raw_request(port, struct.pack(">I", 5) + b"\xff\xfe{{{") == b""
        assert await raw_request(port, frames.encode({"hello": 1})) == b""
        # the wrong cluster id: INCONSISTENT_CLUSTER_ID, with the leader piggybacked
        c = KraftClient("127.0.0.1", port, "someone-elses-cluster")
        body = await c.request(api.FETCH, {"ReplicaId": 2, "ReplicaEpoch": 1, "FetchOffset": 0,
                                           "LastFetchedEpoch": 0})
        assert body["ErrorCode"] == errors.INCONSISTENT_CLUSTER_ID
        assert body["LeaderId"] == 1 and body["LeaderEpoch"] == leader.node.epoch
        with pytest.raises(DefiniteError) as e:
            await c.append(1)
        assert e.value.code == "INCONSISTENT_CLUSTER_ID"
        await c.close()
        # a field of the wrong type: INVALID_REQUEST naming it
        good = KraftClient("127.0.0.1", port, CLUSTER_ID)
        body = await good.request(api.VOTE, {"CandidateEpoch": "x", "CandidateId": 2,
                                              "LastOffsetEpoch": 0, "LastOffset": 0})
        assert body["ErrorCode"] == errors.INVALID_REQUEST and "CandidateEpoch" in body["ErrorMessage"]
        # and the node still serves
        assert (await good.append("after garbage"))[0] >= 1
        await good.close()
        for n in nodes:
            await n.crash()

    asyncio.run(run())


def test_data_dir_of_another_node_or_cluster_is_refused(tmp_path):
    format_dir(tmp_path / "d", "clusterA", 1)
    check_meta(tmp_path / "d", 1, "clusterA")
    with pytest.raises(MetaError, match="formatted for node 1, but this node is 2"):
        check_meta(tmp_path / "d", 2, "clusterA")
    with pytest.raises(MetaError, match="cluster 'clusterA'.*'clusterB'"):
        check_meta(tmp_path / "d", 1, "clusterB")
    with pytest.raises(MetaError, match="already formatted"):
        format_dir(tmp_path / "d", "clusterA", 1)
    with pytest.raises(MetaError, match="not found"):
        check_meta(tmp_path / "empty", 1, None)


def test_config_errors_name_the_key():
    base = "node.id=1\nlisteners=127.0.0.1:9093\ncontroller.quorum.voters=1@h:9093\nlog.dir=/tmp/x\n"
    cfg = parse_config(base)
    assert (cfg.election_timeout_ms, cfg.fetch_timeout_ms, cfg.request_timeout_ms,
            cfg.fetch_max_wait_ms, cfg.pre_vote, cfg.check_quorum) == (1000, 2000, 2000, 500, True, True)
    with pytest.raises(ConfigError, match="controller.quorum.voters: malformed entry 'x'"):
        parse_config(base.replace("1@h:9093", "x"))
    with pytest.raises(ConfigError, match="controller.quorum.fetch.timeout.ms"):
        parse_config(base + "controller.quorum.fetch.timeout.ms=soon\n")
    with pytest.raises(ConfigError, match="unknown unsafe switch bogus"):
        parse_config(base + "unsafe=bogus\n")
    with pytest.raises(ConfigError, match="fetch.max.records: must be at least 1, got 0"):
        parse_config(base + "fetch.max.records=0\n")
    with pytest.raises(ConfigError, match="missing required key log.dir"):
        parse_config(base.replace("log.dir=/tmp/x\n", ""))


def test_quorum_elects_commits_and_fails_over(tmp_path):
    async def run():
        nodes = [await Running(c).start() for c in make_configs(tmp_path, 3)]
        leader = await wait_for_leader(nodes)
        port = leader.cfg.listen_port
        c = KraftClient("127.0.0.1", port, CLUSTER_ID)
        acked = [await c.append(i) for i in range(20)]
        assert [o for o, _ in acked] == list(range(1, 21))
        read = await c.read(0)
        assert [r[3] for r in read["records"][1:]] == list(range(20))
        assert read["records"][0][2] == "LeaderChange"
        await c.close()
        # a follower refuses a linearizable read, with a leader hint
        follower = next(r for r in nodes if r is not leader)
        fc = KraftClient("127.0.0.1", follower.cfg.listen_port, CLUSTER_ID)
        with pytest.raises(DefiniteError) as e:
            await fc.read(0)
        assert e.value.code == "NOT_LEADER_OR_FOLLOWER" and e.value.leader_id == leader.cfg.node_id
        await fc.close()
        # crash the leader: a new one is elected in a higher epoch and keeps every acked record
        old_epoch = leader.node.epoch
        await leader.crash()
        new = await wait_for_leader(nodes, exclude=(leader,))
        assert new.node.epoch > old_epoch
        c2 = KraftClient("127.0.0.1", new.cfg.listen_port, CLUSTER_ID)
        offset, epoch = await c2.append("after failover")
        read = await c2.read(0)
        values = {r[0]: r[3] for r in read["records"] if r[2] == "data"}
        assert all(values[o] == i for i, (o, _) in enumerate(acked))
        assert values[offset] == "after failover" and epoch == new.node.epoch
        await c2.close()
        # the old leader restarts Resigned in its epoch, then follows the new leader
        restarted = await Running(leader.cfg).start()
        assert restarted.node.kind.value == "Resigned" and restarted.node.epoch == old_epoch
        for _ in range(200):
            if restarted.node.kind.value == "Follower" and restarted.node.hw >= offset + 1:
                break
            await asyncio.sleep(0.02)
        assert restarted.node.kind.value == "Follower" and restarted.node.hw >= offset + 1
        for n in [r for r in nodes if r is not leader] + [restarted]:
            await n.crash()

    asyncio.run(run())


def test_check_quorum_resigns_a_cut_off_leader(tmp_path):
    async def run():
        nodes = [await Running(c).start() for c in make_configs(tmp_path, 3)]
        leader = await wait_for_leader(nodes)
        for r in nodes:
            if r is not leader:
                await r.crash()
        for _ in range(100):       # 1.5 x fetch timeout = 450 ms
            if leader.node.kind.value != "Leader":
                break
            await asyncio.sleep(0.02)
        assert leader.node.kind.value == "Resigned"
        await leader.crash()

    asyncio.run(run())


def test_format_command_takes_a_cluster_id_starting_with_a_dash(tmp_path, capsys):
    from kraft.__main__ import main
    from kraft.storage.meta import read_meta
    assert main(["format", "--cluster-id=-JVXHGR4SRM540QbhjbOwQ", "--node-id", "3",
                 "--data-dir", str(tmp_path / "d")]) == 0
    assert read_meta(tmp_path / "d").cluster_id == "-JVXHGR4SRM540QbhjbOwQ"
    assert main(["format", "--cluster-id=x", "--node-id", "3", "--data-dir", str(tmp_path / "d")]) == 2
    assert "already formatted" in capsys.readouterr().err


def test_client_errors_are_definite_only_when_nothing_was_sent(tmp_path):
    from kraft.wire.client import IndefiniteError
    from tests.kraft_inproc import free_ports

    async def run():
        closed = KraftClient("127.0.0.1", free_ports(1)[0], CLUSTER_ID, timeout_ms=500)
        with pytest.raises(DefiniteError) as e:          # connection refused: never sent
            await closed.append(1)
        assert e.value.code == "connection"

        async def silent(reader, writer):                # accepts, reads, never answers
            await reader.read(1 << 16)
        server = await asyncio.start_server(silent, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        mute = KraftClient("127.0.0.1", port, CLUSTER_ID, timeout_ms=300)
        with pytest.raises(IndefiniteError) as e:        # sent, no answer: outcome unknown
            await mute.append(1)
        assert e.value.code == "timeout"
        server.close()
        await mute.close()

    asyncio.run(run())


def test_a_crashed_node_answers_nothing_even_on_a_connection_served_late(tmp_path):
    """A connection accepted just before close() has a handler that starts after it
    (so close() cannot cancel it). It must be closed unanswered: a node that went on
    serving Fetch from such a connection kept its followers from electing anyone."""
    async def run():
        node = await Running(make_configs(tmp_path, 1)[0]).start()
        await wait_for_leader([node])
        await node.crash()
        reader = asyncio.StreamReader()
        reader.feed_data(frames.encode({"ApiKey": api.APPEND, "CorrelationId": 1,
                                      "Body": {"ClusterId": CLUSTER_ID, "Value": "late"}}))
        reader.feed_eof()

        class Writer:
            written, closed = b"", False

            def get_extra_info(self, _):
                return ("127.0.0.1", 1)

            def write(self, data):
                self.written += data

            async def drain(self):
                pass

            def close(self):
                self.closed = True

        w = Writer()
        await node.server._serve(reader, w)
        assert w.closed and w.written == b""
        assert node.node.log.end_offset == 1         # only the leader's LeaderChange record
        with pytest.raises(Refused) as e:           # the node itself refuses too
            await node.node.append_and_commit("late")
        assert e.value.body["ErrorCode"] == errors.NOT_LEADER_OR_FOLLOWER

    asyncio.run(run())
