"""The nemesis's schedule as a generator: which fault op comes next, and when.

``--nemesis`` names (:data:`FAULT_NAMES`): the fault families of
:mod:`nemesis.faults` (partition, kill, pause, crash, packet, flap, rolling)
and the targeted faults, which aim with the quorum monitor's view
(``ctx.view``, a :class:`workloads.monitor.QuorumView`-like object):

- ``lag``: cut one follower off while clients write, so it falls behind;
  then heal it and at once kill the leader and the most up-to-date
  followers that may die while a majority stays up, so the laggard campaigns;
- ``elect``: wait for a new leader or a node entering a new epoch with no
  leader (it just voted or stands), kill it at once, and restart it cut off
  from the others for a while, so what it recovered shows before a peer
  corrects it.

- ``batch``: wait until the leader's last DescribeQuorum shows records past
  its high watermark (a batch in flight), and kill the leader at once.

Two modes (``--nemesis-mode``):

- ``serial``: Jepsen's classic: wait ``interval_s``, start a fault, wait
  ``duration_s``, stop it; the names cycle through a seeded permutation,
  never the same twice in a row (:class:`FaultSchedule`);
- ``overlap``: every name on its own timeline at once, so faults overlap (a
  family named twice, e.g. ``partition`` and ``partition:isolate-leader``,
  gets a slot per timeline):
  calm for a uniform ``[0, 2 * interval_s)``, then a fault lasting a uniform
  ``[duration_s / 2, 3 * duration_s / 2)``, or one time in four a long one,
  uniform ``[2 * duration_s, 3 * duration_s)`` (bugs of timers, such as a
  leader that never resigns, show only in long faults), again and again.
"""
from __future__ import annotations

import random
from typing import Callable, Iterable, Iterator

from generator import Any, Context, Cycle, Generator, Seq, Sleep, Wait, WaitFor
from nemesis.faults import FAMILIES, Fault, check_kind, kinds_for
from nemesis.targets import majority_size

#: targeted faults, beside the families
TARGETED = ("lag", "elect", "batch")
FAULT_NAMES = FAMILIES + TARGETED
MODES = ("serial", "overlap")
#: how long a targeted fault waits for what it aims at (s)
AIM_TIMEOUT_S = 15.0


def split_name(name: str) -> tuple[str, list[str] | None]:
    """``"partition:isolate-leader+bridge"`` -> ``("partition", ["isolate-leader", "bridge"])``;
    a name without kinds gives None (every kind)."""
    base, _, kinds = name.partition(":")
    return base, [k for k in kinds.split("+") if k] if kinds else None


def validate_fault_names(faults: Iterable[str]) -> list[str]:
    """Check fault names; return them without duplicates, in the order given.

    A family may name its kinds: ``partition:isolate-leader+random-halves``.
    Raises ``ValueError("unknown nemesis 'foo': choose from ...")`` for an
    unknown name, and names an unknown kind.
    """
    out: list[str] = []
    for name in faults:
        base, kinds = split_name(name)
        if base not in FAULT_NAMES:
            raise ValueError(f"unknown nemesis {base!r}: choose from {', '.join(FAULT_NAMES)}")
        if kinds is not None:
            if base not in FAMILIES or not kinds:
                raise ValueError(f"nemesis {name!r}: only a fault family takes kinds (family:kind+kind)")
            for k in kinds:
                check_kind(base, k)
        if name not in out:
            out.append(name)
    return out


def name_kinds(name: str, n_nodes: int) -> list[str]:
    """The kinds a ``--nemesis`` name draws from on ``n_nodes`` nodes (``[name]`` for a
    targeted fault)."""
    base, kinds = split_name(name)
    if base not in FAMILIES:
        return [base]
    usable = kinds_for(base, n_nodes)
    return [k for k in kinds if k in usable] if kinds is not None else usable


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


def start_op(fault: Fault) -> dict:
    """The ``start-<family>`` op of ``fault``."""
    return {"f": f"start-{fault.name}", "value": fault.to_value()}


def stop_op(fault: Fault) -> dict:
    """The ``stop-<family>`` op that heals ``fault``'s slot."""
    value = {"kind": fault.kind, **({"slot": fault.slot} if fault.slot else {})}
    return {"f": f"stop-{fault.name}", "value": value}


