"""Porcupine's Jepsen etcd logs (``test_data/jepsen/etcd_NNN.log``), read as porcupine reads them.

Lines look like ``INFO  jepsen.util - 3	:invoke	:cas	[3 0]``. Following
porcupine's ``parseJepsenLog``: an invoke opens an op; ``:ok`` closes it
with its value; ``:fail :cas`` closes it as a cas that ran and found another
value (output False); ``:fail :read :timed-out`` closes it with an unknown
output; ``:info`` lines leave the op open; ops still open at the end of the
file complete after every other event with an unknown output. Times are
event positions.
"""
from __future__ import annotations

import re
from pathlib import Path

from ..operation import UNKNOWN, Operation
from .calls import Calls
from .errors import FormatError
from .text import numbered_lines

_LINE = re.compile(r"^INFO\s+jepsen\.util\s+-\s+(\d+)\s+:(\w+)\s+:([\w-]+)\s+(.*?)\s*$")
_INT = re.compile(r"^-?\d+$")
_PAIR = re.compile(r"^\[(-?\d+)\s+(-?\d+)\]$")


def _value(path, lineno, text: str):
    if text == "nil":
        return None
    if _INT.match(text):
        return int(text)
    m = _PAIR.match(text)
    if m:
        return (int(m.group(1)), int(m.group(2)))
    if text == ":timed-out":
        return UNKNOWN
    raise FormatError(path, lineno, f"cannot read value {text!r}: expected nil, an int, [a b] or :timed-out")


def read_jepsen_log(path: Path) -> list[Operation]:
    """Parse an etcd Jepsen log into register ops (read, write, cas).

    Raises :class:`FormatError` naming the line for a line that is not a
    ``jepsen.util`` op line, an unknown function, or a completion with no
    open invoke.
    """
    calls = Calls(path)
    pos = 0
    for lineno, line in numbered_lines(path):
        m = _LINE.match(line)
        if not m:
            raise FormatError(path, lineno, f"not a Jepsen op line: {line.strip()[:80]!r}")
        proc, typ, f, text = int(m.group(1)), m.group(2), m.group(3), m.group(4)
        if f not in ("read", "write", "cas"):
            raise FormatError(path, lineno, f"unknown function :{f}: expected :read, :write or :cas")
        value = _value(path, lineno, text)
        pos += 1
        if typ == "invoke":
            if f == "cas" and not isinstance(value, tuple):
                raise FormatError(path, lineno, f"cas needs [old new], got {text!r}")
            calls.invoke(proc, f, pos, lineno, input=value if f != "read" else None)
            continue
        if typ == "info":
            continue  # stays open (porcupine ignores :info lines)
        if typ not in ("ok", "fail"):
            raise FormatError(path, lineno, f"unknown op type :{typ}")
        op = calls.complete(proc, typ, pos, lineno)
        if op["f"] != f:
            raise FormatError(path, lineno, f":{typ} :{f} completes process {proc}'s :{op['f']} "
                              f"from line {op['line']}")
        if typ == "fail":
            if f == "cas":
                op["output"] = False
            elif f == "read" and value is UNKNOWN:
                op["output"] = UNKNOWN
            else:
                raise FormatError(path, lineno, f":fail :{f} {text}: porcupine's format has only "
                                  ":fail :cas and :fail :read :timed-out")
        else:
            op["output"] = value if f == "read" else (True if f == "cas" else None)
    return calls.operations()
