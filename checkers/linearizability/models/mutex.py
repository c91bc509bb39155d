"""A mutex (knossos ``mutex``): ``acquire`` needs it free, ``release`` needs it held."""
from __future__ import annotations

from typing import Hashable

from ..model import ILLEGAL, Model
from ..operation import Operation


class Mutex(Model):
    """State: True when held. Outputs are ignored (an acquire that returned ok took the lock)."""

    name = "mutex"
    functions = ("acquire", "release")

    def init(self) -> Hashable:
        return False

    def step(self, state: Hashable, op: Operation) -> Hashable:
        if op.f == "acquire":
            return ILLEGAL if state else True
        return False if state else ILLEGAL

    def describe_op(self, op: Operation) -> str:
        return f"{op.f}()"

    def describe_state(self, state: Hashable) -> str:
        return "held" if state else "free"

    def needs(self, op: Operation, state: Hashable) -> str:
        return "the mutex free" if op.f == "acquire" else "the mutex held"
