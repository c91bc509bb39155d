"""The ``flap`` family's injector: a fresh partition of the fault's kind every ``period_ms``
(default :data:`FLAP_PERIOD_MS`), healed between, in a thread of its own
(:class:`nemesis.background.Flapper`) until the fault stops. A leader-aimed kind asks for the
leader at every cut, so the controller does not wait for one first."""
from __future__ import annotations

import random

from faults.flap import SPEC
from faults.spec import EXPLICIT
from nemesis.background import Flapper
from nemesis.injector import Injector
from nemesis.partition import heal_slot

#: ms each cut lasts, and each heal between
FLAP_PERIOD_MS = 300


def _start(ctl, fault, value: dict, waited) -> bool:
    period = float(fault.params.get("period_ms", FLAP_PERIOD_MS)) / 1000.0
    if fault.kind == EXPLICIT:
        ctl.grudge(EXPLICIT, fault.targets)     # bad targets fail the start, not the thread
    value.update(targets=ctl.nodes, period_ms=int(period * 1000))
    ctl.hold(fault, ctl.nodes)
    rng = random.Random(ctl.rng.getrandbits(64))     # the flapper's thread draws alone
    ctl.run_background(fault, Flapper(ctl.partitioner, lambda: ctl.grudge(fault.kind, fault.targets, rng)[0],
                                      period, fault.key))
    return False


INJECTOR = Injector(SPEC, _start, heal_slot, awaits_leader=False)
