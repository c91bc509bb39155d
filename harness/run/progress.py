"""A live progress line while a test runs: elapsed time, op outcomes, the current fault.

On a TTY it is a ``rich`` live line, redrawn twice a second; otherwise (CI)
a plain log line every ``plain_every_s`` seconds.
"""
from __future__ import annotations

import asyncio
import logging
import sys
import time
from typing import Callable, TextIO

from rich.console import Console
from rich.live import Live

log = logging.getLogger("kraft_chaos.progress")


class Snapshot:
    """What the line shows; each source is a zero-argument callable read at each redraw.

    ``tally()``: ``{"ok": n, "fail": n, "info": n}`` for client ops;
    ``faults()``: ``{fault name: [target nodes]}`` of active faults;
    ``leader()``: the newest leader's description (str) or None.
    """

    def __init__(self, tally: Callable[[], dict], faults: Callable[[], dict] | None = None,
                 leader: Callable[[], str | None] | None = None, time_limit_s: float | None = None):
        self.tally, self.faults, self.leader = tally, faults, leader
        self.time_limit_s = time_limit_s
        self.start = time.monotonic()

    def line(self) -> str:
        """One human line, e.g. ``12s/60s ops ok=1100 fail=12 info=3 leader n2 fault: kill[n1]``."""
        elapsed = time.monotonic() - self.start
        limit = f"/{self.time_limit_s:.0f}s" if self.time_limit_s else ""
        t = self.tally()
        parts = [f"{elapsed:4.0f}s{limit}",
                 f"ops ok={t.get('ok', 0)} fail={t.get('fail', 0)} info={t.get('info', 0)}"]
        if self.leader is not None:
            parts.append(f"leader {self.leader() or '?'}")
        if self.faults is not None:
            active = self.faults() or {}
            desc = ", ".join(f"{name}[{','.join(map(str, targets))}]" for name, targets in active.items())
            parts.append(f"fault: {desc or 'none'}")
        return "  ".join(parts)


class Progress:
    """Shows a :class:`Snapshot` until :meth:`stop`; an async context manager.

    ``stream``: where the live line goes (default stdout); ``live``: force
    (True/False) or auto-detect (None: live when ``stream`` is a TTY).
    """

    def __init__(self, snapshot: Snapshot, stream: TextIO | None = None, live: bool | None = None,
                 plain_every_s: float = 10.0):
        self.snapshot = snapshot
        self.stream = stream or sys.stdout
        self.live = self.stream.isatty() if live is None else live
        self.plain_every_s = plain_every_s
        self._task: asyncio.Task | None = None
        self._live = None

    async def __aenter__(self) -> "Progress":
        if self.live:
            self._live = Live(self.snapshot.line(), console=Console(file=self.stream),
                              refresh_per_second=4, transient=False)
            self._live.start()
        self._task = asyncio.create_task(self._loop(), name="progress")
        return self

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(0.5 if self.live else self.plain_every_s)
            if self._live is not None:
                self._live.update(self.snapshot.line())
            else:
                log.info("progress: %s", self.snapshot.line())

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def stop(self) -> None:
        """Stop redrawing; the last line stays on screen (or is logged once more)."""
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
        if self._live is not None:
            self._live.update(self.snapshot.line())
            self._live.stop()
            self._live = None
        else:
            log.info("progress: %s", self.snapshot.line())
