"""Each fault family's injector on a real cluster (:class:`nemesis.injector.Injector`), by
name: what :class:`nemesis.controller.NemesisController` dispatches through. Every family of
``faults.registry`` with kinds has one here (a test holds them to it)."""
from __future__ import annotations

from nemesis import flap, kill, membership, packet_faults, partition, pause, power_loss, rolling, stop, wipe
from nemesis.injector import Injector

INJECTORS: dict[str, Injector] = {i.name: i for i in (
    partition.INJECTOR,
    kill.INJECTOR,
    pause.INJECTOR,
    stop.INJECTOR,
    kill.CRASH,
    packet_faults.INJECTOR,
    flap.INJECTOR,
    rolling.INJECTOR,
    wipe.INJECTOR,
    power_loss.INJECTOR,
    membership.INJECTOR,
)}


def injector(name: str) -> Injector:
    """Family ``name``'s injector; raises ``ValueError`` for a family no real cluster plays."""
    inj = INJECTORS.get(name)
    if inj is None:
        raise ValueError(f"unknown nemesis {name!r}: choose from {', '.join(INJECTORS)}")
    return inj
