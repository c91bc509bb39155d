"""One partition's search: builds the time-ordered entries and drives the C core.

The core (``_wgl.Search``, see ``_wgl.c``) is porcupine's ``checkSingle``:
Wing & Gong's search with Lowe's memoization. This module turns a list of
:class:`Operation` into its inputs: entries sorted by time with calls before
returns at equal times, ops open to +infinity returning after every other
event, and the model's step as a callable over op ids.
"""
from __future__ import annotations

from typing import Any, Hashable

from . import _wgl
from .model import ILLEGAL, Model
from .operation import Operation

RUNNING, OK, ILLEGAL_STATUS = _wgl.RUNNING, _wgl.OK, _wgl.ILLEGAL


def entry_order(ops: list[Operation]) -> list[int]:
    """The 2n entries ``op*2 + is_return`` in time order (calls first on ties).

    Ops with ``ret is None`` return after every other event, in op order.
    Raises ValueError for an op that returns before it is called.
    """
    n = len(ops)
    finite = [o.ret for o in ops if o.ret is not None]
    top = max(max(finite, default=0), max((o.call for o in ops), default=0)) + 1
    shift = max(1, (2 * n).bit_length())
    keys = []
    for i, o in enumerate(ops):
        r = o.ret
        if r is None:
            r = top
        elif r < o.call:
            raise ValueError(f"op {i} (index {o.index}, line {o.line}) returns at {r} "
                             f"before its call at {o.call}")
        # time, then call (0) before return (1), then op: one int sorts fastest
        keys.append((o.call << 1) << shift | (i << 1))
        keys.append(((r << 1) | 1) << shift | (i << 1) | 1)
    keys.sort()
    mask = (1 << shift) - 1
    return [k & mask for k in keys]


class PartitionSearch:
    """The search over one partition's ``ops`` against ``model``, run in slices.

    With ``partitioned=False`` and a keyed model, the state is the vector of
    the model's components (e.g. one register per key). ``explain=True``
    records the longest linearizable prefixes (slower; use it to explain a
    partition already known to be illegal).
    """

    def __init__(self, model: Model, ops: list[Operation], key: Any = None,
                 components: bool = False, explain: bool = False):
        self.model, self.ops, self.key = model, ops, key
        if components:
            initial, comp = model.components(ops)
        else:
            initial, comp = [model.init()], [0] * len(ops)
        self.initial = initial
        self.comp = comp
        step = model.step
        native = [model.native(o) for o in ops]
        self.core = _wgl.Search(entry_order(ops), comp, initial,
                                lambda state, i: step(state, ops[i]), ILLEGAL, explain,
                                native if any(x is not None for x in native) else None,
                                [i for i, o in enumerate(ops) if o.ret is None])
        self.status = RUNNING if ops else OK

    def run(self, max_steps: int) -> int:
        """Search at most ``max_steps`` steps; returns RUNNING, OK or ILLEGAL_STATUS."""
        if self.status == RUNNING:
            self.status = self.core.run(max_steps)
        return self.status

    def release(self) -> None:
        """Free the search's tables, keeping its counters (after it finished or was given up)."""
        if self.core is not None:
            self._final_stats = self.core.stats()
            self.core = None

    def memory(self) -> int:
        """Approximate bytes held by this search (cache and tables; 0 once released)."""
        return self.core.memory() if self.core is not None else 0

    def stats(self) -> dict:
        """Counters: steps, step_calls (model calls), backtracks, cache_entries, states."""
        return self.core.stats() if self.core is not None else self._final_stats

    def state_after(self, order: list[int]) -> list[Hashable]:
        """Replay ``order`` (op indices) from the initial state; the state after each op."""
        vec = list(self.initial)
        out = []
        for i in order:
            c = self.comp[i]
            vec[c] = self.model.step(vec[c], self.ops[i])
            out.append(vec[c])
        return out
