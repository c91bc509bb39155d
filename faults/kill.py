"""The ``kill`` family: SIGKILL of one node, a minority or the leader, restarted when the fault
stops (nemesis/kill.py)."""
from __future__ import annotations

from faults.spec import FaultSpec, SimHooks, SimStart, SimWorld

#: how the targets are chosen (nemesis/targets.py): also ``pause``'s and ``wipe``'s
PROCESS_KINDS = ("one", "minority", "leader")
#: the data plane's roles a kill, pause or stop may strike when named (``kill:txn-coordinator``):
#: the broker the target locates (``DB.locate``; Kafka: the leader of the transactional id's
#: ``__transaction_state`` partition, of the group's ``__consumer_offsets`` partition, of a data
#: partition), looked up at the fault's start
LOCATED_KINDS = ("txn-coordinator", "group-coordinator", "partition-leader")


def sim_stop_nodes(world: SimWorld, fault, started: SimStart, power_loss: bool = False) -> None:
    """Stop every target that is up (``power_loss``: its unsynced writes lost, torn per the
    fault's ``torn``); the records each lost go to the value's ``lost_records``."""
    for t in started.targets:
        if world.up(t):
            lost = world.stop_node(t, power_loss=power_loss, torn=bool(fault.param("torn")))
            if lost:
                started.value.setdefault("lost_records", {})[world.name(t)] = lost


def sim_restart_nodes(world: SimWorld, fault, targets: list[int]) -> None:
    """Start again every target the fault stopped."""
    for t in targets:
        world.restart_node(t)


SPEC = FaultSpec(
    "kill", PROCESS_KINDS, leader_kinds=("leader",), takes_down=True, located=LOCATED_KINDS, colour="#E9A4A0",
    sim=SimHooks(2, ("one", "leader", "minority"), sim_stop_nodes, sim_restart_nodes))
