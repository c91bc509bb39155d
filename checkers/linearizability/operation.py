"""Operations as the linearizability checker sees them: closed intervals with an input and an output.

Every format (``history.jsonl``, Jepsen ``history.edn``, porcupine's test
logs) is turned into a list of :class:`Operation` before the search. The
semantics are porcupine's and Jepsen's:

* an op is the closed interval ``[call, ret]``; when a call and a return
  share a time, the call sorts first (the ops overlap);
* a ``fail`` op never happened and is dropped before it gets here;
* an ``info`` (crashed) op, or one never completed, has ``ret = None``: it
  stays open to +infinity and may or may not take effect. Its output is
  :data:`UNKNOWN`.
"""
from __future__ import annotations

import dataclasses
from typing import Any


class _Unknown:
    """The output of an op whose result was never seen (crashed, timed out)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __reduce__(self):  # pickles as the singleton (process pools)
        return "UNKNOWN"


#: Output of an op that crashed or timed out: any result is acceptable.
UNKNOWN = _Unknown()


@dataclasses.dataclass(frozen=True, slots=True)
class Operation:
    """One op of a history, ready for the search.

    ``process``: Jepsen process (int) or client id. ``f``: the function name
    (``read``, ``write``, ``cas``, ``get``, ``put``, ``append``, ...).
    ``key``: the partition key (kv and multi-key models), else ``None``.
    ``input``: the invoke's argument; ``output``: the completion's result or
    :data:`UNKNOWN`. ``call`` / ``ret``: times (ns since test start, or the
    event position for formats without times); ``ret`` is ``None`` for an op
    open to +infinity. ``index``: the invoke's history index and ``line``:
    its line in the source file (both for reports; may be ``None``).
    """

    process: Any
    f: str
    input: Any
    output: Any
    call: int
    ret: int | None
    key: Any = None
    index: int | None = None
    line: int | None = None

    @property
    def crashed(self) -> bool:
        """True when the op is open to +infinity (``info`` or never completed)."""
        return self.ret is None
