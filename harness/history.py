"""The test history: Jepsen-style operations, one JSON object per line.

Format (see DEVELOPERS.md, "History"): every op has ``index`` (int, dense
from 0), ``time`` (ns since the writer started), ``type`` (``invoke`` |
``ok`` | ``fail`` | ``info``), ``process`` (int, or ``"nemesis"``), ``f``
(str) and ``value``; optionally ``node`` and ``error``.

:class:`HistoryWriter` appends and flushes each op as it happens, so a crash
of the harness keeps every op written before it. :func:`read_history` parses
and validates a history file; :func:`pair_ops` pairs invocations with their
completions.
"""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any, Callable

#: The four op types of a Jepsen history.
OP_TYPES = ("invoke", "ok", "fail", "info")
#: The completion types (everything except ``invoke``).
COMPLETION_TYPES = ("ok", "fail", "info")
#: The process of nemesis ops.
NEMESIS = "nemesis"


class HistoryError(ValueError):
    """A history file or op is malformed.

    The message names the file and 1-based line number where known, e.g.
    ``history.jsonl:57: truncated or invalid JSON: ...``. From
    :func:`pair_ops`, ``op`` is the op at fault and ``reason`` the message
    without the op's name.
    """

    def __init__(self, message: str, op: dict | None = None, reason: str | None = None):
        super().__init__(message)
        self.op, self.reason = op, reason or message


def _op_problem(op: Any) -> str | None:
    """What is wrong with ``op`` as a history op, or None if it is well formed."""
    if not isinstance(op, dict):
        return f"expected a JSON object, got {type(op).__name__}"
    for key in ("index", "time", "type", "process", "f"):
        if key not in op:
            return f"missing field {key!r}"
    if not isinstance(op["index"], int) or isinstance(op["index"], bool) or op["index"] < 0:
        return f"'index' must be a non-negative int, got {op['index']!r}"
    if not isinstance(op["time"], int) or isinstance(op["time"], bool):
        return f"'time' must be an int (ns), got {op['time']!r}"
    if op["type"] not in OP_TYPES:
        return f"'type' must be one of {', '.join(OP_TYPES)}, got {op['type']!r}"
    proc = op["process"]
    if not ((isinstance(proc, int) and not isinstance(proc, bool)) or proc == NEMESIS):
        return f"'process' must be an int or {NEMESIS!r}, got {proc!r}"
    if not isinstance(op["f"], str):
        return f"'f' must be a string, got {op['f']!r}"
    if "node" in op and op["node"] is not None and not isinstance(op["node"], str):
        return f"'node' must be a string or null, got {op['node']!r}"
    return None