class Lazy(Generator):
    """One op made by ``make(ctx)`` when first asked (None: nothing, done)."""

    def __init__(self, make: Callable[[Context], dict | None]):
        self.make, self.done = make, False

    def op(self, ctx: Context) -> dict | Wait | None:
        if self.done:
            return None
        self.done = True
        return self.make(ctx)


def fault_window(fault: Fault | Callable[[Context], Fault | None], duration_s: float) -> Generator:
    """Start the fault, hold it ``duration_s``, stop it. ``fault`` may be made at start time
    from the context (for aim); a None fault is skipped."""
    made: list[Fault] = []

    def start(ctx: Context) -> dict | None:
        f = fault(ctx) if callable(fault) else fault
        if f is None:
            return None
        made.append(f)
        return start_op(f)

    return Seq([Lazy(start), Sleep(duration_s), Lazy(lambda ctx: stop_op(made[0]) if made else None)])


# -- targeted faults -----------------------------------------------------------

def _nodes(view) -> list[str]:
    return sorted(getattr(view, "nodes", None) or {})


def lag_fault(rng: random.Random, lag_s: float, down_s: float, n_nodes: int) -> Generator:
    """``lag``: isolate a follower for ``lag_s`` while clients write, then heal it and kill the
    leader and the freshest followers, as many as may die while a majority (the laggard
    among it) stays up, for ``down_s``."""
    chosen: list[str] = []

    def isolate(ctx: Context) -> Fault | None:
        view = ctx.view
        nodes = _nodes(view)
        leader = getattr(view, "leader", None)
        followers = [n for n in nodes if n != leader]
        if not followers:
            return None
        chosen.append(rng.choice(followers))
        return Fault("partition", "nodes", slot="lag", targets=(chosen[0],))

    def kill_fresh(ctx: Context) -> Fault | None:
        view = ctx.view
        if not chosen:
            return None
        lagging = view.lagging(exclude=(chosen[0],)) if hasattr(view, "lagging") else []
        leader = getattr(view, "leader", None)
        fresh = [n for n in reversed(lagging) if n != leader]
        victims = ([leader] if leader and leader != chosen[0] else []) + fresh
        victims = victims[:max(1, n_nodes - majority_size(n_nodes))]
        return Fault("kill", "nodes", slot="lag", targets=tuple(victims)) if victims else None

    return Seq([WaitFor(lambda ctx: getattr(ctx.view, "leader", None) is not None, AIM_TIMEOUT_S),
                fault_window(isolate, lag_s), fault_window(kill_fresh, down_s)])


def elect_fault(down_s: float) -> Generator:
    """``elect``: wait for a new leader, or nodes seen in an epoch above the leader's with no
    leader (they have just voted, or stand); kill them at once, cut them off from the other
    nodes while they are down, restart them still cut off (so what they recovered from their
    disks shows before any peer can correct it), and heal after ``down_s``."""
    base: list[int] = []
    target: list[str] = []

    def aimed(ctx: Context) -> bool:
        view = ctx.view
        if view is None:
            return False
        if not base:
            base.append(view.elections)
            return False
        newest = max((seen.time for seen in view.nodes.values()), default=0.0)
        electing = [n for n, seen in sorted(view.nodes.items())
                    if seen.epoch > view.epoch and seen.leader < 0 and seen.time >= newest - 1.0]
        if electing:       # the candidate and those that voted: which is which does not show
            target[:] = electing
            return True
        if view.elections > base[0] and view.leader is not None:
            target[:] = [view.leader]
            return True
        return False

    def kill(ctx: Context) -> Fault | None:
        return Fault("kill", "nodes", slot="elect", targets=tuple(target)) if target else None

    def cut(ctx: Context) -> Fault | None:
        return Fault("partition", "nodes", slot="elect-cut", targets=tuple(target)) if target else None

    killed: list[Fault] = []
    isolated: list[Fault] = []

    def start(make, held):
        def op(ctx: Context) -> dict | None:
            f = make(ctx)
            if f is None:
                return None
            held.append(f)
            return start_op(f)
        return Lazy(op)

    return Seq([WaitFor(aimed, AIM_TIMEOUT_S, poll_s=0.02), start(kill, killed), start(cut, isolated),
                Sleep(0.2), Lazy(lambda ctx: stop_op(killed[0]) if killed else None),
                Sleep(down_s), Lazy(lambda ctx: stop_op(isolated[0]) if isolated else None)])


