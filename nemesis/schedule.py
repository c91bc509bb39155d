"""The seeded fault schedule: which fault comes next, and of which kind.

Jepsen style: wait ``interval_s``, start a fault, wait ``duration_s``, stop
it, repeat. The fault names cycle through a seeded permutation of the
enabled names (reshuffled after each pass, never repeating a name twice in a
row when more than one is enabled), so every enabled fault shows up early in
a short run.
"""
from __future__ import annotations

import dataclasses
import random
from typing import Iterable, Iterator

FAULT_NAMES = ("kill", "partition", "pause", "crash")
PARTITION_KINDS = ("random-halves", "isolate-one", "isolate-leader", "majorities-ring", "bridge")
PROCESS_KINDS = ("one", "minority", "leader")
#: ``crash``: SIGKILL a majority (the leader among them) or every node at
#: once, like a power loss; what a node had not written out is gone.
CRASH_KINDS = ("majority", "all")


@dataclasses.dataclass(frozen=True)
class Fault:
    """One scheduled fault: ``name`` in :data:`FAULT_NAMES`, ``kind`` one of its kinds."""

    name: str
    kind: str


def validate_fault_names(faults: Iterable[str]) -> list[str]:
    """Check fault names; return them without duplicates, in the order given.

    Raises ``ValueError("unknown nemesis 'foo': choose from kill, partition, pause")``
    for an unknown name.
    """
    out: list[str] = []
    for name in faults:
        if name not in FAULT_NAMES:
            raise ValueError(f"unknown nemesis {name!r}: choose from {', '.join(FAULT_NAMES)}")
        if name not in out:
            out.append(name)
    return out


def parse_fault_names(spec: str) -> list[str]:
    """Parse a comma-separated CLI value such as ``"kill,partition"``.

    ``""`` and ``"none"`` give ``[]``. Raises ``ValueError`` for unknown names
    (see :func:`validate_fault_names`).
    """
    parts = [p.strip() for p in spec.split(",") if p.strip()]
    if parts == ["none"]:
        return []
    return validate_fault_names(parts)


def kinds_for(name: str, n_nodes: int) -> list[str]:
    """The kinds of fault ``name`` that make sense on ``n_nodes`` nodes.

    Partitions: ``majorities-ring`` only with 5 nodes, ``bridge`` with 3 or
    more, the others with 2 or more. Kill and pause: all of
    :data:`PROCESS_KINDS`. Crash: :data:`CRASH_KINDS`. Raises
    ``ValueError`` for an unknown name.
    """
    validate_fault_names([name])
    if name == "crash":
        return list(CRASH_KINDS)
    if name != "partition":
        return list(PROCESS_KINDS)
    kinds = []
    for kind in PARTITION_KINDS:
        if kind == "majorities-ring" and n_nodes != 5:
            continue
        if kind == "bridge" and n_nodes < 3:
            continue
        if n_nodes < 2:
            continue
        kinds.append(kind)
    return kinds


class FaultSchedule(Iterator[Fault]):
    """An endless, seeded iterator of :class:`Fault`.

    ``faults``: enabled names (subset of :data:`FAULT_NAMES`, at least one);
    ``rng``: the only source of randomness; ``interval_s``: seconds of calm
    before each fault; ``duration_s``: seconds each fault lasts;
    ``n_nodes``: cluster size, which decides the partition kinds available.
    Raises ``ValueError`` for unknown or no names, negative interval,
    non-positive duration, or partitions on a one-node cluster.
    """

    def __init__(self, faults: Iterable[str], rng: random.Random, interval_s: float = 10.0,
                 duration_s: float = 10.0, *, n_nodes: int = 5):
        self.faults = validate_fault_names(faults)
        if not self.faults:
            raise ValueError("FaultSchedule: no faults enabled")
        if interval_s < 0:
            raise ValueError(f"FaultSchedule: interval_s must be >= 0, got {interval_s}")
        if duration_s <= 0:
            raise ValueError(f"FaultSchedule: duration_s must be > 0, got {duration_s}")
        if n_nodes < 1:
            raise ValueError(f"FaultSchedule: n_nodes must be >= 1, got {n_nodes}")
        self._kinds = {name: kinds_for(name, n_nodes) for name in self.faults}
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
        return Fault(name, self.rng.choice(self._kinds[name]))
