"""The nemesis's schedule as a generator: which fault op comes next, and when.

``--nemesis`` names (:func:`fault_names`): the fault families a real cluster plays
(faults/registry.py) and the targeted faults, which aim with the quorum monitor's view
(``ctx.view``, a :class:`workloads.monitor.QuorumView`-like object):

- ``lag``, ``catchup``, ``elect``, ``batch``: see :mod:`nemesis.targeted`.

Three modes (``--nemesis-mode``):

- ``serial``: Jepsen's classic: wait ``interval_s``, start a fault, wait
  ``duration_s``, stop it; the names cycle through a seeded permutation,
  never the same twice in a row (:class:`FaultSchedule`);
- ``overlap``: every name on its own timeline at once, so faults overlap (a
  family named twice, e.g. ``partition`` and ``partition:isolate-leader``,
  gets a slot per timeline):
  calm for a uniform ``[0, 2 * interval_s)``, then a fault lasting a uniform
  ``[duration_s / 2, 3 * duration_s / 2)``, or one time in four a long one,
  uniform ``[2 * duration_s, 3 * duration_s)`` (bugs of timers, such as a
  leader that never resigns, show only in long faults), again and again;
- ``windows``: Jepsen's alternation of faults and healing: ``interval_s`` of calm,
  then a fault window of ``duration_s`` in which every name runs on its own timeline as in
  ``overlap`` (so faults overlap), each fault lasting about a third of the window and ending
  in it; then calm again, and so on (:class:`InWindow`). What has not started by its
  window's end (a fault still waiting for a leader, below, or for the moment a targeted
  fault aims at) is dropped (:class:`WindowGuard`), so the calm stays calm; a fault that
  started runs to its stop (a targeted one's later steps too: ``lag`` is given room for its
  kills, half as long again as its cut).

In both modes a family's fault is played by :func:`nemesis.windows.family_window`: a fault
that needs a leader (a voter change, a wipe at kraft.version 1, a leader-aimed kind) waits
first for the monitor's view to show one, a removal's add back waits for the removed node
to catch up, and at kraft.version 1 with ``membership`` named a wipe is followed by the
replacement of the wiped voters; these waits hold only their own timeline.
"""
from __future__ import annotations

import random
from typing import Iterable, Iterator

from faults.registry import families, spec_of
from generator import Any, Context, Cycle, Generator, Seq, Sleep, Wait
from nemesis.faults import Fault, check_kind, kinds_for
from nemesis.targeted import TARGETED, targeted_fault
from nemesis.windows import family_window

MODES = ("serial", "overlap", "windows")
#: how much longer than asked a targeted fault may play, its later steps included (``lag``:
#: its cut, then kills half as long): the windows mode leaves it that much room
TARGETED_SPAN = 1.5


def fault_names() -> tuple[str, ...]:
    """Every ``--nemesis`` name: the families a real cluster plays, then the targeted faults."""
    return families() + tuple(TARGETED)


#: :func:`fault_names` as the registry stood at import (for listings)
FAULT_NAMES = fault_names()


def split_name(name: str) -> tuple[str, list[str] | None]:
    """``"partition:isolate-leader+bridge"`` -> ``("partition", ["isolate-leader", "bridge"])``;
    a name without kinds gives None (every kind)."""
    base, _, kinds = name.partition(":")
    return base, [k for k in kinds.split("+") if k] if kinds else None


def _family(name: str):
    """The spec of a ``--nemesis`` name's family (None for a targeted fault)."""
    return spec_of(split_name(name)[0])


