"""A FIFO queue (knossos ``fifo-queue``): ``enqueue v``; ``dequeue`` returns the head.

A dequeue that returned nil saw the queue empty. A crashed dequeue (output
UNKNOWN) removes the head if there is one.
"""
from __future__ import annotations

from typing import Hashable

from ..model import ILLEGAL, Model, describe_value
from ..operation import UNKNOWN, Operation


class FifoQueue(Model):
    """State: a tuple, head first."""

    name = "fifo-queue"
    functions = ("enqueue", "dequeue")

    def init(self) -> Hashable:
        return ()

    def step(self, state: Hashable, op: Operation) -> Hashable:
        if op.f == "enqueue":
            return state + (op.input,)
        if op.output is UNKNOWN:
            return state[1:]
        if op.output is None:
            return state if not state else ILLEGAL
        return state[1:] if state and state[0] == op.output else ILLEGAL

    def describe_op(self, op: Operation) -> str:
        if op.f == "enqueue":
            return f"enqueue({describe_value(op.input)})"
        return f"dequeue() -> {describe_value(op.output)}"

    def needs(self, op: Operation, state: Hashable) -> str:
        if op.output is None:
            return "the queue empty"
        return f"{describe_value(op.output)} at the head"

    def from_jepsen(self, f, invoke_value, ok_value, completed):
        if f == "enqueue":
            return None, f, invoke_value, None
        return None, f, None, (ok_value if completed else UNKNOWN)
