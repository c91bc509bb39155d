"""Checks a history for linearizability: partitions searched interleaved, first illegal one wins.

Porcupine's ``checkParallel``, in one process: each partition (P-compositionality,
e.g. each key) gets its own search (the C core, :func:`~.search.new_core`,
built when it first runs); they run in round-robin slices, smallest first,
so a small illegal partition is found before a huge legal one is finished
(porcupine's ``c50-bad`` has a partition whose search alone fills 24 GiB).
The check stops at the first illegal partition, at the timeout, or when the
searches together hold more than the memory bound; the last two give the
verdict ``unknown``.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import time
from operator import attrgetter
from typing import Any

from .explain import explain_partition
from .model import ILLEGAL, Model
from .operation import UNKNOWN, Operation
from .search import ILLEGAL_STATUS, OK, RUNNING, Search, check_times

_F = attrgetter("f")
_VERDICT = {OK: True, ILLEGAL_STATUS: False}

#: steps each running partition gets in the first round; doubled every round
FIRST_SLICE = 2_000
#: the largest slice (steps)
MAX_SLICE = 200_000


@functools.cache
def default_memory_bound() -> int:
    """Half the machine's physical memory, in bytes (8 GiB if it cannot be read)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError, AttributeError):
        return 8 << 30


@dataclasses.dataclass
class CheckResult:
    """The verdict and what supports it.

    ``valid``: True, False or "unknown". ``reason``: why unknown (timeout,
    memory) or None. ``partitions``: per partition ``{"key", "ops",
    "valid", "steps", "cache_entries"}``. ``explanations``: for each illegal
    partition, the explanation (see :func:`.explain.explain_partition`).
    ``check_s``: seconds spent searching (parsing excluded).
    """

    valid: Any
    reason: str | None
    partitions: list[dict]
    explanations: list[dict]
    check_s: float
    model: str

    def summary(self) -> dict:
        """The JSON-able summary for results.json (no full linearizations)."""
        anomalies = []
        for ex in self.explanations:
            stuck = ex.get("stuck")
            anomalies.append({"key": ex["key"], "linearized_prefix": len(ex["linearizations"][0])
                              if ex["linearizations"] else 0,
                              "op": stuck, "state": stuck and stuck.get("state"),
                              "needs": stuck and stuck.get("needs")})
        return {"valid": self.valid, "reason": self.reason, "model": self.model,
                "partitions": len(self.partitions),
                "ops": sum(p["ops"] for p in self.partitions),
                "illegal_partitions": [p["key"] for p in self.partitions if p["valid"] is False],
                "anomalies": anomalies, "check_s": round(self.check_s, 6)}


def check_operations(model: Model, ops: list[Operation], partitioned: bool = True,
                     timeout_s: float | None = None, memory_bound: int | None = None,
                     explain: bool = True) -> CheckResult:
    """Check ``ops`` against ``model``.

    ``partitioned``: split with ``model.partition`` (else one search over the
    whole history, the state a vector of the model's components).
    ``timeout_s``: give up with "unknown" after this many seconds (None:
    never). ``memory_bound``: bytes the searches may hold together (default
    :func:`default_memory_bound`). ``explain``: re-run an illegal partition
    to record its longest linearizable prefixes. Raises ValueError for an op
    that returns before its call, and whatever the model raises.
    """
    t0 = time.perf_counter()
    bound = memory_bound or default_memory_bound()
    deadline = None if timeout_s is None else t0 + timeout_s
    ops = model.prepare(ops)
    known = set(model.functions)
    if not known.issuperset(map(_F, ops)):
        for op in ops:
            if op.f not in known:
                model.validate(op)  # raises, naming the op
    groups = model.partition(ops) if partitioned else [(None, ops)]
    initial, comp = model.components(ops) if not partitioned else ([model.init()], None)
    core_args = (comp, initial, model.step, ILLEGAL, False, model.native_kinds, UNKNOWN)  # new_core's
    # Cores are built when first run: a small illegal partition found early spares the rest.
    cores: list[Any] = [None] * len(groups)
    status = [RUNNING] * len(groups)
    counts = [(0, 0)] * len(groups)  # (steps, cache entries) of the finished searches
    held = [0] * len(groups)  # bytes per search, updated after its slice
    running = sorted(range(len(groups)), key=[len(g) for _, g in groups].__getitem__)
    total = 0
    reason = None
    failed: int | None = None
    slice_steps = FIRST_SLICE
    while running and failed is None and reason is None:
        still = []
        for i in running:
            core = cores[i]
            if core is None:
                core = cores[i] = Search(groups[i][1], *core_args)
            st = status[i] = core.run(slice_steps)
            if st == RUNNING:
                still.append(i)
                now = core.memory()
            elif st == OK:  # linearizable: its memory is no longer needed
                counts[i] = (core.steps, core.cache_entries)
                cores[i] = None
                now = 0
            else:
                failed = i
                break
            if now != held[i]:
                total += now - held[i]
                held[i] = now
            if deadline is not None and time.perf_counter() > deadline:
                reason = f"timed out after {timeout_s:g} s"
                break
            if total > bound:
                reason = f"the search outgrew the memory bound of {bound / 2**30:.1f} GiB"
                break
        else:
            running = still
            slice_steps = min(MAX_SLICE, slice_steps * 2)
    if failed is not None or reason is not None:
        for i in running:
            if cores[i] is None:  # never searched: still refuse an op that returns before its call
                check_times(groups[i][1])
    check_s = time.perf_counter() - t0
    parts = []
    for i, (key, group) in enumerate(groups):
        core = cores[i]
        if core is not None:
            counts[i] = (core.steps, core.cache_entries)
            cores[i] = None  # free the caches before explaining (it searches afresh)
        parts.append({"key": key, "ops": len(group), "valid": _VERDICT.get(status[i], "unknown"),
                      "steps": counts[i][0], "cache_entries": counts[i][1]})
    # failed and reason are never both set: the loop stops at whichever comes first
    if failed is not None:
        valid: Any = False
    elif reason is not None:
        valid = "unknown"
    else:
        valid = True
    explanations = []
    if failed is not None and explain:
        key, group = groups[failed]
        explanations.append(explain_partition(model, group, key, not partitioned))
    return CheckResult(valid=valid, reason=reason, partitions=parts, explanations=explanations,
                       check_s=check_s, model=model.name)
