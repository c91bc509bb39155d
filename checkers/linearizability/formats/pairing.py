"""Jepsen histories to operations: pair each invoke with its completion by process.

Jepsen's rules: ``ok`` completes the invoke with its value; ``fail`` means the
op did not happen, so both are dropped; ``info`` (or no completion at all)
leaves the op open to +infinity with an unknown output. Nemesis ops (process
``nemesis``) and functions the model does not know are set aside and counted.
"""
from __future__ import annotations

import dataclasses
import sys
from collections import Counter
from typing import Any, Iterable

from history import NEMESIS, OP_TYPES, HistoryError, pair_ops

from ..model import Model, ModelError
from ..operation import Operation
from .errors import FormatError


@dataclasses.dataclass
class Paired:
    """The result of pairing: ``ops`` for the search, and what was set aside.

    ``ignored``: count of set-aside events by ``f``; ``failed``: number of
    ``fail`` completions dropped; ``crashed``: number of ops left open;
    ``timed``: call/ret are ns (``time``) rather than event positions;
    ``unknown``: count of client events (not nemesis) of functions the model
    does not know and the format does not expect beside its model's ops, by
    ``f`` (a history with any cannot be judged valid).
    """

    ops: list[Operation]
    ignored: Counter
    failed: int = 0
    timed: bool = False
    unknown: Counter = dataclasses.field(default_factory=Counter)

    @property
    def crashed(self) -> int:
        """The number of ops left open (``info`` or never completed)."""
        return sum(o.crashed for o in self.ops)


def pair_history(events: Iterable[tuple[int | None, dict]], model: Model, path: Any,
                 side: Iterable[str] = ()) -> Paired:
    """Pair Jepsen op maps into :class:`Operation`s for ``model``.

    ``events``: (source line, op map) in history order; an op map has
    ``type``, ``process``, ``f``, ``value`` and optionally ``time`` (ns) and
    ``index``. Times are ``time`` when every client op has one, else the
    event's position. ``side``: functions the format's histories hold beside
    the model's ops (not counted as unknown). Raises :class:`FormatError` naming the line for a
    missing field, an unknown type, a completion with no invoke or of another
    ``f``, a second invoke while one is open (pairing is
    ``history.pair_ops``), or a value the model cannot read.
    """
    client = []
    ignored: Counter = Counter()
    unknown: Counter = Counter()
    side = frozenset(side)
    for line, e in events:
        if e.get("process") != NEMESIS and e.get("f") in model.functions:
            client.append((line, e))
        else:
            ignored[str(e.get("f"))] += 1
            if e.get("process") != NEMESIS and e.get("f") not in side:
                unknown[str(e.get("f"))] += 1
    timed = all(isinstance(e.get("time"), int) for _l, e in client)
    line_of = {id(e): line for line, e in client}
    pos_of = {id(e): pos for pos, (_line, e) in enumerate(client)}
    for line, e in client:
        for field in ("type", "process", "f"):
            if field not in e:
                raise FormatError(path, line, f"op has no {field!r} field: {e!r}")
        if e["type"] not in OP_TYPES:
            raise FormatError(path, line, f"unknown op type {e['type']!r}: expected invoke, ok, fail or info")
    try:
        pairs = pair_ops([e for _line, e in client], name=lambda op: f"line {line_of[id(op)]}")
    except HistoryError as err:
        raise FormatError(path, line_of[id(err.op)], err.reason) from None

    def make(inv: dict, done: dict | None) -> Operation:
        line, completed = line_of[id(inv)], done is not None and done["type"] == "ok"
        try:
            key, f, inp, out = model.from_jepsen(inv["f"], inv.get("value"),
                                                 done.get("value") if completed else None, completed)
        except ModelError as e:
            raise FormatError(path, line, f"op {inv.get('f')!r} with value {inv.get('value')!r}: {e}") from None
        if not completed:
            ret = None
        else:
            ret = done["time"] if timed else pos_of[id(done)]
        return Operation(process=inv["process"], f=sys.intern(f) if type(f) is str else f,
                         input=inp, output=out,
                         call=inv["time"] if timed else pos_of[id(inv)], ret=ret,
                         key=key, index=inv.get("index"), line=line)

    ops = [make(inv, done) for inv, done in pairs if done is None or done["type"] != "fail"]
    failed = sum(1 for _inv, done in pairs if done is not None and done["type"] == "fail")
    ops.sort(key=lambda o: (o.call, o.line or 0))
    return Paired(ops=ops, ignored=ignored, failed=failed, timed=timed, unknown=unknown)
