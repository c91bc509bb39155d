"""Register models: Jepsen's cas-register (read, write, cas) on one value.

Semantics (knossos ``cas-register``, porcupine's etcd model): the initial
value is nil (``None``), so a read of nil is a read of the initial value;
``write v`` sets v; ``cas [a b]`` sets b if the value is a. A cas whose
output is False (porcupine's etcd logs: the cas ran and its compare failed)
is legal only when the value is not a, and changes nothing. A crashed op
(output UNKNOWN) may have done either: a read accepts any value, a cas
applies if it can and is otherwise a no-op.
"""
from __future__ import annotations

from typing import Any, Hashable

from .. import native as N
from ..model import ILLEGAL, Model, ModelError, describe_value
from ..operation import UNKNOWN, Operation

READS = ("read", "get")
WRITES = ("write", "put")


def register_step(state: Hashable, f: str, inp: Any, out: Any) -> Hashable:
    """One step of a cas-register on ``state`` (shared by the keyed models)."""
    if f in READS:
        return state if out is UNKNOWN or out == state else ILLEGAL
    if f in WRITES:
        return inp
    if f == "cas":
        a, b = inp
        if out is False:
            return state if state != a else ILLEGAL
        if state == a:
            return b
        return state if out is UNKNOWN else ILLEGAL
    raise ModelError(f"register has no function {f!r}")


#: the C core's kinds for register ops (see :mod:`..native`): same semantics as :func:`register_step`
REGISTER_KINDS = {"read": N.READ, "get": N.READ, "write": N.WRITE, "put": N.WRITE, "cas": N.CAS}


def register_needs(f: str, inp: Any, out: Any, state: Hashable) -> str:
    """What a register op needs (for the stuck-op report)."""
    if f in READS:
        return f"value = {describe_value(out)}"
    if f == "cas":
        a = inp[0]
        return f"value != {describe_value(a)}" if out is False else f"value = {describe_value(a)}"
    return "nothing (a write is always legal)"


#: ``register_describe``'s ``key`` when there is none (a key may be None, shown as nil)
NO_KEY = object()


def register_describe(f: str, inp: Any, out: Any, key: Any = NO_KEY) -> str:
    """``read() -> 3``, ``write(3)``, ``cas(1, 2) -> ok``; with ``key`` first among the
    arguments: ``read('x') -> 3``, ``write('x', 3)``."""
    def args(*values: Any) -> str:
        return ", ".join(describe_value(v) for v in ((key,) if key is not NO_KEY else ()) + values)

    if f in READS:
        return f"{f}({args()}) -> {describe_value(out)}"
    if f in WRITES:
        return f"{f}({args(inp)})"
    if f == "cas":
        res = {True: "ok", False: "fail"}.get(out, "?") if out is not None else "ok"
        return f"cas({args(inp[0], inp[1])}) -> {res}"
    return f"{f}({args(inp)}) -> {describe_value(out)}"


def register_from_jepsen(f: str, invoke_value: Any, ok_value: Any, completed: bool,
                         ) -> tuple[str, Any, Any]:
    """(f, input, output) of a Jepsen register op; raises ModelError for a malformed cas."""
    if f in READS:
        return f, None, (ok_value if completed else UNKNOWN)
    if f in WRITES:
        return f, invoke_value, None
    if f == "cas":
        v = ok_value if completed and ok_value is not None else invoke_value
        if not isinstance(v, (tuple, list)) or len(v) != 2:
            raise ModelError(f"cas value must be [old new], got {v!r}")
        return f, tuple(v), (True if completed else UNKNOWN)
    raise ModelError(f"register has no function {f!r}: it knows read, write, cas")


class CasRegister(Model):
    """A compare-and-set register (knossos ``cas-register``). Initial value ``initial`` (nil)."""

    name = "register"
    functions = ("read", "write", "cas", "get", "put")

    def __init__(self, initial: Any = None):
        self.initial = initial

    def init(self) -> Hashable:
        return self.initial

    def step(self, state: Hashable, op: Operation) -> Hashable:
        return register_step(state, op.f, op.input, op.output)

    native_kinds = REGISTER_KINDS

    def describe_op(self, op: Operation) -> str:
        return register_describe(op.f, op.input, op.output)

    def needs(self, op: Operation, state: Hashable) -> str:
        return register_needs(op.f, op.input, op.output, state)

    def from_jepsen(self, f, invoke_value, ok_value, completed):
        f, inp, out = register_from_jepsen(f, invoke_value, ok_value, completed)
        return None, f, inp, out
