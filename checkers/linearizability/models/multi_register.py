"""A multi-register (knossos ``multi-register``): transactions over several registers.

An op is ``txn`` with a value of micro-ops ``[[f k v] ...]``, ``f`` being
``r`` (read: ``v`` is what it saw, nil = the initial value) or ``w`` (write).
The state is the map of written registers, held as a sorted tuple of
``(key, value)`` pairs so it can be hashed. A crashed txn's reads accept
anything and its writes may or may not have happened (it is open forever).
"""
from __future__ import annotations

from typing import Hashable

from ..model import ILLEGAL, Model, ModelError, describe_value
from ..operation import UNKNOWN, Operation


class MultiRegister(Model):
    """State: tuple of (key, value) pairs sorted by key; absent keys are nil."""

    name = "multi-register"
    functions = ("txn", "read", "write")

    def init(self) -> Hashable:
        return ()

    def step(self, state: Hashable, op: Operation) -> Hashable:
        regs = dict(state)
        crashed = op.output is UNKNOWN
        for i, (f, k, v) in enumerate(op.input):
            if f == "r":
                seen = UNKNOWN if crashed else op.output[i][2]
                if seen is not UNKNOWN and regs.get(k) != seen:
                    return ILLEGAL
            else:
                regs[k] = v
        return tuple(sorted(regs.items(), key=lambda kv: repr(kv[0])))

    def describe_op(self, op: Operation) -> str:
        micro = op.output if isinstance(op.output, tuple) else op.input
        return "txn " + " ".join(f"[{f} {describe_value(k)} {describe_value(v)}]" for f, k, v in micro)

    def describe_state(self, state: Hashable) -> str:
        return "{" + ", ".join(f"{describe_value(k)} {describe_value(v)}" for k, v in state) + "}"

    def needs(self, op: Operation, state: Hashable) -> str:
        if not isinstance(op.output, tuple):
            return "nothing"
        return ", ".join(f"{describe_value(k)} = {describe_value(v)}" for f, k, v in op.output if f == "r")

    def from_jepsen(self, f, invoke_value, ok_value, completed):
        if f not in self.functions:
            raise ModelError(f"multi-register has no function {f!r}: it knows txn, read, write")
        src = ok_value if completed and ok_value is not None else invoke_value
        try:
            micro = tuple((str(m[0]), m[1], m[2]) for m in src)
        except (TypeError, IndexError) as e:
            raise ModelError(f"multi-register value must be [[f k v] ...], got {src!r}") from e
        inp = tuple((mf, k, v if mf == "w" else None) for mf, k, v in micro)
        return None, "txn", inp, (micro if completed else UNKNOWN)
