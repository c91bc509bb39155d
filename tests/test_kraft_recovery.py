"""Restart and recovery (kraft/storage/recovery.py): one pure function of the disk's contents,
which the real node (a data dir) and the simulator (a SimDisk) both call."""
from __future__ import annotations

import asyncio
import random

import pytest

from kraft.core.records import DATA, LEADER_CHANGE, Record
from kraft.core.states import ElectionState, StateKind
from kraft.core.unsafe import Unsafe
from kraft.quorum import QuorumConfig
from kraft.rules.voter_set import VoterSet
from kraft.runtime.raft import RaftNode, disk_contents
from kraft.storage.bootstrap import write_bootstrap
from kraft.storage.log import Log, scan_log
from kraft.storage.meta import read_meta
from kraft.storage.quorum_state import write_state
from kraft.storage.recovery import DiskContents, recover, start_quorum
from sim.disk import SimDisk
from sim.quorum_nodes import initial_voters
from tests.kraft_inproc import make_configs

STATIC = initial_voters([1, 2, 3], 0)


def recs(n: int, epoch: int = 1) -> list[Record]:
    return [Record(o, epoch, DATA, o) for o in range(n)]


def contents(records=(), torn=0, election=ElectionState(), bootstrap=None, directory_id=None) -> DiskContents:
    return DiskContents(list(records), torn, election, bootstrap, directory_id, STATIC)


def test_recovery_cuts_a_torn_tail_and_takes_quorum_state_the_voters_and_the_directory_id():
    r = recover(contents(recs(3), torn=17, election=ElectionState(4, 2, 2), directory_id="d1"))
    assert r.cut_torn_tail and [x.offset for x in r.records] == [0, 1, 2]
    assert r.election == ElectionState(4, 2, 2) and r.directory_id == "d1"
    assert r.history.kraft_version == 0 and r.history.latest == STATIC
    assert not recover(contents(recs(3))).cut_torn_tail          # nothing torn, nothing to cut
    # kraft.version 1: the bootstrap checkpoint's voters; without voters, an observer (no voters)
    boot = initial_voters([1, 2, 3], 1)
    assert recover(contents(bootstrap=(1, boot))).history.latest == boot
    observer = recover(contents(bootstrap=(1, None), directory_id="d1.1")).history
    assert observer.kraft_version == 1 and len(observer.latest) == 0
    with pytest.raises(ValueError, match="offset"):
        recover(contents([Record(0, 1, DATA, 0), Record(2, 1, DATA, 2)]))


def test_recover_epoch_from_log_resumes_in_the_logs_epoch_and_forgets_the_newer_vote():
    disk = contents(recs(3, epoch=2), election=ElectionState(5, -1, 3))
    assert recover(disk).election == ElectionState(5, -1, 3)
    assert recover(disk, Unsafe.of(["recover-epoch-from-log"])).election == ElectionState(2)
    same = contents(recs(3, epoch=5), election=ElectionState(5, 1, 1))       # nothing newer: kept
    assert recover(same, Unsafe.of(["recover-epoch-from-log"])).election == ElectionState(5, 1, 1)


def test_the_core_starts_from_what_was_recovered():
    r = recover(contents(recs(4), election=ElectionState(3, 2, 2)))
    core, effects = start_quorum(r, QuorumConfig(1), clock=lambda: 0.0, rng=random.Random(1))
    assert effects and core.state.kind is StateKind.FOLLOWER and core.epoch == 3 and core.leader_id == 2
    assert core.state.log.end_offset == 4 and core.durable_end == 4
    with pytest.raises(ValueError, match="directory id"):
        start_quorum(r, QuorumConfig(1, "d9"), clock=lambda: 0.0, rng=random.Random(1))


def _real_data_dir(cfg, records, garbage: bytes):
    log = Log(cfg.data_dir / "log")
    log.open()
    for r in records:
        log.append(r)
    log.flush()
    log.close()
    (seg,) = (cfg.data_dir / "log").iterdir()
    with open(seg, "ab") as f:
        f.write(garbage)                            # a record cut in two by a power loss
    write_state(cfg.data_dir, ElectionState(3, -1, 2))
    return seg


def test_the_real_node_and_the_simulator_recover_the_same_state(tmp_path):
    cfg = make_configs(tmp_path, 3)[0]
    records = [Record(0, 1, LEADER_CHANGE, {"LeaderId": 1, "Voters": [1, 2, 3], "GrantingVoters": [1, 2]}),
               *[Record(o, 2, DATA, o) for o in range(1, 4)]]
    seg = _real_data_dir(cfg, records, b"\x00\x00\x00\x40\x12")
    meta = read_meta(cfg.data_dir)
    scan = scan_log(cfg.data_dir / "log")
    real = recover(disk_contents(cfg, meta, scan))
    assert scan.torn_bytes == 5 and seg.stat().st_size > scan.positions[-1][1]    # the scan changed nothing

    disk = SimDisk(meta.directory_id)
    f = disk.log(None)
    f.write(records)
    f.sync(4)
    f.synced()
    f.write([Record(4, 2, DATA, 4)])
    assert f.crash(random.Random(0)) == 1 and f.torn == 4      # the newest write torn: a record cut in two
    disk.election = ElectionState(3, -1, 2)
    sim = recover(disk.contents(VoterSet.from_static(cfg.voters)))
    assert (sim.records, sim.cut_torn_tail, sim.election, sim.directory_id) == \
        (real.records, real.cut_torn_tail, real.election, real.directory_id) == (records, True, ElectionState(3, -1, 2),
                                                                                 meta.directory_id)
    assert sim.history.latest == real.history.latest and sim.history.kraft_version == real.history.kraft_version == 0
    disk.recovered(sim.cut_torn_tail)
    assert f.torn is None and f.records == records             # the simulated disk's tail cut as well


def test_the_real_node_starts_from_recovery_and_cuts_the_torn_tail(tmp_path):
    cfg = make_configs(tmp_path, 3)[0]
    records = recs(3)
    seg = _real_data_dir(cfg, records, b"\x00\x00\x00\x40\x12")
    valid = seg.stat().st_size - 5

    async def run():
        node = RaftNode(cfg, read_meta(cfg.data_dir))
        assert node.core is None                    # nothing read before start
        await node.start()
        try:
            assert node.log.recovered_bytes == 5 and seg.stat().st_size == valid
            assert node.core.state.log.records == records and node.epoch == 3
            assert node.core.state.election.voted_id == 2
        finally:
            await node.close()

    asyncio.run(run())


def test_a_bootstrap_checkpoint_makes_the_real_node_start_from_its_voters(tmp_path):
    cfg = make_configs(tmp_path, 3)[0]
    write_bootstrap(cfg.data_dir, 1, None)            # --no-initial-controllers: an observer
    meta = read_meta(cfg.data_dir)
    r = recover(disk_contents(cfg, meta, scan_log(cfg.data_dir / "log")))
    assert r.history.kraft_version == 1 and len(r.history.latest) == 0 and not r.records and not r.cut_torn_tail
