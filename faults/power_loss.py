"""The ``power-loss`` family (what Jepsen's lazyfs does): SIGKILL, then each target's disk
drops what it had not synced, optionally with a torn last write and lost renames; restarted
when the fault stops (nemesis/power_loss.py). A run that names it mounts the nodes' lazyfs
disks (harness/run/disks.py)."""
from __future__ import annotations

import random

from faults.kill import sim_restart_nodes, sim_stop_nodes
from faults.spec import FaultSpec, SimHooks, SimStart, SimWorld

#: who loses power: like a kill, or every node at once
KINDS = ("one", "minority", "leader", "majority", "all")


def _sim_start(world: SimWorld, fault, started: SimStart) -> None:
    sim_stop_nodes(world, fault, started, power_loss=True)


def _sim_draw(kind: str, rng: random.Random) -> dict:
    return {"torn": rng.random() < 0.5}


def _export_params(params: dict) -> dict:
    return {"torn": bool(params.get("torn"))}


SPEC = FaultSpec(
    "power-loss", KINDS, leader_kinds=("leader",), takes_down=True, needs_disks=True,
    sim=SimHooks(2, ("one", "leader", "majority", "all"), _sim_start, sim_restart_nodes, draw=_sim_draw,
                 export_params=_export_params))
