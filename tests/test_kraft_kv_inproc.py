"""The key-value API through a real in-process quorum on loopback (kraft/runtime/kv_service.py).

put/get/cas over TCP with KraftClient; every node's state machine converges;
restarted nodes rebuild their state from the log; a leader cut off from the
majority cannot serve a get (read-index), unless ``no-read-index`` is on.
"""
import asyncio

import pytest

from kraft.core import errors
from kraft.runtime.raft import RaftNode
from kraft.storage.meta import read_meta
from kraft.wire.client import ClientError, DefiniteError, IndefiniteError, KraftClient
from tests.kraft_inproc import CLUSTER_ID, Partition, Running, make_configs, wait_for_leader


def client(r: Running, timeout_ms: int = 3000) -> KraftClient:
    return KraftClient("127.0.0.1", r.cfg.listen_port, CLUSTER_ID, timeout_ms=timeout_ms)


async def converged(nodes: list[Running], timeout_s: float = 5.0) -> list[dict]:
    """Wait until every node has applied the leader's whole log; returns their snapshots."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        end = max(r.node.log.end_offset for r in nodes)
        if all(r.node.kv.applied == end for r in nodes) or loop.time() > deadline:
            return [r.node.kv.snapshot() for r in nodes]
        await asyncio.sleep(0.02)


async def stop_all(nodes):
    for r in nodes:
        try:
            await r.crash()
        except Exception:
            pass


def test_put_get_cas_through_a_real_quorum(tmp_path):
    async def run():
        nodes = [await Running(c).start() for c in make_configs(tmp_path, 3)]
        try:
            leader = await wait_for_leader(nodes)
            c = client(leader)
            assert (await c.get("k0"))["value"] is None              # never written
            w = await c.put("k0", 1)
            assert w["epoch"] == leader.node.epoch and w["offset"] > 0
            got = await c.get("k0")                                  # a get after a committed put sees it
            assert got["value"] == 1 and got["applied_offset"] > w["offset"]
            ok = await c.cas("k0", 1, 2)
            assert ok["succeeded"] is True and ok["previous"] == 1 and ok["offset"] == w["offset"] + 1
            miss = await c.cas("k0", 1, 3)
            assert miss["succeeded"] is False and miss["previous"] == 2
            assert (await c.get("k0"))["value"] == 2
            assert (await c.cas("k1", None, 7))["succeeded"] is True
            await c.put("k0", None)
            assert (await c.get("k0"))["value"] is None
            follower = next(r for r in nodes if r is not leader)
            fc = client(follower)
            for call in (fc.put("k0", 9), fc.cas("k0", None, 9), fc.get("k0")):
                with pytest.raises(DefiniteError) as e:
                    await call
                assert e.value.code == "NOT_LEADER_OR_FOLLOWER"
                assert e.value.leader_id == leader.node.id           # the hint, as for Append
            await fc.close()
            await c.close()
            # the same state on every node, decided independently by each
            snaps = await converged(nodes)
            assert snaps == [{"k0": None, "k1": 7}] * 3
        finally:
            await stop_all(nodes)

    asyncio.run(run())


def test_restarted_nodes_rebuild_their_state_from_the_log(tmp_path):
    async def run():
        cfgs = make_configs(tmp_path, 3)
        nodes = [await Running(c).start() for c in cfgs]
        try:
            leader = await wait_for_leader(nodes)
            c = client(leader)
            for i in range(20):
                await c.put(f"k{i % 4}", i)
                await c.cas(f"k{i % 4}", i, i * 10)
            await c.close()
            before = await converged(nodes)
            assert before[0] == {"k0": 160, "k1": 170, "k2": 180, "k3": 190}
            # one follower restarts: empty at first, then the committed prefix is replayed
            follower = next(r for r in nodes if r is not leader)
            await follower.crash()
            probe = RaftNode(follower.cfg, read_meta(follower.cfg.data_dir))
            await probe.start()                      # the log is there; the state is not persisted
            assert probe.log.end_offset > 40 and probe.kv.applied == 0 and probe.kv.snapshot() == {}
            await probe.close()
            i = nodes.index(follower)
            nodes[i] = await Running(follower.cfg).start()
            assert (await converged(nodes)) == before
            # the whole quorum restarts
            for r in nodes:
                await r.crash()
            nodes[:] = [await Running(c).start() for c in cfgs]
            leader = await wait_for_leader(nodes)
            c = client(leader)
            assert (await c.get("k2"))["value"] == 180
            assert (await c.cas("k2", 180, 1))["succeeded"] is True
            await c.close()
            after = await converged(nodes)
            assert after == [{**before[0], "k2": 1}] * 3
        finally:
            await stop_all(nodes)

    asyncio.run(run())


async def partitioned_old_leader_get(tmp_path, unsafe=frozenset()):
    """Put k=1, cut the leader off (check quorum off, so it keeps believing it leads),
    put k=2 through the new leader, then get k on the old leader. Returns
    (the old leader's answer or the ClientError, the new leader's answer)."""
    part = Partition()
    cfgs = make_configs(tmp_path, 3, check_quorum=False, unsafe=frozenset(unsafe))
    nodes = [await Running(c, part).start() for c in cfgs]
    try:
        old = await wait_for_leader(nodes)
        c = client(old)
        await c.put("k", 1)
        await converged(nodes)
        part.isolate(old.node.id, [r.node.id for r in nodes if r is not old])
        new = await wait_for_leader(nodes, exclude=[old])
        assert new.node.epoch > old.node.epoch and old.node.kind.value == "Leader"
        nc = client(new)
        await nc.put("k", 2)
        fresh = await nc.get("k")
        await nc.close()
        try:
            stale = await c.get("k")
        except ClientError as e:
            stale = e
        await c.close()
        return stale, fresh
    finally:
        await stop_all(nodes)


def test_a_partitioned_old_leader_cannot_serve_a_get(tmp_path):
    stale, fresh = asyncio.run(partitioned_old_leader_get(tmp_path))
    assert fresh["value"] == 2
    assert isinstance(stale, IndefiniteError) and stale.code == errors.name(errors.REQUEST_TIMED_OUT)


def test_without_read_index_the_old_leader_serves_a_stale_get(tmp_path):
    stale, fresh = asyncio.run(partitioned_old_leader_get(tmp_path, {"no-read-index"}))
    assert fresh["value"] == 2
    assert stale["value"] == 1          # the bug no-read-index brings back
