"""The election timer of an Unattached or Candidate voter keeps running when a
higher epoch arrives (Kafka's QuorumState keeps the remaining election time).

Regression test: ``become_unattached`` used to restart the timer on every
epoch bump. Without Pre-Vote, a lagging voter that stands for election again
and again (and always loses, its log being behind) then bumped the up-to-date
voters' epoch each time and restarted their timers, so none of them ever
stood: the quorum stayed leaderless for as long as the laggard kept trying.
"""
import asyncio
import dataclasses

from kraft.wire.client import KraftClient
from tests.kraft_inproc import CLUSTER_ID, Partition, Running, make_configs, wait_for_leader


async def leaderless_with_a_campaigning_laggard(tmp_path) -> tuple[int, int]:
    """3 voters without Pre-Vote; C is cut off while the leader commits, then
    the leader dies and C, behind, rejoins B. Returns (B's node id, the id of
    the leader elected among B and C)."""
    part = Partition()
    nodes = [await Running(c, part).start() for c in make_configs(tmp_path, 3, pre_vote=False)]
    try:
        leader = await wait_for_leader(nodes)
        b, c = [r for r in nodes if r is not leader]
        # C stands again every 150-300 ms; B's own timer is 400-800 ms, so B
        # only stands if its timer survives C's epoch bumps.
        b.node.cfg = dataclasses.replace(b.node.cfg, election_timeout_ms=400)
        part.isolate(c.node.id, [leader.node.id, b.node.id])
        client = KraftClient("127.0.0.1", leader.cfg.listen_port, CLUSTER_ID)
        for i in range(5):
            await client.append(f"while C is cut off {i}")
        await client.close()
        await asyncio.sleep(1.0)              # C keeps standing, epoch after epoch
        await leader.crash()
        part.heal()
        # Only B can win: C's log is behind B's. B must stand, though C's
        # Vote requests keep raising its epoch.
        elected = await wait_for_leader([b, c], timeout_s=10.0)
        return b.node.id, elected.node.id
    finally:
        for r in nodes:
            await r.crash()


def test_an_up_to_date_voter_stands_although_a_laggard_keeps_raising_the_epoch(tmp_path):
    b_id, elected_id = asyncio.run(leaderless_with_a_campaigning_laggard(tmp_path))
    assert elected_id == b_id


def _unattached_core(unsafe=()):
    """A 3-voter core (node 1, no Pre-Vote) just started: Unattached with an election timer."""
    import random

    from kraft.core.record_log import RecordLog
    from kraft.core.states import ElectionState
    from kraft.core.unsafe import Unsafe
    from kraft.quorum import QuorumConfig, QuorumCore
    from kraft.rules.voter_set import VoterHistory, VoterNode, VoterSet

    now = [0.0]
    voters = VoterSet(tuple(VoterNode(i, None, f"n{i}", 9093) for i in (1, 2, 3)))
    cfg = QuorumConfig(1, None, pre_vote=False, unsafe=Unsafe.of(unsafe))
    core = QuorumCore(cfg, RecordLog([]), VoterHistory(voters, 0), clock=lambda: now[0],
                      rng=random.Random(7), wall_clock=lambda: int(now[0]))
    core.start(ElectionState())
    return core, now


def test_a_higher_epoch_keeps_an_unattached_voters_timer_and_the_switch_restarts_it():
    from kraft.quorum.timer_keys import TimerKey

    for unsafe, kept in (((), True), (("reset-election-timer",), False)):
        core, now = _unattached_core(unsafe)
        s = core.state
        first = s.deadline(TimerKey.ELECTION)
        assert first is not None and first >= 1000.0
        now[0] = 900.0                       # a laggard's Vote of a higher epoch arrives
        core.call(core.become_unattached, s.election.epoch + 1)
        again = s.deadline(TimerKey.ELECTION)
        assert (again == first) is kept, (unsafe, first, again)
        if not kept:
            assert again >= 900.0 + 1000.0   # restarted: the voter waits a whole timeout again
