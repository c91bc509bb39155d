"""Jepsen histories to operations: pair each invoke with its completion by process.

Jepsen's rules: ``ok`` completes the invoke with its value; ``fail`` means the
op did not happen, so both are dropped; ``info`` (or no completion at all)
leaves the op open to +infinity with an unknown output. Nemesis ops (process
``nemesis``) and functions the model does not know are set aside and counted.
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any, Iterable

from ..model import Model, ModelError
from ..operation import Operation
from .errors import FormatError


@dataclasses.dataclass
class Paired:
    """The result of pairing: ``ops`` for the search, and what was set aside.

    ``ignored``: count of set-aside events by ``f``; ``failed``: number of
    ``fail`` completions dropped; ``crashed``: number of ops left open;
    ``timed``: call/ret are ns (``time``) rather than event positions.
    """

    ops: list[Operation]
    ignored: Counter
    failed: int = 0
    crashed: int = 0
    timed: bool = False


def pair_history(events: Iterable[tuple[int | None, dict]], model: Model, path: Any,
                 use_time: bool = True) -> Paired:
    """Pair Jepsen op maps into :class:`Operation`s for ``model``.

    ``events``: (source line, op map) in history order; an op map has
    ``type``, ``process``, ``f``, ``value`` and optionally ``time`` (ns) and
    ``index``. Times are ``time`` when every client op has one and
    ``use_time``, else the event's position. Raises :class:`FormatError`
    naming the line for a missing field, an unknown type, a completion with
    no invoke, a second invoke while one is open, or a value the model cannot
    read.
    """
    events = list(events)
    client = [(line, e) for line, e in events
              if e.get("process") != "nemesis" and e.get("f") in model.functions]
    ignored = Counter(str(e.get("f")) for _line, e in events
                      if not (e.get("process") != "nemesis" and e.get("f") in model.functions))
    timed = use_time and all(isinstance(e.get("time"), int) for _l, e in client)
    open_: dict[Any, tuple[int, int | None, dict]] = {}
    ops: list[Operation] = []
    failed = crashed = 0

    def make(pos: int, line, inv: dict, done: dict | None, ret: int | None) -> Operation:
        completed = done is not None
        try:
            key, f, inp, out = model.from_jepsen(inv["f"], inv.get("value"),
                                                 done.get("value") if done else None, completed)
        except ModelError as e:
            raise FormatError(path, line, f"op {inv.get('f')!r} with value {inv.get('value')!r}: {e}") from None
        call = inv["time"] if timed else pos
        return Operation(process=inv["process"], f=f, input=inp, output=out, call=call, ret=ret,
                         key=key, index=inv.get("index"), line=line)

    for pos, (line, e) in enumerate(client):
        for field in ("type", "process", "f"):
            if field not in e:
                raise FormatError(path, line, f"op has no {field!r} field: {e!r}")
        t, p = e["type"], e["process"]
        if t == "invoke":
            if p in open_:
                prev_pos, prev_line, prev = open_.pop(p)
                raise FormatError(path, line, f"process {p!r} invokes again while its op from line "
                                  f"{prev_line} is still open (a process runs one op at a time)")
            open_[p] = (pos, line, e)
        elif t in ("ok", "fail", "info"):
            if p not in open_:
                raise FormatError(path, line, f"{t} for process {p!r} with no open invoke")
            ipos, iline, inv = open_.pop(p)
            if t == "fail":
                failed += 1
            elif t == "ok":
                ops.append(make(ipos, iline, inv, e, e["time"] if timed else pos))
            else:
                crashed += 1
                ops.append(make(ipos, iline, inv, None, None))
        else:
            raise FormatError(path, line, f"unknown op type {t!r}: expected invoke, ok, fail or info")
    for p, (ipos, iline, inv) in open_.items():
        crashed += 1
        ops.append(make(ipos, iline, inv, None, None))
    ops.sort(key=lambda o: (o.call, o.line or 0))
    return Paired(ops=ops, ignored=ignored, failed=failed, crashed=crashed, timed=timed)
