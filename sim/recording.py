"""A Jepsen history in virtual time, in our format (history/, DEVELOPERS.md "History"):
one dict per op with ``index``, ``time`` (ns of virtual time since the start), ``type``,
``process``, ``f``, ``value`` and optionally ``node`` and ``error``. Kept in memory (the
judge folds over it); :meth:`Recording.write` writes it as JSON Lines.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from history import NEMESIS


class Recording:
    """The ops of one schedule; ``now()`` is the virtual time in ms."""

    def __init__(self, now: Callable[[], float]):
        self.now = now
        self.ops: list[dict] = []

    def add(self, type_: str, process, f: str, value: Any, node: str | None = None,
            error: str | None = None, **extra) -> dict:
        """Append one op (``index`` and ``time`` assigned here); returns it."""
        op = {"index": len(self.ops), "time": int(self.now() * 1_000_000), "type": type_, "process": process,
              "f": f, "value": value}
        if node is not None:
            op["node"] = node
        if error is not None:
            op["error"] = error
        op.update(extra)
        self.ops.append(op)
        return op

    def invoke(self, process, f: str, value: Any, node: str | None = None) -> dict:
        return self.add("invoke", process, f, value, node)

    def complete(self, inv: dict, type_: str, value: Any, error: str | None = None, **extra) -> dict:
        """The completion (ok | fail | info) of invoke ``inv``."""
        return self.add(type_, inv["process"], inv["f"], value, inv.get("node"), error, **extra)

    def nemesis(self, f: str, asked: dict, done: dict) -> None:
        """A nemesis op: the invoke of ``asked`` and the info of ``done`` at the same time."""
        self.add("invoke", NEMESIS, f, asked)
        self.add("info", NEMESIS, f, done)

    def write(self, path: Path | str) -> Path:
        """Write the history as JSON Lines to ``path`` (parents created); returns it."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            for op in self.ops:
                fh.write(json.dumps(op, separators=(",", ":")) + "\n")
        return path
