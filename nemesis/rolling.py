"""The ``rolling`` family's injector: every target (default: every node the nemesis touches)
SIGKILLed and restarted in turn, ``gap_s`` apart (default :data:`ROLLING_GAP_S`), in a thread of
its own (:class:`nemesis.background.RollingRestart`) until the fault stops; the stop starts
any target still down."""
from __future__ import annotations

import random

from faults.rolling import SPEC
from faults.spec import EXPLICIT
from nemesis.background import RollingRestart
from nemesis.injector import Injector
from nemesis.kill import restart_stop

#: s between one node's restart and the next one's kill
ROLLING_GAP_S = 0.5


def _start(ctl, fault, value: dict, waited) -> bool:
    gap = float(fault.params.get("gap_s", ROLLING_GAP_S))
    if fault.kind == EXPLICIT:
        targets = ctl.process_targets(fault)[0]     # checked: bad targets fail the start
    else:
        targets = list(fault.targets) if fault.targets else ctl.nodes
    value.update(targets=targets, gap_s=gap)
    ctl.hold(fault, targets)
    rng = random.Random(ctl.rng.getrandbits(64))
    ctl.run_background(fault, RollingRestart(ctl.db, targets, gap, rng, fault.key))
    return False


INJECTOR = Injector(SPEC, _start, restart_stop)
