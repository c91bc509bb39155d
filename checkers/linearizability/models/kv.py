"""A key-value map: each key a cas-register, plus porcupine's ``append``.

Functions: ``get``/``read`` (output the value), ``put``/``write``, ``cas
[old new]`` and ``append`` (string concatenation, porcupine's kv test). The
initial value of every key is ``initial`` (nil; porcupine's kv logs use
``""``). Checked per key by default (P-compositionality); without
partitioning the state is the whole map, one component per key.
Jepsen's independent-key ops carry ``value`` = ``[key, v]``.
"""
from __future__ import annotations

from typing import Any, Hashable

from .. import native as N
from ..model import Model, ModelError, describe_value, keyed_partition
from ..operation import Operation
from .register import (REGISTER_KINDS, register_describe, register_from_jepsen, register_needs,
                       register_step)


class KeyValue(Model):
    """Map of registers; ``by_key`` ops carry ``op.key``. Initial value ``initial`` per key."""

    name = "kv"
    functions = ("get", "read", "put", "write", "cas", "append")

    def __init__(self, initial: Any = None):
        self.initial = initial

    def init(self) -> Hashable:
        return self.initial

    def step(self, state: Hashable, op: Operation) -> Hashable:
        if op.f == "append":
            return (state or "") + op.input
        return register_step(state, op.f, op.input, op.output)

    native_kinds = {**REGISTER_KINDS, "append": N.APPEND}

    def describe_op(self, op: Operation) -> str:
        if op.f == "append":
            return f"append({describe_value(op.key)}, {describe_value(op.input)})"
        return register_describe(op.f, op.input, op.output, key=op.key)

    def needs(self, op: Operation, state: Hashable) -> str:
        return register_needs(op.f, op.input, op.output, state)

    def from_jepsen(self, f, invoke_value, ok_value, completed):
        if not isinstance(invoke_value, (tuple, list)) or len(invoke_value) != 2:
            raise ModelError(f"kv op value must be [key value], got {invoke_value!r}")
        key = invoke_value[0]
        inner_ok = ok_value[1] if completed and isinstance(ok_value, (tuple, list)) and len(ok_value) == 2 else None
        if f == "append":
            return key, f, invoke_value[1], None
        f, inp, out = register_from_jepsen(f, invoke_value[1], inner_ok, completed)
        return key, f, inp, out

    def partition(self, ops: list[Operation]) -> list[tuple[Any, list[Operation]]]:
        return keyed_partition(ops)

    def components(self, ops: list[Operation]) -> tuple[list[Hashable], list[int]]:
        index: dict[Any, int] = {}
        comp = [index.setdefault(op.key, len(index)) for op in ops]
        return [self.initial] * max(1, len(index)), comp
