"""Writing a history as it happens: one JSON line per op, flushed after each."""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from .ops import COMPLETION_TYPES, HistoryError, op_problem


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
        problem = op_problem(op)
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
