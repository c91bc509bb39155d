"""The judge of a simulated history: our checkers, the same as a real run's (checkers/), handed
in from above since ``sim/`` sits below ``checkers/``.

A judge is ``judge(ops, nodes, workload, config) -> (valid, kinds)``: ``ops`` the history
(list of op dicts), ``nodes`` ``{name: (records, high_watermark)}`` (each node's log as
``[(offset, epoch, type, payload)]``), ``workload`` a workloads/registry.py name,
``config`` the run config the checkers may read; ``valid`` True, False or "unknown",
``kinds`` the checkers that found anomalies. The harness registers one with
:func:`register` (harness/cli/simulate.py does, on import); :func:`get` returns it, or
None when none is registered (then only the invariants judge).
"""
from __future__ import annotations

from typing import Callable

Judge = Callable[[list, dict, str, dict], tuple[object, list]]
_JUDGE: list[Judge] = []


def register(judge: Judge) -> None:
    """Make ``judge`` the one :func:`get` returns."""
    _JUDGE[:] = [judge]


def get() -> Judge | None:
    """The registered judge, or None."""
    return _JUDGE[0] if _JUDGE else None
