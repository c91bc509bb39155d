"""Open invocations by process, completed in place: how porcupine's log parsers pair events."""
from __future__ import annotations

import sys
from typing import Any

from ..operation import UNKNOWN, Operation
from .errors import FormatError


class Calls:
    """The ops of a line-oriented log, in invoke order (porcupine's ``procIdMap``).

    :meth:`invoke` opens an op for a process; :meth:`complete` returns the
    process's open op (a dict with ``f``, ``input``, ``output``, ``line``...)
    for the caller to fill in, stamping its return position. Ops never
    completed stay open to +infinity with an UNKNOWN output.
    """

    def __init__(self, path: Any):
        self.path = path
        self.ops: list[dict] = []
        self.open: dict[int, dict] = {}

    def invoke(self, proc: int, f: str, pos: int, line: int, input: Any = None, key: Any = None) -> None:
        """Open process ``proc``'s op ``f`` at event position ``pos`` (source ``line``)."""
        op = {"process": proc, "f": f, "key": key, "input": input, "output": UNKNOWN,
              "call": pos, "ret": None, "line": line}
        self.open[proc] = op
        self.ops.append(op)

    def complete(self, proc: int, typ: str, pos: int, line: int) -> dict:
        """Close ``proc``'s open op at position ``pos`` and return it; raises FormatError
        naming ``line`` when the process has no open op."""
        op = self.open.pop(proc, None)
        if op is None:
            raise FormatError(self.path, line, f":{typ} for process {proc} with no open invoke")
        op["ret"] = pos
        return op

    def operations(self) -> list[Operation]:
        """The ops, in invoke order (their ``f`` interned: the search core tells ops apart by it)."""
        return [Operation(process=o["process"], f=sys.intern(o["f"]), input=o["input"], output=o["output"],
                          call=o["call"], ret=o["ret"], key=o["key"], line=o["line"]) for o in self.ops]
