"""The simulator's disk (lazyfs power-loss semantics) and network (cuts, packet faults)."""
from __future__ import annotations

import random

from kraft.core.records import DATA, Record
from kraft.rules.voter_set import VoterSet
from sim.disk import LogFile, SimDisk
from sim.network import LinkFault, Network


def recs(start: int, n: int) -> list[Record]:
    return [Record(o, 1, DATA, o) for o in range(start, start + n)]


def test_power_loss_keeps_only_what_an_fsync_covered():
    f = LogFile()
    f.write(recs(0, 3))
    f.sync(3)
    f.synced()
    f.write(recs(3, 2))
    f.sync(5)                      # in flight: not durable yet
    assert f.crash(None) == 2
    assert [r.offset for r in f.records] == [0, 1, 2] and f.durable == 3


def test_torn_write_keeps_a_strict_prefix_of_the_newest_unsynced_write_only():
    kept = set()
    for seed in range(40):
        f = LogFile()
        f.write(recs(0, 2))
        f.sync(2)
        f.synced()
        f.write(recs(2, 5))
        f.crash(random.Random(seed))
        kept.add(len(f.records))
    assert kept <= {2, 3, 4, 5, 6} and len(kept) > 2      # 0..4 of the 5 unsynced records survive
    f = LogFile()
    f.write(recs(0, 2))
    f.write(recs(2, 2))            # two unsynced writes: a torn tail cannot bridge the first
    f.sync(4)
    f.crash(random.Random(1))
    assert f.records == []


def test_a_torn_record_stays_on_disk_until_recovery_cuts_it():
    disk = SimDisk(None)
    f = disk.log(None)
    f.write(recs(0, 2))
    f.sync(2)
    f.synced()
    f.write(recs(2, 3))
    f.crash(random.Random(3))
    kept = len(f.records)
    assert f.torn == kept and 2 <= kept < 5                        # a record cut in two follows the kept ones
    assert disk.contents(VoterSet()).torn > 0 and disk.contents(VoterSet()).records == f.records
    disk.recovered(cut_torn_tail=False)                           # left there: what follows it is unreadable
    f.write(recs(kept, 2))
    assert f.readable() == f.records[:kept] and disk.contents(VoterSet()).records == f.records[:kept]
    f.truncate(kept + 1)                                          # a cut after the torn record keeps it
    assert f.torn == kept
    disk.recovered(cut_torn_tail=True)
    assert f.torn is None and len(f.records) == kept and disk.contents(VoterSet()).torn == 0
    f.torn = kept                                                 # torn again: a cut before it removes it
    f.truncate(kept - 1)
    assert f.torn is None and len(f.records) == kept - 1


def test_truncation_caps_fsyncs_in_flight():
    f = LogFile()
    f.write(recs(0, 4))
    f.sync(4)
    f.truncate(2)
    f.synced()
    assert f.durable == 2 and len(f.records) == 2


def test_kill_keeps_the_page_cache_and_wipe_forgets_everything():
    d = SimDisk("d1.0")
    d.log(None).write(recs(0, 3))
    d.recover()                    # a restart after SIGKILL: the page cache was written back
    assert d.log(None).durable == 3
    d.hw[("t", 0)] = 2
    d.wipe("d1.1")
    assert d.logs == {} and d.hw == {} and d.directory_id == "d1.1" and d.generation == 1


def test_network_cuts_are_directed_and_packet_faults_drop_and_duplicate():
    net = Network(random.Random(3))
    net.grudge({2: [1]})           # 2 drops what 1 sends: a one-way partition
    assert net.fate(1, 2) == (None, None)
    assert net.fate(2, 1)[0] is not None
    net.heal_cuts()
    net.shape([(1, 2)], LinkFault(loss=1.0))
    assert net.fate(1, 2)[0] is None
    net.shape([(1, 2)], LinkFault(delay_ms=100.0, duplicate=1.0))
    delay, copy = net.fate(1, 2)
    assert delay >= 100.0 and copy is not None
