"""When each node was harmed by the nemesis, read from the history's nemesis ops alone.

A fault holds from its ``start-<family>`` op's invoke to the matching
``stop-<family>`` op's completion (the widest reading of when it could have
acted), per slot (``value.slot``, default the family). Two things come out:

- ``down``: intervals in which a node's process was killed, paused, crashed,
  wiped, lost power or was restarted by a rolling restart, or its packets were delayed or lost
  (packet faults, flapping partitions), or it was removed from the voters: it may not have
  answered (the targets of a family whose spec ``takes_down``, faults/registry.py);
- ``cuts``: intervals in which two nodes could not talk both ways, from the
  grudges of partitions (``value.grudge``: who drops whom; a family whose spec ``cuts`` and
  that recorded no grudge: its targets count as down).

A fault that never stopped holds to the end of the history. Times are the
history's (ns).
"""
from __future__ import annotations

import dataclasses
from typing import Iterable

from faults.registry import spec_of
from history import NEMESIS

Interval = tuple[int, int]


@dataclasses.dataclass
class FaultWindows:
    """Fault intervals per node (``down``) and per unordered node pair (``cuts``), in ns."""

    down: dict[str, list[Interval]] = dataclasses.field(default_factory=dict)
    cuts: dict[frozenset, list[Interval]] = dataclasses.field(default_factory=dict)

    def is_down(self, node: str, t0: int, t1: int) -> bool:
        """True if ``node`` was harmed at any time in ``[t0, t1]``."""
        return any(a <= t1 and t0 <= b for a, b in self.down.get(node, ()))

    def is_cut(self, a: str, b: str, t0: int, t1: int) -> bool:
        """True if ``a`` and ``b`` could not talk both ways at any time in ``[t0, t1]``."""
        return any(x <= t1 and t0 <= y for x, y in self.cuts.get(frozenset((a, b)), ()))


class FaultWindowFold:
    """Builds :class:`FaultWindows` from the ops it is fed (nemesis ops only are kept)."""

    def __init__(self) -> None:
        self.windows = FaultWindows()
        self._open: dict[tuple[str, str], tuple[int, dict, str]] = {}   # (family, slot) -> (start, value, f)
        self._starting: dict[str, int] = {}     # f of an invoke in flight -> its time
        self.last_time = 0

    def feed(self, op: dict) -> None:
        self.last_time = max(self.last_time, op["time"])
        if op["process"] != NEMESIS:
            return
        phase, _, family = op["f"].partition("-")
        value = op.get("value") if isinstance(op.get("value"), dict) else {}
        slot = value.get("slot") or family
        if op["type"] == "invoke":
            if phase == "start":
                self._starting[(family, slot)] = op["time"]
            return
        if phase == "start":
            t0 = self._starting.pop((family, slot), op["time"])
            self._open[(family, slot)] = (t0, value, family)
        elif phase == "stop":
            opened = self._open.pop((family, slot), None)
            if opened is not None:
                self._close(opened, op["time"])

    def _close(self, opened: tuple[int, dict, str], t1: int) -> None:
        t0, value, family = opened
        targets = value.get("targets") if isinstance(value.get("targets"), list) else []
        spec = spec_of(family)
        if spec is not None and spec.takes_down:
            for n in targets:
                self.windows.down.setdefault(n, []).append((t0, t1))
        grudge = value.get("grudge")
        if isinstance(grudge, dict):
            for node, drops in grudge.items():
                for other in drops if isinstance(drops, list) else ():
                    self.windows.cuts.setdefault(frozenset((node, other)), []).append((t0, t1))
        elif spec is not None and spec.cuts:     # no grudge recorded: assume the targets were cut off
            for n in targets:
                self.windows.down.setdefault(n, []).append((t0, t1))

    def result(self) -> FaultWindows:
        """The windows, with faults still open held to the end of the history."""
        for opened in list(self._open.values()):
            self._close(opened, self.last_time)
        self._open.clear()
        return self.windows


def fault_windows(history: Iterable[dict]) -> FaultWindows:
    """:class:`FaultWindows` of a whole history."""
    fold = FaultWindowFold()
    for op in history:
        fold.feed(op)
    return fold.result()
