"""A log: ``append v`` returns the offset v landed at; ``read from F`` returns the log from F.

The model for the ``append`` workload. The state is the whole log, held as a
hash-consed persistent list (:class:`LogState`): appending is O(1), and two
equal logs are the same object, so states hash and compare in O(1). An
append whose output is an offset is legal only at exactly that offset; a
crashed append (output UNKNOWN) may land anywhere it is placed. A read's
output is the list of values at offsets ``[F, H)``, and is legal only when
the log ends at H and holds exactly those values there.
"""
from __future__ import annotations

from typing import Any, Hashable

from ..model import ILLEGAL, Model, ModelError, describe_value
from ..operation import UNKNOWN, Operation


class LogState:
    """An immutable log node: ``parent`` log plus one ``value``; ``length`` entries.

    Only :meth:`LogModel.append_to` makes them, so equal logs are identical
    objects (identity equality and hashing are exact).
    """

    __slots__ = ("parent", "value", "length", "__weakref__")

    def __init__(self, parent: "LogState | None", value: Any):
        self.parent = parent
        self.value = value
        self.length = 0 if parent is None else parent.length + 1

    def tail(self, start: int) -> list:
        """Values at offsets [start, length), oldest first."""
        out = []
        node = self
        while node.length > start:
            out.append(node.value)
            node = node.parent
        out.reverse()
        return out


class LogModel(Model):
    """Append-only log with offsets. Ops: ``append`` (input v, output offset) and
    ``read`` (input from-offset F, output the list of values at [F, H))."""

    name = "log"
    functions = ("append", "read")

    def __init__(self):
        self.root = LogState(None, None)
        self._children: dict[tuple[int, Any], LogState] = {}

    def append_to(self, log: LogState, value: Any) -> LogState:
        """The unique node for ``log + [value]``."""
        k = (id(log), value)
        node = self._children.get(k)
        if node is None:
            node = self._children[k] = LogState(log, value)
        return node

    def init(self) -> Hashable:
        return self.root

    def step(self, state: LogState, op: Operation) -> Hashable:
        if op.f == "append":
            if op.output is not UNKNOWN and op.output != state.length:
                return ILLEGAL
            return self.append_to(state, op.input)
        if op.output is UNKNOWN:
            return state
        start = op.input or 0
        if state.length != start + len(op.output):
            return ILLEGAL
        return state if state.tail(start) == list(op.output) else ILLEGAL

    def describe_op(self, op: Operation) -> str:
        if op.f == "append":
            return f"append({describe_value(op.input)}) -> {describe_value(op.output)}"
        if op.output is UNKNOWN:
            return f"read({op.input or 0}) -> ?"
        vals = list(op.output)
        shown = " ".join(describe_value(v) for v in vals[-5:])
        more = "... " if len(vals) > 5 else ""
        return f"read({op.input or 0}) -> [{more}{shown}] (ends at {(op.input or 0) + len(vals)})"

    def describe_state(self, state: LogState) -> str:
        last = " ".join(describe_value(v) for v in state.tail(max(0, state.length - 3)))
        return f"length {state.length}" + (f", ends ... {last}" if state.length else "")

    def needs(self, op: Operation, state: Hashable) -> str:
        if op.f == "append":
            return f"log length = {describe_value(op.output)}"
        return f"log length = {(op.input or 0) + len(op.output)} with these values at the end"

    def from_jepsen(self, f, invoke_value, ok_value, completed):
        if f == "append":
            out = UNKNOWN
            if completed:
                out = ok_value.get("offset") if isinstance(ok_value, dict) else ok_value
            v = invoke_value.get("value") if isinstance(invoke_value, dict) else invoke_value
            return None, f, v, out
        if f == "read":
            if isinstance(invoke_value, dict):
                start = invoke_value.get("from", 0)
            else:
                start = invoke_value or 0
            if not completed:
                return None, f, start, UNKNOWN
            if isinstance(ok_value, dict):
                return None, f, start, tuple(_record_value(r) for r in ok_value.get("records", []))
            return None, f, start, tuple(ok_value)
        raise ModelError(f"log has no function {f!r}: it knows append, read")


def _record_value(rec: Any) -> Any:
    """A read record ``[offset, epoch, type, payload]`` as the value the log holds there."""
    if isinstance(rec, (list, tuple)) and len(rec) == 4:
        _off, epoch, kind, payload = rec
        if kind == "data":
            return payload
        return ("control", kind, epoch)
    return rec
