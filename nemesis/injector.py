"""How a fault family is applied to a real cluster and healed: an :class:`Injector`, one per
family (nemesis/registry.py lists them; what the family is, its kinds and what its ops mean,
is its ``faults.spec.FaultSpec``).

An injector's functions receive the :class:`nemesis.controller.NemesisController`, and use
only these parts of it: ``nodes``, ``rng``, ``db`` (the node-process controls), ``disks``
(lazyfs mounts, or None), ``partitioner`` (iptables chains per slot), ``hold(fault,
targets)`` (record the nodes the fault holds, for its stop and ``heal_all``),
``process_targets(fault, waited)``, ``grudge(kind, ...)``, ``run_background(fault, bg)``,
``packet_start(fault)`` and ``packet_stop(slot, targets)``.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

from faults.spec import FaultSpec
from nemesis.faults import Fault
from nemesis.leader_wait import Waited

#: ``start(controller, fault, value, waited) -> leader_unknown``: apply ``fault``, adding what
#: was done to ``value`` (the start op's value, already holding what was asked); ``waited``: the
#: controller's wait for a leader (None when the kind is not aimed at one). True when a
#: leader-aimed kind found no leader and hit a random node.
Start = Callable[[Any, Fault, dict, "Waited | None"], bool]
#: ``stop(controller, fault, targets, out)``: heal ``fault`` on the ``targets`` it held, adding
#: to ``out`` (the stop op's value)
Stop = Callable[[Any, Fault, list, dict], None]


@dataclasses.dataclass(frozen=True)
class Injector:
    """The ``start`` and ``stop`` on a real cluster (see :data:`Start`, :data:`Stop`) of the
    family ``spec`` describes. ``awaits_leader``: the controller waits for a leader (up to its
    ``leader_wait_s``) before a kind aimed at one starts (False: the family finds the leader
    itself, as a flap does on every cut)."""

    spec: FaultSpec
    start: Start
    stop: Stop
    awaits_leader: bool = True

    @property
    def name(self) -> str:
        """The family's name."""
        return self.spec.name


def signal_start(signal: Callable[[Any, Sequence[str]], dict]) -> Start:
    """The start of a process fault: its targets by kind (the leader ``waited`` found for kind
    ``leader``), held, then ``signal(db, targets) -> {node: signalled}``; the value gets
    ``targets`` and ``no_process`` (the targets with no process to signal)."""
    def start(ctl, fault: Fault, value: dict, waited: Waited | None) -> bool:
        targets, leader_unknown = ctl.process_targets(fault, waited)
        value["targets"] = targets
        ctl.hold(fault, targets)
        signalled = signal(ctl.db, targets)
        missing = [n for n in targets if not signalled[n]]
        if missing:
            value["no_process"] = missing
        return leader_unknown
    return start

