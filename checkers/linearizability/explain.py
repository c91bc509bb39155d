"""Explains an illegal partition: its longest linearizable prefixes and the op that cannot follow.

The search is run again with bookkeeping on (porcupine's ``computeInfo``):
at every dead end it records the prefix it had linearized, per op the
longest prefix containing it, and overall the longest prefix with the op
whose return was reached before it could be placed (the stuck op) and the
state at that point. The result is the ``partitions[]`` element of the
``linearizability.html`` explanation (see :mod:`.html`).
"""
from __future__ import annotations

import time
from typing import Any

from .model import Model
from .operation import Operation
from .search import ILLEGAL_STATUS, RUNNING, PartitionSearch


def explain_partition(model: Model, ops: list[Operation], key: Any, components: bool,
                      max_steps: int = 50_000_000, max_s: float = 30.0) -> dict:
    """The explanation of one partition (``{"key", "valid", "initial_state", "ops",
    "linearizations", "largest", "stuck"}``), from a search with bookkeeping on.

    Gives up after ``max_steps`` steps or ``max_s`` seconds with ``valid``
    "unknown" and the longest prefix found so far (the partition was already
    found illegal; this only bounds the cost of explaining it).
    """
    s = PartitionSearch(model, ops, key=key, components=components, explain=True)
    deadline = time.monotonic() + max_s
    while (s.run(200_000) == RUNNING and s.stats()["steps"] < max_steps
           and time.monotonic() < deadline):
        pass
    ex = s.core.explanation()
    comp = s.comp
    described = [{"id": i, "process": o.process, "call": o.call, "return": o.ret,
                  "desc": model.describe_op(o), "index": o.index if o.index is not None else o.line}
                 for i, o in enumerate(ops)]

    def with_states(seq, states) -> list[dict]:
        return [{"id": i, "state": model.describe_state(st)} for i, st in zip(seq, states)]

    prefix = ex["prefix"]
    prefix_states = s.state_after(list(prefix))
    # the overall longest prefix first, then porcupine's per-op longest ones
    lins = [with_states(prefix, prefix_states)] + [with_states(seq, s.state_after(list(seq)))
                                                   for seq in ex["linearizations"]]
    largest = {str(k): v + 1 for k, v in ex["largest"].items()}
    for i in prefix:
        largest.setdefault(str(i), 0)
    stuck = None
    if ex["stuck"] >= 0:
        d = described[ex["stuck"]]
        c = comp[ex["stuck"]]
        st = s.initial[c]
        for i, after in zip(prefix, prefix_states):
            if comp[i] == c:
                st = after
        op = ops[ex["stuck"]]
        stuck = {"id": d["id"], "desc": d["desc"], "process": d["process"], "index": d["index"],
                 "state": model.describe_state(st), "needs": model.needs(op, st), "after": len(prefix)}
    valid = False if s.status == ILLEGAL_STATUS else "unknown"
    init = s.initial[comp[0]] if ops else model.init()
    return {"key": key, "valid": valid, "initial_state": model.describe_state(init), "ops": described,
            "linearizations": lins, "largest": largest, "stuck": stuck}
