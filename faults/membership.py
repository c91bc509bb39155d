"""The ``membership`` family: KIP-853 voter changes, RemoveRaftVoter and AddRaftVoter
(nemesis/membership.py), at kraft.version 1 only. Every one is asked of the leader, so every
kind waits for one; a removal's stop adds the node back once it caught up. Kind ``nodes``
takes an ``action`` param (``remove``, ``add``, ``replace``). In the simulator the voter
changes go through its admin (sim/admin.py), which records them."""
from __future__ import annotations

from typing import Callable

from faults.spec import FaultSpec, SimHooks, SimStart, SimWorld

KINDS = ("remove", "remove-leader", "replace")


def _sim_start(world: SimWorld, fault, started: SimStart) -> None:
    if world.voter_change_busy():
        started.targets = []                  # one voter change at a time, as the real nemesis
    else:
        world.remove_voter(started.targets[0])


def _sim_stop(world: SimWorld, fault, targets: list[int]) -> None:
    if targets:
        world.add_back_voter(targets[0])


def _export_nodes(applied: dict, names: Callable[[list[int]], list[str]]) -> dict:
    return {"kind": "nodes", "targets": names(applied["targets"]), "action": "remove"}


SPEC = FaultSpec(
    "membership", KINDS, needs_leader=True, asked_first=True, takes_down=True, voter_changes=True,
    sim=SimHooks(2, ("remove", "remove-leader"), _sim_start, _sim_stop, kraft_v1_only=True, quorum_only=True,
                 aims_at_leader=("remove-leader",), records=False, export_nodes=_export_nodes))
