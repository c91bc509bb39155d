"""The ``wipe`` family: a disk failure of one node, a minority or the leader (SIGKILL, its data
deleted, formatted again with a fresh directory id), restarted when the fault stops
(nemesis/wipe.py). At kraft.version 1 random wipes keep a majority of the voter keys alive
(they count them with the leader's help, so they wait for one), and with voter changes in the
schedule the wiped voters are replaced after (nemesis/windows.py)."""
from __future__ import annotations

from faults.kill import PROCESS_KINDS
from faults.spec import FaultSpec, SimHooks, SimStart, SimWorld

#: the value's ``wipe_skipped`` when the simulator refuses a wipe
KEEP_MAJORITY = "a majority of the voters' disks must stay intact"


def _sim_start(world: SimWorld, fault, started: SimStart) -> None:
    if not world.may_wipe(started.targets[0]):
        started.value["wipe_skipped"] = KEEP_MAJORITY
        started.targets = []
        return
    started.value["wiped"] = {}
    for t in started.targets:
        started.value["wiped"][world.name(t)] = world.wipe_node(t)


def _sim_stop(world: SimWorld, fault, targets: list[int]) -> None:
    for t in targets:
        world.restart_node(t)
        if world.kraft_version:
            world.replace_voter(t)     # at once: the old key must not look like a live voter


SPEC = FaultSpec(
    "wipe", PROCESS_KINDS, leader_kinds=("leader",), needs_leader_at_kv1=True, asked_first=True,
    takes_down=True, wipes_disks=True,
    sim=SimHooks(1, ("one", "leader"), _sim_start, _sim_stop, kraft_v1_only=True, quorum_only=True))