def validate_fault_names(faults: Iterable[str]) -> list[str]:
    """Check fault names; return them without duplicates, in the order given.

    A family may name its kinds: ``partition:isolate-leader+random-halves``.
    Raises ``ValueError("unknown nemesis 'foo': choose from ...")`` for an
    unknown name, and names an unknown kind.
    """
    out: list[str] = []
    for name in faults:
        base, kinds = split_name(name)
        if base not in fault_names():
            raise ValueError(f"unknown nemesis {base!r}: choose from {', '.join(fault_names())}")
        if kinds is not None:
            if base not in families() or not kinds:
                raise ValueError(f"nemesis {name!r}: only a fault family takes kinds (family:kind+kind)")
            for k in kinds:
                check_kind(base, k)
        if name not in out:
            out.append(name)
    return out


def name_kinds(name: str, n_nodes: int) -> list[str]:
    """The kinds a ``--nemesis`` name draws from on ``n_nodes`` nodes (``[name]`` for a
    targeted fault); a family's located kinds only when named."""
    base, kinds = split_name(name)
    if base not in families():
        return [base]
    usable = kinds_for(base, n_nodes)
    located = spec_of(base).located
    return [k for k in kinds if k in usable or k in located] if kinds is not None else usable


def parse_fault_names(spec: str) -> list[str]:
    """Parse a comma-separated CLI value such as ``"kill,partition"``.

    ``""`` and ``"none"`` give ``[]``. Raises ``ValueError`` for unknown names.
    """
    parts = [p.strip() for p in spec.split(",") if p.strip()]
    if parts == ["none"]:
        return []
    return validate_fault_names(parts)


class FaultSchedule(Iterator[Fault]):
    """The serial mode's endless, seeded iterator of family faults.

    ``faults``: enabled family names (at least one); ``rng``: the only
    source of randomness; ``interval_s``: seconds of calm before each fault;
    ``duration_s``: seconds each fault lasts; ``n_nodes``: cluster size,
    which decides the partition kinds available. Raises ``ValueError`` for
    unknown or no names, negative interval, non-positive duration, or
    partitions on a one-node cluster.
    """

    def __init__(self, faults: Iterable[str], rng: random.Random, interval_s: float = 10.0,
                 duration_s: float = 10.0, *, n_nodes: int = 5):
        self.faults = validate_fault_names(faults)
        if not self.faults:
            raise ValueError("FaultSchedule: no faults enabled")
        check_timing(interval_s, duration_s)
        if n_nodes < 1:
            raise ValueError(f"FaultSchedule: n_nodes must be >= 1, got {n_nodes}")
        self._kinds = {name: name_kinds(name, n_nodes) for name in self.faults}
        for name, kinds in self._kinds.items():
            if not kinds:
                raise ValueError(f"FaultSchedule: nemesis {name!r} needs at least 2 nodes, got {n_nodes}")
        self.rng = rng
        self.interval_s = float(interval_s)
        self.duration_s = float(duration_s)
        self.n_nodes = n_nodes
        self._pending: list[str] = []
        self._last: str | None = None

    def _refill(self) -> None:
        perm = list(self.faults)
        self.rng.shuffle(perm)
        if len(perm) > 1 and perm[0] == self._last:
            perm.append(perm.pop(0))  # never the same name twice in a row
        self._pending = perm

    def __iter__(self) -> "FaultSchedule":
        return self

    def __next__(self) -> Fault:
        if not self._pending:
            self._refill()
        name = self._pending.pop(0)
        self._last = name
        return Fault(split_name(name)[0], self.rng.choice(self._kinds[name]))


def check_timing(interval_s: float, duration_s: float) -> None:
    """Raise ValueError unless ``interval_s`` >= 0 and ``duration_s`` > 0 (seconds)."""
    if interval_s < 0:
        raise ValueError(f"nemesis interval must be >= 0 s, got {interval_s}")
    if duration_s <= 0:
        raise ValueError(f"nemesis duration must be > 0 s, got {duration_s}")


