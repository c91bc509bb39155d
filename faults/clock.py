"""The ``clock`` family, the simulator's alone: one node's wall clock jumps by ``offset_ms``
and is set right when the fault stops. No real nemesis plays it, so an exported scenario
leaves it out and says so."""
from __future__ import annotations

import random

from faults.spec import FaultSpec, SimHooks, SimStart, SimWorld


def _sim_draw(kind: str, rng: random.Random) -> dict:
    return {"offset_ms": rng.choice((-1, 1)) * rng.choice((500, 5000, 60000, 3600000))}


def _sim_start(world: SimWorld, fault, started: SimStart) -> None:
    for t in started.targets:
        world.shift_clock(t, fault.param("offset_ms", 0))


def _sim_stop(world: SimWorld, fault, targets: list[int]) -> None:
    for t in targets:
        world.reset_clock(t)


def _left_out(applied: dict, names: list[str], params: dict) -> str:
    return (f"clock jump of {', '.join(names)} by {params.get('offset_ms')} ms at {applied['at_ms'] / 1000:.3f} s "
            f"(no real clock nemesis)")


SPEC = FaultSpec("clock", (), sim=SimHooks(1, ("one",), _sim_start, _sim_stop, draw=_sim_draw, left_out=_left_out))
