"""The nemesis loop: follows the schedule and records nemesis ops in the history."""
from __future__ import annotations

import asyncio
import logging
from typing import Callable, Protocol

from nemesis.schedule import Fault, FaultSchedule

log = logging.getLogger("kraft_chaos.nemesis")


class History(Protocol):
    """The part of ``history.HistoryWriter`` the nemesis uses."""

    def invoke(self, process, f: str, value, node: str | None = None) -> dict:
        """Record an ``invoke`` op; return it."""

    def complete(self, invoke_op: dict, type: str, value, error: str | None = None) -> dict:
        """Record the completion (``ok``/``fail``/``info``) of ``invoke_op``; return it."""


class Controller(Protocol):
    """The part of :class:`nemesis.controller.NemesisController` the loop uses."""

    def start(self, fault: Fault) -> dict: ...

    def stop(self, fault: Fault) -> dict: ...


async def _wait(stop_event: asyncio.Event, seconds: float) -> bool:
    """Sleep ``seconds``; return True early if ``stop_event`` is set."""
    try:
        await asyncio.wait_for(stop_event.wait(), timeout=seconds)
        return True
    except asyncio.TimeoutError:
        return stop_event.is_set()


def _record(history: History, f: str, kind: str, call: Callable[[], dict]) -> None:
    """Invoke/complete around a blocking ``call`` (used on the cancellation path)."""
    op = history.invoke("nemesis", f, {"kind": kind})
    try:
        history.complete(op, "info", call())
    except Exception as err:  # noqa: BLE001 - recorded in the history
        history.complete(op, "info", {"kind": kind}, error=str(err))


async def _record_async(history: History, f: str, kind: str, call: Callable[[], dict]) -> None:
    """Invoke/complete around ``call`` run in a thread.

    If the caller is cancelled meanwhile, the thread still finishes (it
    cannot be interrupted); its outcome is recorded and then the
    cancellation propagates.
    """
    op = history.invoke("nemesis", f, {"kind": kind})
    task = asyncio.ensure_future(asyncio.to_thread(call))
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            cancelled = True  # keep waiting for the thread, then re-raise
        except Exception:  # noqa: BLE001 - read from the task below
            pass
    err = task.exception()
    if err is not None:
        log.error("nemesis %s failed: %s", f, err)
        history.complete(op, "info", {"kind": kind}, error=str(err))
    else:
        history.complete(op, "info", task.result())
    if cancelled:
        raise asyncio.CancelledError()


async def run_nemesis(controller: Controller, schedule: FaultSchedule, history: History,
                      stop_event: asyncio.Event,
                      on_fault: Callable[[str | None], None] | None = None) -> None:
    """Run faults from ``schedule`` until ``stop_event`` is set or the task is cancelled.

    Each cycle: wait ``schedule.interval_s`` (returns at once if
    ``stop_event`` is set), record ``invoke`` ``start-<name>`` with value
    ``{"kind": K}``, apply it in a thread, record the ``info`` completion
    with the controller's value (or ``error`` = the exception text), wait
    ``schedule.duration_s`` (cut short by ``stop_event``), then the same
    for ``stop-<name>``. A fault that is active when the loop ends (stop
    event or cancellation) is stopped and recorded before returning.
    ``on_fault`` gets the active fault's name, then None when it is healed.
    """
    notify = on_fault or (lambda name: None)
    active: Fault | None = None
    try:
        for fault in schedule:
            if await _wait(stop_event, schedule.interval_s):
                return
            active = fault
            notify(fault.name)
            await _record_async(history, f"start-{fault.name}", fault.kind,
                                lambda: controller.start(fault))
            await _wait(stop_event, schedule.duration_s)
            active = None  # the stop below is recorded even if we are cancelled during it
            await _record_async(history, f"stop-{fault.name}", fault.kind,
                                lambda: controller.stop(fault))
            notify(None)
            if stop_event.is_set():
                return
    finally:
        if active is not None:
            # Cancelled mid-fault: heal synchronously so a second cancel cannot interrupt it.
            fault = active
            _record(history, f"stop-{fault.name}", fault.kind, lambda: controller.stop(fault))
            notify(None)