def fault_generator(name: str, rng: random.Random, duration_s: float, n_nodes: int,
                    slot: str | None = None, voter_changes: bool = False,
                    replace_wiped: bool = False, aim_at_leader: bool = True) -> Generator:
    """One fault of ``--nemesis`` name ``name``, lasting about ``duration_s`` (a family's in
    ``slot``, when given), with the waits of :func:`nemesis.windows.family_window`
    (``voter_changes``: kraft.version 1; ``replace_wiped``: wiped voters are replaced;
    ``aim_at_leader``: the quorum's leader is among the nodes faults touch)."""
    if name in TARGETED:
        return targeted_fault(name, rng, duration_s, n_nodes)
    kinds = name_kinds(name, n_nodes)
    name = split_name(name)[0]
    if not kinds:
        raise ValueError(f"nemesis {name!r} needs at least 2 nodes, got {n_nodes}")
    return family_window(Fault(name, rng.choice(kinds), slot=slot), duration_s,
                         voter_changes=voter_changes, replace_wiped=replace_wiped, aim_at_leader=aim_at_leader)


def overlap_duration(rng: random.Random, mean_s: float) -> float:
    """How long an overlap-mode fault lasts (s): uniform ``[mean/2, 3 mean/2)``, or with
    probability 1/4 a long one, uniform ``[2 mean, 3 mean)``."""
    if rng.random() < 0.25:
        return rng.uniform(2 * mean_s, 3 * mean_s)
    return rng.uniform(mean_s / 2, 1.5 * mean_s)


class InWindow(Generator):
    """Waits until a fault of ``length_s`` fits in a fault window: the windows last
    ``window_s`` and follow ``calm_s`` of calm each (the first window starts at ``calm_s``,
    on the generator clock; period ``calm_s + window_s``). Now, when now plus ``length_s``
    ends inside the current window; else at the next window's start plus ``offset_s``
    (clipped so that the fault still ends in it). ``length_s`` is at most ``window_s``."""

    def __init__(self, calm_s: float, window_s: float, length_s: float, offset_s: float = 0.0):
        self.calm_s, self.window_s = calm_s, window_s
        self.length_s = min(length_s, window_s)
        self.offset_s = min(offset_s, window_s - self.length_s)
        self._at: float | None = None

    def start_at(self, now: float) -> float:
        """When a fault asked for at ``now`` (s) may start (s)."""
        period = self.calm_s + self.window_s
        k = now // period
        start = k * period + self.calm_s          # this period's window
        if start <= now and now + self.length_s <= start + self.window_s:
            return now
        if now >= start:
            start += period                       # the next one
        return start + self.offset_s

    def op(self, ctx: Context) -> dict | Wait | None:
        if self._at is None:
            self._at = self.start_at(ctx.time)
            period = self.calm_s + self.window_s
            self.end = (self._at - self.calm_s) // period * period + self.calm_s + self.window_s
        return Wait(self._at) if ctx.time < self._at else None

    #: the end (s) of the window the fault was placed in, once :meth:`op` was first asked
    end: float = float("inf")


class WindowGuard(Generator):
    """Runs ``gen`` (one fault's generator) within the window ``gate`` (an :class:`InWindow`
    already passed) chose: once the window has ended, it ends as soon as none of the faults
    ``gen`` started is open (so nothing starts after the window; what started is stopped),
    and a wait of ``gen`` with nothing open lasts at most to the window's end."""

    def __init__(self, gate: InWindow, gen: Generator):
        self.gate, self.gen = gate, gen
        self.open: set[tuple[str, object]] = set()

    def op(self, ctx: Context) -> dict | Wait | None:
        end = self.gate.end
        if not self.open and ctx.time >= end:
            return None
        a = self.gen.op(ctx)
        if isinstance(a, Wait):
            return a if self.open else Wait(min(a.until, end))
        if isinstance(a, dict):
            phase, _, family = str(a.get("f", "")).partition("-")
            value = a.get("value") if isinstance(a.get("value"), dict) else {}
            key = (family, value.get("slot"))
            if phase == "start":
                self.open.add(key)
            elif phase == "stop":
                self.open.discard(key)
        return a

    def update(self, ctx: Context, invoke: dict, completion: dict) -> None:
        self.gen.update(ctx, invoke, completion)


