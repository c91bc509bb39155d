"""Run one client request and record it in the history as invoke + ok/fail/info.

The mapping is Jepsen's: a :class:`history.outcomes.DefiniteError` is ``fail``
(the op certainly did not happen), a :class:`history.outcomes.IndefiniteError`
is ``info`` (outcome unknown), and so is any unexpected exception or a
cancellation mid-request (error ``"interrupted"``).
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import Any, Awaitable, Callable

from history import outcomes

from .counters import OpTally

log = logging.getLogger(__name__)


@dataclasses.dataclass
class Outcome:
    """What happened to one op: ``type`` is "ok" | "fail" | "info".

    ``result`` is the request's return value when ok; ``error`` the exception
    otherwise (a :class:`history.outcomes.ClientError` or anything unexpected);
    ``op`` the completion op as written to the history.
    """

    type: str
    result: Any = None
    error: BaseException | None = None
    op: dict | None = None

    @property
    def leader_hint(self) -> int | None:
        """The leader id a DefiniteError carried, if any."""
        return getattr(self.error, "leader_id", None) if self.type == "fail" else None


async def record(history, tally: OpTally | None, process: int, f: str, value: Any, node: str,
                 request: Callable[[], Awaitable[Any]],
                 ok_value: Callable[[Any], Any],
                 ok_extra: Callable[[Any], dict] | None = None,
                 fail_value: Callable[[outcomes.ClientError], Any] | None = None) -> Outcome:
    """Invoke ``request()`` and write the invoke and completion ops to ``history``.

    ``ok_value(result)`` builds the ok op's value; ``ok_extra(result)``, if
    given, extra fields of the ok op (e.g. ``{"offset": O}``). A fail or
    info op keeps the invoke ``value`` (or takes ``fail_value(error)`` for a
    definite failure, e.g. the epoch the node answered with) and gets
    ``error`` = the client error code. On cancellation the info op is written before ``CancelledError``
    propagates.
    """
    inv = history.invoke(process, f, value, node=node)
    try:
        result = await request()
    except outcomes.DefiniteError as e:
        out = Outcome("fail", error=e)
        out.op = history.complete(inv, "fail", fail_value(e) if fail_value else value, error=e.code)
    except outcomes.IndefiniteError as e:
        out = Outcome("info", error=e)
        out.op = history.complete(inv, "info", value, error=e.code)
    except asyncio.CancelledError:
        history.complete(inv, "info", value, error="interrupted")
        if tally is not None:
            tally.add(f, "info")
        raise
    except Exception as e:  # a bug or an unexpected reply: outcome unknown
        log.exception("unexpected error from %s on %s", f, node)
        out = Outcome("info", error=e)
        out.op = history.complete(inv, "info", value, error=f"{type(e).__name__}: {e}")
    else:
        out = Outcome("ok", result=result)
        out.op = history.complete(inv, "ok", ok_value(result), **(ok_extra(result) if ok_extra else {}))
    if tally is not None:
        tally.add(f, out.type)
    return out
