"""The sequential specification a history is checked against.

A :class:`Model` is porcupine's ``Model`` (and knossos's): an initial state
and a deterministic ``step(state, op)`` that returns the next state, or
:data:`ILLEGAL` when the op's output is impossible from that state. States
must be hashable and compare by value: the search memoizes (linearized set,
state) pairs (Lowe) and keeps each model answer for a given (op, state).

A model may split a history into independent partitions (P-compositionality:
a history is linearizable iff each partition is, e.g. each key of a map), and
may split its state into components, one per key, each op acting on exactly
one, so a map searched without partitioning is a vector rather than a dict.
"""
from __future__ import annotations

from typing import Any, Hashable, Iterable

from .core import _wgl
from .operation import UNKNOWN, Operation


class _Illegal:
    __slots__ = ()

    def __repr__(self) -> str:
        return "ILLEGAL"


#: Returned by :meth:`Model.step` when the op cannot take effect in that state.
ILLEGAL = _Illegal()


class ModelError(ValueError):
    """An op the model cannot interpret (unknown ``f``, malformed value); names the op."""


def describe_value(v: Any) -> str:
    """Render a value the way Jepsen prints it: ``nil`` for None, ``?`` for UNKNOWN."""
    if v is None:
        return "nil"
    if v is UNKNOWN:
        return "?"
    if isinstance(v, str):
        return repr(v)
    if isinstance(v, tuple):
        return "[" + " ".join(describe_value(x) for x in v) + "]"
    return str(v)


class Model:
    """Base class: one partition, one component. Subclasses set ``name`` and implement
    :meth:`init`, :meth:`step`, :meth:`describe_op` and :meth:`needs`.

    Raises :class:`ModelError` from :meth:`validate` / :meth:`from_jepsen` for
    ops it cannot interpret.
    """

    name = "model"
    #: functions (``f``) this model understands
    functions: tuple[str, ...] = ()

    def init(self) -> Hashable:
        """The initial state."""
        raise NotImplementedError

    def step(self, state: Hashable, op: Operation) -> Hashable:
        """The state after ``op`` from ``state``, or :data:`ILLEGAL`."""
        raise NotImplementedError

    #: ``{f: kind}`` for ops the C core steps itself (kinds of :mod:`.native`: READ, WRITE,
    #: CAS, APPEND, the core picking the variant from the op's output); it must give what
    #: :meth:`step` would. None: every op goes through :meth:`step`.
    native_kinds: dict[str, int] | None = None

    # -- reports ---------------------------------------------------------
    def describe_op(self, op: Operation) -> str:
        """Short text for an op, e.g. ``read() -> 3``."""
        return f"{op.f}({describe_value(op.input)}) -> {describe_value(op.output)}"

    def describe_state(self, state: Hashable) -> str:
        """Short text for a state."""
        return describe_value(state)

    def needs(self, op: Operation, state: Hashable) -> str:
        """What ``op`` would need from the state to be placed (used for the stuck op)."""
        return "a state from which this op is legal"

    # -- history shape ---------------------------------------------------
    def validate(self, op: Operation) -> None:
        """Raise ModelError if ``op`` cannot be interpreted by this model."""
        if op.f not in self.functions:
            raise ModelError(f"model {self.name!r} has no function {op.f!r} (op at index "
                             f"{op.index}, line {op.line}); it knows {', '.join(self.functions)}")

    def from_jepsen(self, f: str, invoke_value: Any, ok_value: Any, completed: bool
                    ) -> tuple[Any, str, Any, Any]:
        """Map a Jepsen op (``f``, invoke ``value``, ok ``value``) to (key, f, input, output).

        ``completed`` is False for a crashed op (``info`` or no completion), whose
        output must become :data:`UNKNOWN`. Default: input is the invoke value and
        output the ok value.
        """
        return None, f, invoke_value, (ok_value if completed else UNKNOWN)

    def prepare(self, ops: list[Operation]) -> list[Operation]:
        """The ops to search, given the history's: default, the same list. A model may add
        ops the history implies but no client issued (the log's control records)."""
        return ops

    def partition(self, ops: list[Operation]) -> list[tuple[Any, list[Operation]]]:
        """Split into independent sub-histories ``[(key, ops)]``; default: one, key None."""
        return [(None, ops)]

    def components(self, ops: list[Operation]) -> tuple[list[Hashable], list[int]]:
        """(initial state of each component, component index of each op); default: one."""
        return [self.init()], [0] * len(ops)


def keyed_partition(ops: Iterable[Operation]) -> list[tuple[Any, list[Operation]]]:
    """Group ops by ``op.key`` (keys in order of first appearance, ops in their order)."""
    return _wgl.partition_by(ops, "key")