def batch_fault(down_s: float) -> Generator:
    """``batch``: kill the leader while its log holds records past its high watermark (as its
    DescribeQuorum last showed), for ``down_s``."""
    target: list[str] = []

    def in_flight(ctx: Context) -> bool:
        view = ctx.view
        leader = getattr(view, "leader", None)
        if leader is None or view.log_end.get(leader, -1) <= view.high_watermark:
            return False
        target[:] = [leader]
        return True

    return Seq([WaitFor(in_flight, AIM_TIMEOUT_S, poll_s=0.02),
                fault_window(lambda ctx: Fault("kill", "nodes", slot="batch", targets=tuple(target))
                             if target else None, down_s)])


def fault_generator(name: str, rng: random.Random, duration_s: float, n_nodes: int,
                    slot: str | None = None) -> Generator:
    """One fault of ``--nemesis`` name ``name``, lasting about ``duration_s`` (a family's in
    ``slot``, when given)."""
    if name == "lag":
        return lag_fault(rng, duration_s, max(1.0, duration_s / 2), n_nodes)
    if name == "elect":
        return elect_fault(max(0.5, duration_s / 2))
    if name == "batch":
        return batch_fault(max(0.5, duration_s / 2))
    kinds = name_kinds(name, n_nodes)
    name = split_name(name)[0]
    if not kinds:
        raise ValueError(f"nemesis {name!r} needs at least 2 nodes, got {n_nodes}")
    return fault_window(Fault(name, rng.choice(kinds), slot=slot), duration_s)


def overlap_duration(rng: random.Random, mean_s: float) -> float:
    """How long an overlap-mode fault lasts (s): uniform ``[mean/2, 3 mean/2)``, or with
    probability 1/4 a long one, uniform ``[2 mean, 3 mean)``."""
    if rng.random() < 0.25:
        return rng.uniform(2 * mean_s, 3 * mean_s)
    return rng.uniform(mean_s / 2, 1.5 * mean_s)


def nemesis_generator(names: Iterable[str], rng: random.Random, mode: str = "serial",
                      interval_s: float = 10.0, duration_s: float = 10.0, n_nodes: int = 5) -> Generator:
    """The nemesis thread's generator for ``names`` (see the module docstring); endless.

    Raises ValueError for an unknown name or mode, no names, or bad timing.
    """
    names = validate_fault_names(names)
    if not names:
        raise ValueError("no nemesis enabled")
    check_timing(interval_s, duration_s)
    if mode == "serial":
        schedule = FaultSchedule([n for n in names], rng, interval_s, duration_s, n_nodes=n_nodes)

        def serial() -> Generator:
            fault = next(schedule)
            if fault.name in TARGETED:
                return Seq([Sleep(interval_s), fault_generator(fault.name, rng, duration_s, n_nodes)])
            return Seq([Sleep(interval_s), fault_window(fault, duration_s)])
        return Cycle(serial)
    if mode != "overlap":
        raise ValueError(f"unknown nemesis mode {mode!r}: choose from {', '.join(MODES)}")
    for name in names:
        if not name_kinds(name, n_nodes):
            raise ValueError(f"nemesis {name!r} needs at least 2 nodes, got {n_nodes}")

    def timeline(name: str, slot: str | None) -> Generator:
        own = random.Random(rng.getrandbits(64))
        return Cycle(lambda: Seq([Sleep(own.uniform(0, 2 * interval_s)),
                                  fault_generator(name, own, overlap_duration(own, duration_s), n_nodes,
                                                  slot)]))
    # two timelines of one family (e.g. partition and partition:isolate-leader) each get a slot
    seen: dict[str, int] = {}
    slots = []
    for n in names:
        family = split_name(n)[0]
        seen[family] = seen.get(family, 0) + 1
        slots.append(f"{family}{seen[family]}" if seen[family] > 1 and family in FAMILIES else None)
    return Any([timeline(n, slot) for n, slot in zip(names, slots)])