class HistoryWriter:
    """Appends ops to a JSONL history file, flushing after every op.

    ``path``: the file to create (truncated if it exists; parents are
    created). Times are ``time.monotonic_ns()`` minus the writer's start, in
    ns. Thread-safe (one lock around index assignment and the write); the
    calls do not block on anything but the local file, so they are fine to
    call from asyncio code. Use as a context manager or call :meth:`close`.
    """

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "w", encoding="utf-8")
        self._lock = threading.Lock()
        self._next_index = 0
        self._start_ns = time.monotonic_ns()

    def append(self, type: str, process: int | str, f: str, value: Any,
               node: str | None = None, error: str | None = None, **extra: Any) -> dict:
        """Write one op and return it as written (a dict with ``index`` and ``time``).

        ``extra`` keys are added after the standard fields. Raises
        :class:`HistoryError` if the op is malformed (bad type, process or
        f), ``TypeError`` if ``value`` or an extra is not JSON-serialisable,
        and ``ValueError`` after :meth:`close`.
        """
        op: dict[str, Any] = {"index": 0, "time": 0, "type": type, "process": process,
                              "f": f, "value": value}
        if node is not None:
            op["node"] = node
        if error is not None:
            op["error"] = error
        for key in extra:
            if key in ("index", "time"):
                raise HistoryError(f"{key!r} is assigned by the writer; do not pass it")
        op.update(extra)
        problem = _op_problem(op)
        if problem:
            raise HistoryError(f"{self.path.name}: refusing to write op: {problem}")
        with self._lock:
            if self._file.closed:
                raise ValueError(f"{self.path}: history writer is closed")
            op["index"] = self._next_index
            op["time"] = time.monotonic_ns() - self._start_ns
            line = json.dumps(op, separators=(",", ":"))
            self._file.write(line + "\n")
            self._file.flush()
            self._next_index += 1
        return op

    def invoke(self, process: int | str, f: str, value: Any, node: str | None = None,
               **extra: Any) -> dict:
        """Write an ``invoke`` op; returns it (pass it to :meth:`complete`)."""
        return self.append("invoke", process, f, value, node=node, **extra)

    def complete(self, invoke_op: dict, type: str, value: Any, error: str | None = None,
                 **extra: Any) -> dict:
        """Write the completion (``ok`` | ``fail`` | ``info``) of ``invoke_op``.

        Carries ``process``, ``f`` and ``node`` over from ``invoke_op``.
        Raises :class:`HistoryError` if ``type`` is not a completion type or
        ``invoke_op`` is not an invoke.
        """
        if type not in COMPLETION_TYPES:
            raise HistoryError(f"completion type must be one of {', '.join(COMPLETION_TYPES)}, "
                               f"got {type!r}")
        if invoke_op.get("type") != "invoke":
            raise HistoryError(f"complete() needs an invoke op, got type {invoke_op.get('type')!r}")
        return self.append(type, invoke_op["process"], invoke_op["f"], value,
                           node=invoke_op.get("node"), error=error, **extra)

    def close(self) -> None:
        """Flush and close the file; further appends raise ValueError. Idempotent."""
        with self._lock:
            if not self._file.closed:
                self._file.close()

    def __enter__(self) -> "HistoryWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_history(path: Path | str) -> list[dict]:
    """Parse and validate the JSONL history at ``path``; returns the ops in file order.

    Blank lines are skipped. Raises ``FileNotFoundError`` if the file is
    missing, and :class:`HistoryError` naming the file and 1-based line
    number for a truncated or invalid JSON line, an op missing a field or
    with a field of the wrong type, or an ``index`` that is not dense from 0
    (``index`` must equal the op's position).
    """
    path = Path(path)
    ops: list[dict] = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                op = json.loads(line)
            except ValueError as exc:
                raise HistoryError(f"{path.name}:{lineno}: truncated or invalid JSON: {exc}") from None
            problem = _op_problem(op)
            if problem:
                raise HistoryError(f"{path.name}:{lineno}: {problem}")
            if op["index"] != len(ops):
                raise HistoryError(f"{path.name}:{lineno}: index {op['index']} out of sequence "
                                   f"(expected {len(ops)}; indices are dense from 0)")
            ops.append(op)
    return ops


def pair_ops(history: list[dict], name: Callable[[dict], str] | None = None
             ) -> list[tuple[dict, dict | None]]:
    """Pair each invoke with its completion, by process.

    Returns ``[(invoke, completion or None), ...]`` in invoke order; an
    invoke still in flight at the end of the history pairs with None.
    Raises :class:`HistoryError` naming the op (``name(op)``, default ``op
    <index>``) when a process invokes while it already has an op in flight,
    a completion has no invoke in flight, or a completion's ``f`` differs
    from its invoke's.
    """
    name = name or (lambda op: f"op {op['index']}")

    def fail(op: dict, reason: str):
        raise HistoryError(f"{name(op)}: {reason}", op=op, reason=reason)

    pairs: list[list] = []
    in_flight: dict[int | str, int] = {}   # process -> position in pairs
    for op in history:
        proc = op["process"]
        if op["type"] == "invoke":
            if proc in in_flight:
                fail(op, f"process {proc!r} invokes while {name(pairs[in_flight[proc]][0])} is still "
                         f"in flight (a process runs one op at a time)")
            in_flight[proc] = len(pairs)
            pairs.append([op, None])
        else:
            pos = in_flight.pop(proc, None)
            if pos is None:
                fail(op, f"{op['type']} for process {proc!r} with no invoke in flight "
                         f"(no open invoke to complete)")
            inv = pairs[pos][0]
            if inv["f"] != op["f"]:
                fail(op, f"completion f {op['f']!r} does not match invoke {name(inv)} f {inv['f']!r}")
            pairs[pos][1] = op
    return [(inv, comp) for inv, comp in pairs]