def nemesis_generator(names: Iterable[str], rng: random.Random, mode: str = "serial",
                      interval_s: float = 10.0, duration_s: float = 10.0, n_nodes: int = 5,
                      voter_changes: bool = False, aim_at_leader: bool = True) -> Generator:
    """The nemesis thread's generator for ``names`` (see the module docstring); endless.
    ``voter_changes``: the quorum is at kraft.version 1 (KIP-853), so random wipes wait for
    a leader, and with ``membership`` among ``names`` wiped voters are replaced;
    ``aim_at_leader`` False: the quorum's leader is none of the nodes faults touch, so
    leader-aimed kinds do not wait for it (nemesis/windows.py).

    Raises ValueError for an unknown name or mode, no names, or bad timing.
    """
    names = validate_fault_names(names)
    if not names:
        raise ValueError("no nemesis enabled")
    check_timing(interval_s, duration_s)
    waits = {"voter_changes": voter_changes, "aim_at_leader": aim_at_leader,
             "replace_wiped": voter_changes and any(s is not None and s.voter_changes for s in map(_family, names))}
    if mode == "serial":
        schedule = FaultSchedule([n for n in names], rng, interval_s, duration_s, n_nodes=n_nodes)

        def serial() -> Generator:
            fault = next(schedule)
            if fault.name in TARGETED:
                return Seq([Sleep(interval_s), fault_generator(fault.name, rng, duration_s, n_nodes)])
            return Seq([Sleep(interval_s), family_window(fault, duration_s, **waits)])
        return Cycle(serial)
    if mode not in ("overlap", "windows"):
        raise ValueError(f"unknown nemesis mode {mode!r}: choose from {', '.join(MODES)}")
    for name in names:
        if not name_kinds(name, n_nodes):
            raise ValueError(f"nemesis {name!r} needs at least 2 nodes, got {n_nodes}")

    def timeline(name: str, slot: str | None) -> Generator:
        own = random.Random(rng.getrandbits(64))
        if mode == "windows":
            return Cycle(lambda: windowed(name, slot, own))
        return Cycle(lambda: Seq([Sleep(own.uniform(0, 2 * interval_s)),
                                  fault_generator(name, own, overlap_duration(own, duration_s), n_nodes,
                                                  slot, **waits)]))

    def windowed(name: str, slot: str | None, own: random.Random) -> Generator:
        # calm interval_s, then a window of duration_s: faults of about a third of it, apart
        # by up to a sixth, each ending in the window (a targeted fault's later steps too)
        length = min(overlap_duration(own, duration_s / 3), duration_s)
        span = min(length * TARGETED_SPAN, duration_s) if name in TARGETED else length
        length = span / TARGETED_SPAN if name in TARGETED else length
        gate = InWindow(interval_s, duration_s, span, own.uniform(0, duration_s / 3))
        return Seq([Sleep(own.uniform(0, duration_s / 6)), gate,
                    WindowGuard(gate, fault_generator(name, own, length, n_nodes, slot, **waits))])
    # two timelines of one family (e.g. partition and partition:isolate-leader) each get a slot
    seen: dict[str, int] = {}
    slots = []
    for n in names:
        family = split_name(n)[0]
        seen[family] = seen.get(family, 0) + 1
        slots.append(f"{family}{seen[family]}" if seen[family] > 1 and family in families() else None)
    timelines = [timeline(n, slot) for n, slot in zip(names, slots)]     # seeded in the order named
    # asked first: the voter changes and wipes (their specs' asked_first), so that when a leader
    # comes after none, those that waited for it start before the faults that strike it (elect,
    # lag, kill:leader, ...)
    first = [s is not None and s.asked_first for s in map(_family, names)]
    return Any([t for t, f in zip(timelines, first) if f] + [t for t, f in zip(timelines, first) if not f])
