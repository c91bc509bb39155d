"""One partition's search: the C core (``_wgl.Search``) over a list of :class:`Operation`.

The core is porcupine's ``checkSingle``: Wing & Gong's search with Lowe's
memoization. It reads the ops itself: their entries sorted by time with
calls before returns at equal times (ops open to +infinity returning after
every other event), the steps of the model's :attr:`~.model.Model.native_kinds`
done in C, the others through ``model.step(state, op)``. :func:`new_core`
builds it (the checker's hot path); :class:`PartitionSearch` wraps it with
the partition's ops and states for the explanation.
"""
from __future__ import annotations

from typing import Any, Hashable

from .core import _wgl
from .model import ILLEGAL, Model
from .operation import UNKNOWN, Operation

RUNNING, OK, ILLEGAL_STATUS = _wgl.RUNNING, _wgl.OK, _wgl.ILLEGAL
Search = _wgl.Search


def new_core(model: Model, ops: list[Operation], comp: list[int] | None = None,
             initial: list[Hashable] | None = None, explain: bool = False) -> _wgl.Search:
    """The core search over ``ops``: one component starting at ``model.init()`` unless
    ``comp`` (component per op) and ``initial`` (per component) say otherwise.

    Raises ValueError for an op that returns before its call.
    """
    return _wgl.Search(ops, comp, initial if initial is not None else [model.init()], model.step,
                       ILLEGAL, explain, model.native_kinds, UNKNOWN)


def check_times(ops: list[Operation]) -> None:
    """Raise ValueError for an op that returns before its call (as building a core would)."""
    for i, o in enumerate(ops):
        if o.ret is not None and o.ret < o.call:
            raise ValueError(f"op {i} (index {o.index}, line {o.line}) returns at {o.ret} "
                             f"before its call at {o.call}")


class PartitionSearch:
    """The search over one partition's ``ops`` against ``model``, run in slices.

    With ``components=True`` and a keyed model, the state is the vector of
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
        self.core = new_core(model, ops, comp if components else None, initial, explain)
        self.status = RUNNING if ops else OK

    def run(self, max_steps: int) -> int:
        """Search at most ``max_steps`` steps; returns RUNNING, OK or ILLEGAL_STATUS."""
        if self.status == RUNNING:
            self.status = self.core.run(max_steps)
        return self.status

    def stats(self) -> dict:
        """Counters: steps, step_calls (model calls), backtracks, cache_entries, states."""
        return self.core.stats()

    def state_after(self, order: list[int]) -> list[Hashable]:
        """Replay ``order`` (op indices) from the initial state; the state after each op."""
        vec = list(self.initial)
        out = []
        for i in order:
            c = self.comp[i]
            vec[c] = self.model.step(vec[c], self.ops[i])
            out.append(vec[c])
        return out
