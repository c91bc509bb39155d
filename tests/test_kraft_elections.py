"""Elections in a real in-process quorum: Pre-Vote keeps a rejoining node from
disrupting a stable leader (KIP-996), and a graceful resignation hands over
at once through EndQuorumEpoch (KIP-595)."""
import asyncio
import dataclasses

from kraft.wire.client import KraftClient
from tests.kraft_inproc import CLUSTER_ID, Partition, Running, make_configs, wait_for_leader


async def isolate_then_rejoin(tmp_path, **overrides):
    """Isolate a follower for 10 fetch timeouts, heal, append; returns
    (leader epoch before, leader epoch after, the follower's epoch while cut
    off, the states the follower went through)."""
    part = Partition()
    nodes = [await Running(c, part).start() for c in make_configs(tmp_path, 3, **overrides)]
    leader = await wait_for_leader(nodes)
    lone = next(r for r in nodes if r is not leader)
    before = leader.node.epoch
    states = []
    lone.node.state_listeners.append(lambda change: states.append(change.kind.value))
    part.isolate(lone.node.id, [r.node.id for r in nodes if r is not lone])
    await asyncio.sleep(3.0)                         # fetch timeout is 300 ms
    cut_off_epoch = lone.node.epoch
    part.heal()
    await asyncio.sleep(1.0)
    final = await wait_for_leader(nodes)
    c = KraftClient("127.0.0.1", final.cfg.listen_port, CLUSTER_ID)
    await c.append("after heal")
    await c.close()
    after = final.node.epoch
    for r in nodes:
        await r.crash()
    return before, after, cut_off_epoch, states


def test_pre_vote_keeps_a_rejoining_node_from_disrupting_the_leader(tmp_path):
    before, after, cut_off, states = asyncio.run(isolate_then_rejoin(tmp_path))
    assert "Prospective" in states and "Candidate" not in states
    assert cut_off == before          # pre-votes never bump the epoch
    assert after == before            # the leader survived the rejoin


def test_without_pre_vote_a_rejoining_node_forces_new_elections(tmp_path):
    before, after, cut_off, states = asyncio.run(isolate_then_rejoin(tmp_path, pre_vote=False))
    assert "Candidate" in states
    assert cut_off > before + 1       # it kept standing for election on its own
    assert after > before             # and its higher epoch deposed the leader on rejoin


def test_graceful_resignation_elects_a_successor_at_once(tmp_path):
    async def run():
        nodes = [await Running(c).start() for c in make_configs(tmp_path, 3)]
        leader = await wait_for_leader(nodes)
        epoch = leader.node.epoch
        # From now on no timer could start an election within the test: only
        # EndQuorumEpoch (the first preferred successor elects at once) can.
        for r in nodes:
            r.node.cfg = dataclasses.replace(r.node.cfg, fetch_timeout_ms=600_000,
                                             election_timeout_ms=600_000, check_quorum=False)
        await asyncio.sleep(0.3)          # every follower fetches once more, re-arming its timer
        leader.node.resign("graceful shutdown")
        new = await wait_for_leader(nodes, timeout_s=10, exclude=(leader,))
        assert new.node.epoch == epoch + 1
        for r in nodes:
            await r.crash()

    asyncio.run(run())
