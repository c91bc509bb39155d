"""Porcupine's kv logs (``test_data/kv/c*-ok.txt``, ``c*-bad.txt``).

One Jepsen op map per line, e.g. ``{:process 9, :type :invoke, :f :append,
:key "0", :value "x 9 0 y"}``; ``get`` returns the key's string, ``put`` and
``append`` return nothing. Read with porcupine's regular expressions (these
files are a fixed format, not general EDN). Times are event positions; an op
never completed is open to +infinity with an unknown output.
"""
from __future__ import annotations

import re
from pathlib import Path

from ..operation import Operation
from .calls import Calls
from .errors import FormatError
from .text import numbered_lines

_LINE = re.compile(r'^\{:process (\d+), :type :(invoke|ok), :f :(get|put|append), '
                   r':key "(.*?)", :value (nil|"(.*)")\}\s*$')


def read_kv_log(path: Path) -> list[Operation]:
    """Parse a kv log into kv ops (get, put, append) keyed by ``:key``.

    Raises :class:`FormatError` naming the line for a line of another shape or
    a completion with no open invoke.
    """
    calls = Calls(path)
    pos = 0
    for lineno, line in numbered_lines(path):
        m = _LINE.match(line)
        if not m:
            raise FormatError(path, lineno, f"not a kv op map: {line.strip()[:80]!r}")
        proc, typ, f, key = int(m.group(1)), m.group(2), m.group(3), m.group(4)
        value = None if m.group(5) == "nil" else m.group(6)
        pos += 1
        if typ == "invoke":
            calls.invoke(proc, f, pos, lineno, input=value, key=key)
        else:
            calls.complete(proc, typ, pos, lineno)["output"] = value if f == "get" else None
    return calls.operations()
