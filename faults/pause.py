"""The ``pause`` family: SIGSTOP of one node, a minority or the leader, SIGCONT when the fault
stops (nemesis/pause.py)."""
from __future__ import annotations

from faults.kill import LOCATED_KINDS, PROCESS_KINDS
from faults.spec import FaultSpec, SimHooks, SimStart, SimWorld


def _sim_start(world: SimWorld, fault, started: SimStart) -> None:
    for t in started.targets:
        world.pause_node(t)


def _sim_stop(world: SimWorld, fault, targets: list[int]) -> None:
    for t in targets:
        world.resume_node(t)


SPEC = FaultSpec(
    "pause", PROCESS_KINDS, leader_kinds=("leader",), takes_down=True, located=LOCATED_KINDS, colour="#A0C5E9",
    sim=SimHooks(1, ("one", "leader"), _sim_start, _sim_stop))
