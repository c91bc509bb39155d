"""Shared counters for a workload: process ids, unique values, op outcome tallies.

All workers run on one asyncio event loop, so plain Python counters are safe
without locks (no ``await`` between read and increment).
"""
from __future__ import annotations

import collections
import itertools


class Sequence:
    """Hands out consecutive ints from ``start`` (process ids, appended values)."""

    def __init__(self, start: int = 0):
        self._it = itertools.count(start)
        self.last: int | None = None

    def next(self) -> int:
        """The next int; never repeats within one :class:`Sequence`."""
        self.last = next(self._it)
        return self.last


class OpTally:
    """Counts completed client ops by ``f`` and outcome type (ok / fail / info).

    ``counts[(f, type)]`` is an int; :meth:`totals` sums over ``f``.
    """

    def __init__(self) -> None:
        self.counts: collections.Counter[tuple[str, str]] = collections.Counter()

    def add(self, f: str, type_: str) -> None:
        """Count one completion of an op ``f`` with outcome ``type_``."""
        self.counts[(f, type_)] += 1

    def totals(self, fs: tuple[str, ...] = ("append", "read")) -> dict[str, int]:
        """``{"ok": n, "fail": n, "info": n}`` over the ops named in ``fs``."""
        out = {"ok": 0, "fail": 0, "info": 0}
        for (f, t), n in self.counts.items():
            if f in fs and t in out:
                out[t] += n
        return out
