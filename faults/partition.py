"""The ``partition`` family: iptables DROP inside the nodes (nemesis/partition.py), cutting who
hears whom. Its value's ``grudge`` (``{node: [nodes it drops packets from]}``) says who could
not talk; which grudge each kind draws on a real cluster is nemesis/partition_kinds.py's, in
the simulator :func:`sim_grudge`'s."""
from __future__ import annotations

import random
from typing import Callable

from faults.spec import FaultSpec, SimHooks, SimStart, SimWorld

KINDS = ("random-halves", "isolate-one", "isolate-leader", "leader-minority", "majorities-ring", "bridge",
         "one-way-leader", "one-way-one", "leader-diamond", "diamond")
LEADER_KINDS = ("isolate-leader", "leader-minority", "one-way-leader", "leader-diamond")
#: the kinds that need three nodes or more (``majorities-ring``: exactly five)
THREE_OR_MORE = ("bridge", "diamond", "leader-diamond", "leader-minority")
#: the kinds the simulator draws
SIM_KINDS = ("isolate-one", "isolate-leader", "random-halves", "one-way-one", "one-way-leader", "bridge", "diamond")


def usable(kind: str, n_nodes: int) -> bool:
    """Partitions need 2 nodes or more; ``majorities-ring`` exactly 5, ``bridge``,
    ``leader-minority`` and the diamonds 3 or more (flaps likewise)."""
    if n_nodes < 2:
        return False
    return not (kind == "majorities-ring" and n_nodes != 5) and not (kind in THREE_OR_MORE and n_nodes < 3)


def sim_grudge(kind: str, pool: list[int], target: int, pick: int) -> dict[int, list[int]]:
    """The simulator's grudge of ``kind`` over ``pool`` around ``target`` (the node the kind
    aims at), drawn from ``Random(pick + 1)``."""
    rng = random.Random(pick + 1)
    others = [i for i in pool if i != target]
    if kind in ("isolate-one", "isolate-leader"):
        g = {o: [target] for o in others}
        g[target] = others
        return g
    if kind in ("one-way-one", "one-way-leader"):
        return {o: [target] for o in others}
    shuffled = rng.sample(pool, len(pool))
    if kind == "diamond":
        a, b = shuffled[:2]
        return {a: [b], b: [a]}
    if kind == "bridge" and len(pool) >= 3:
        rest = shuffled[1:]
        left, right = rest[:len(rest) // 2], rest[len(rest) // 2:]
    else:                                  # random-halves
        left, right = shuffled[:len(pool) // 2], shuffled[len(pool) // 2:]
    g = {a: list(right) for a in left}
    g.update({b: list(left) for b in right})
    return g


def _sim_start(world: SimWorld, fault, started: SimStart) -> None:
    g = sim_grudge(fault.kind, started.pool, started.targets[0], fault.param("pick", 0))
    world.cut(g)
    started.value["grudge"] = {world.name(k): [world.name(v) for v in vs] for k, vs in sorted(g.items())}
    started.landed["grudge"] = g


def _sim_stop(world: SimWorld, fault, targets: list[int]) -> None:
    world.heal_cuts()


def _export_nodes(applied: dict, names: Callable[[list[int]], list[str]]) -> dict:
    """A landed partition as its grudge, by role names."""
    return {"kind": "nodes", "grudge": {names([d])[0]: names(s) for d, s in sorted(applied["grudge"].items())}}


SPEC = FaultSpec(
    "partition", KINDS, leader_kinds=LEADER_KINDS, usable=usable, cuts=True, colour="#C5A0AF",
    sim=SimHooks(5, SIM_KINDS, _sim_start, _sim_stop, export_nodes=_export_nodes))
