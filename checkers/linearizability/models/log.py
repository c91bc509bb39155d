"""A log: ``append v`` returns the offset v landed at; ``read from F`` returns the log from F.

The model for the ``append`` workload. The state is the whole log, held as a
hash-consed persistent list (:class:`LogState`): appending is O(1), and two
equal logs are the same object, so states hash and compare in O(1). An
append whose output is an offset is legal only at exactly that offset; a
crashed append (output UNKNOWN) may land anywhere it is placed. A read's
output is the list of values at offsets ``[F, H)``, and is legal only when
the log ends at H and holds exactly those values there.

Records no client appended (KRaft's LeaderChange control records) show up
in reads; :meth:`LogModel.prepare` adds an append for each, at its offset,
open from the start of the history until the first read that returned it.
Two different records seen at one offset then cannot both be placed.
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any, Hashable

from ..model import ILLEGAL, Model, ModelError, describe_value
from ..operation import UNKNOWN, Operation


#: key of a read that is not linearizable by design (the final per-node reads); dropped
NON_LINEARIZABLE = "non-linearizable-read"


class LogState:
    """An immutable log node: ``parent`` log plus one ``value``; ``length`` entries.

    Only :meth:`LogModel.append_to` makes them, so equal logs are identical
    objects (identity equality and hashing are exact).
    """

    __slots__ = ("parent", "value", "length")

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

    def prepare(self, ops: list[Operation]) -> list[Operation]:
        """The ops to search: ``ops`` without non-linearizable reads, plus one append per
        distinct control record seen by a read (see module doc).

        A crashed append whose value a read shows at offset O, and that no other
        append shares, gets O as its output. A crashed append whose value no read
        shows is dropped when reads and acknowledged appends account for every
        offset below the highest one any op names: it cannot sit at a shown
        offset (a read fixes what is there), so it could only land above them
        all, where placing it last is always legal and changes no verdict.
        """
        ops = [o for o in ops if o.key != NON_LINEARIZABLE]
        start = min((o.call for o in ops), default=0)
        at: dict[Any, int] = {}                  # value -> first offset a read shows it at
        control: dict[tuple[int, Any], int] = {}  # (offset, record) -> first return showing it
        covered: set[int] = set()
        appended = Counter(o.input for o in ops if o.f == "append")
        for o in ops:
            if o.f == "read" and o.output is not UNKNOWN:
                base = o.input or 0
                covered.update(range(base, base + len(o.output)))
                for j, v in enumerate(o.output, start=base):
                    at.setdefault(v, j)
                    if isinstance(v, tuple) and v and v[0] == "control":
                        control[(j, v)] = min(control.get((j, v), o.ret), o.ret)
            elif o.f == "append" and o.output is not UNKNOWN:
                covered.add(o.output)
        all_covered = len(covered) == max(covered, default=-1) + 1
        resolved = []
        for o in ops:
            if o.f == "append" and o.output is UNKNOWN:
                if o.input not in at:
                    if all_covered:
                        continue
                elif appended[o.input] == 1:
                    o = dataclasses.replace(o, output=at[o.input])
            resolved.append(o)
        return resolved + [Operation(process="control", f="append", input=v, output=off, call=start, ret=ret)
                           for (off, v), ret in sorted(control.items(), key=lambda kv: kv[0][0])]

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
            key = None
            if isinstance(invoke_value, dict):
                start = invoke_value.get("from", 0)
                if invoke_value.get("linearizable") is False:
                    key = NON_LINEARIZABLE
            else:
                start = invoke_value or 0
            if not completed:
                return key, f, start, UNKNOWN
            if isinstance(ok_value, dict):
                return key, f, start, tuple(_record_value(r) for r in ok_value.get("records", []))
            return key, f, start, tuple(ok_value)
        raise ModelError(f"log has no function {f!r}: it knows append, read")


def _record_value(rec: Any) -> Any:
    """A read record ``[offset, epoch, type, payload]`` as the value the log holds there."""
    if isinstance(rec, (list, tuple)) and len(rec) == 4:
        _off, epoch, kind, payload = rec
        if kind == "data":
            return payload
        return ("control", kind, epoch)
    return rec
