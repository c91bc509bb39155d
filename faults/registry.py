"""Every fault family, by name: one :class:`faults.spec.FaultSpec` each. A new family is a
module beside this one holding its spec, and a line here (and its injector in nemesis/ when a
real cluster can play it; in ``SIMULATED`` too when the simulator draws it). Everything that
handles faults looks a family up here when it needs it (never a copy made at import), so a
family registered here is known everywhere at once."""
from __future__ import annotations

from faults import clock, crash, flap, kill, membership, packet, partition, pause, power_loss, rolling, stop, wipe
from faults.spec import FaultSpec

#: every family, in the order the nemesis lists them (``--nemesis`` help and errors)
FAULTS: dict[str, FaultSpec] = {s.name: s for s in (
    partition.SPEC,
    kill.SPEC,
    pause.SPEC,
    stop.SPEC,
    crash.SPEC,
    packet.SPEC,
    flap.SPEC,
    rolling.SPEC,
    wipe.SPEC,
    power_loss.SPEC,
    membership.SPEC,
    clock.SPEC,
)}
#: the families the simulator draws, in the order of its draw (part of every seed's schedule:
#: a change here changes every simulated schedule)
SIMULATED: tuple[str, ...] = tuple(s.name for s in (
    partition.SPEC, packet.SPEC, kill.SPEC, power_loss.SPEC, pause.SPEC, clock.SPEC, wipe.SPEC, membership.SPEC))


def families() -> tuple[str, ...]:
    """The families a real cluster can play (those with kinds), in :data:`FAULTS`' order."""
    return tuple(name for name, spec in FAULTS.items() if spec.kinds)


def spec_of(name: str) -> FaultSpec | None:
    """The family ``name``'s spec, or None when there is no such family (a targeted fault's
    name, an op of an older history)."""
    return FAULTS.get(name)


def fault_spec(name: str) -> FaultSpec:
    """The family ``name``'s spec; raises ``ValueError`` naming the families for an unknown
    name."""
    spec = FAULTS.get(name)
    if spec is None:
        raise ValueError(f"unknown fault family {name!r}: choose from {', '.join(FAULTS)}")
    return spec


def named(nemesis, scenario=None) -> list[FaultSpec]:
    """The families a run names, in order, without repeats: ``--nemesis`` names (``family`` or
    ``family:kind+kind``; ``nemesis`` an iterable of them) and a scenario's steps that start a
    fault (``{"nemesis": "start-<family>", ...}``). Names that are no family (targeted faults)
    are left out."""
    names = [str(n).partition(":")[0] for n in nemesis or ()]
    names += [str(s["nemesis"])[len("start-"):] for s in scenario or ()
              if isinstance(s, dict) and str(s.get("nemesis", "")).startswith("start-")]
    return [FAULTS[n] for n in dict.fromkeys(names) if n in FAULTS]
