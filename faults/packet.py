"""The ``packet`` family: delay, loss, duplication and reordering on the links from the
targets (``tc netem``, or a userspace shaper where the kernel has none: nemesis/packet.py,
nemesis/packet_faults.py)."""
from __future__ import annotations

import random

from faults.spec import FaultSpec, SimHooks, SimStart, SimWorld

KINDS = ("delay", "loss", "duplicate", "reorder", "mixed")
#: the kinds the simulator draws
SIM_KINDS = ("delay", "loss", "duplicate", "reorder")
#: the settings a scenario replays as they were drawn
SETTINGS = ("delay_ms", "jitter_ms", "loss_pct", "duplicate_pct")


def _sim_draw(kind: str, rng: random.Random) -> dict:
    """The simulator's settings of ``kind``, and ``all_links``: every node's links, not only
    the target's."""
    if kind == "delay":
        p = {"delay_ms": rng.choice((20, 100, 400, 1500)), "jitter_ms": rng.choice((0, 50, 300))}
    elif kind == "loss":
        p = {"loss_pct": rng.choice((10, 30, 60))}
    elif kind == "duplicate":
        p = {"duplicate_pct": rng.choice((10, 30, 60))}
    else:
        p = {"delay_ms": rng.choice((5, 50, 200)), "jitter_ms": rng.choice((100, 500, 2000))}
    p["all_links"] = rng.random() < 0.3
    return p


def _sim_start(world: SimWorld, fault, started: SimStart) -> None:
    links = [(a, b) for a in started.targets for b in started.pool if a != b]
    world.shape(links, fault.param("delay_ms", 0), fault.param("jitter_ms", 0),
                fault.param("loss_pct", 0) / 100, fault.param("duplicate_pct", 0) / 100)


def _sim_stop(world: SimWorld, fault, targets: list[int]) -> None:
    world.heal_packets()


def _export_params(params: dict) -> dict:
    return {k: v for k, v in params.items() if k in SETTINGS}


SPEC = FaultSpec(
    "packet", KINDS, takes_down=True,
    sim=SimHooks(2, SIM_KINDS, _sim_start, _sim_stop, draw=_sim_draw, export_params=_export_params))
