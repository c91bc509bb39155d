"""The nemesis as the interpreter's ``"nemesis"`` thread: sends fault ops and records them.

A generator (nemesis/schedule.py) says which fault op comes next:
``{"f": "start-<family>" | "stop-<family>", "value": {"kind": K, ...}}``.
:class:`NemesisWorker` applies it with the controller, in a thread (the
controller blocks), and records it as process ``"nemesis"``: an ``invoke``
with the op's value, then an ``info`` with what was done (targets, grudge,
..., and ``leader_wait`` when the schedule waited for a leader before it: the op's
``leader_wait_s``) or the ``error``. Faults still active when the run ends are stopped
and recorded by :meth:`NemesisWorker.close`.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import Callable

from nemesis.controller import NemesisController
from nemesis.faults import Fault
from nemesis.leader_wait import merge_wait

log = logging.getLogger("kraft_chaos.nemesis")


@dataclasses.dataclass
class NemesisOutcome:
    """A nemesis op's outcome: always ``info`` (Jepsen's nemesis ops are), ``op`` the
    completion as written, ``error`` the exception text or None."""

    op: dict
    error: str | None = None
    type: str = "info"


def parse_op(op: dict) -> tuple[str, Fault]:
    """``("start" | "stop", Fault)`` from a nemesis op; raises ValueError naming what is wrong."""
    f = op.get("f")
    phase, _, family = f.partition("-") if isinstance(f, str) else ("", "", "")
    if phase not in ("start", "stop") or not family:
        raise ValueError(f"nemesis op f must be start-<family> or stop-<family>, got {f!r}")
    value = op.get("value") or {}
    if not isinstance(value, dict) or "kind" not in value:
        raise ValueError(f"nemesis op {f}: value must be an object with a kind, got {value!r}")
    return phase, Fault.from_value(family, value)


class NemesisWorker:
    """Runs nemesis ops on ``controller``, recording them in ``history`` (a HistoryWriter).

    ``on_fault(active)`` is told the active slots (``{slot: targets}``) after
    each op, for progress display.
    """

    def __init__(self, controller: NemesisController, history,
                 on_fault: Callable[[dict], None] | None = None):
        self.controller, self.history = controller, history
        self.on_fault = on_fault or (lambda active: None)

    async def invoke(self, op: dict, process="nemesis") -> NemesisOutcome:
        """Apply one op; record it. A cancellation while the controller works waits for
        it (a thread cannot be interrupted), records the outcome, then propagates."""
        f = op.get("f") if isinstance(op.get("f"), str) else "invalid"
        inv = self.history.invoke("nemesis", f, op.get("value"))
        try:
            phase, fault = parse_op(op)
        except ValueError as e:
            return NemesisOutcome(self.history.complete(inv, "info", op.get("value"), error=str(e)), str(e))
        call = self.controller.start if phase == "start" else self.controller.stop
        task = asyncio.ensure_future(asyncio.to_thread(call, fault))
        cancelled = False
        while not task.done():
            try:
                await asyncio.shield(task)
            except asyncio.CancelledError:
                cancelled = True
            except Exception:  # noqa: BLE001 - read from the task below
                pass
        err = task.exception()
        if err is not None:
            log.error("nemesis %s failed: %s", f, err)
            out = NemesisOutcome(self.history.complete(inv, "info", fault.to_value(), error=str(err)),
                                 str(err))
        else:       # with the schedule's wait for a leader (nemesis/leader_wait.py), if any
            out = NemesisOutcome(self.history.complete(inv, "info", merge_wait(task.result(), op)))
        self.on_fault(self.controller.active)
        if cancelled:
            raise asyncio.CancelledError()
        return out

    async def close(self) -> None:
        """Stop every fault still active, each recorded as its ``stop-<family>`` op."""
        for fault in self.controller.active_faults():
            stop = {"f": f"stop-{fault.name}", "value": {"kind": fault.kind,
                                                          **({"slot": fault.slot} if fault.slot else {})}}
            inv = self.history.invoke("nemesis", stop["f"], stop["value"])
            try:
                result = await asyncio.to_thread(self.controller.stop, fault)
                self.history.complete(inv, "info", result)
            except Exception as e:  # noqa: BLE001 - recorded; heal_all runs after
                self.history.complete(inv, "info", stop["value"], error=str(e))
        self.on_fault(self.controller.active)
