"""The judge of a simulated history: our checkers, the same as a real run's (checkers/), handed
in by the caller since ``sim/`` sits below ``checkers/``.

A judge is ``judge(ops, nodes, workload, config) -> (valid, kinds)``: ``ops`` the history
(list of op dicts), ``nodes`` ``{name: (records, high_watermark)}`` (each node's log as
``[(offset, epoch, type, payload)]``), ``workload`` a workloads/registry.py name,
``config`` the run config the checkers may read; ``valid`` True, False or "unknown",
``kinds`` the checkers that found anomalies. It is a parameter of :func:`sim.api.simulate`,
:func:`sim.api.run_seed`, :func:`sim.api.shrink_and_export` and
:func:`sim.schedule.run_schedule` (None: only the invariants judge). Seeds that run in
worker processes get it pickled by name: it must be a module-level function.
"""
from __future__ import annotations

from typing import Callable

#: ``judge(ops, nodes, workload, config) -> (valid, kinds)`` (the module docstring)
Judge = Callable[[list, dict, str, dict], tuple[object, list]]
