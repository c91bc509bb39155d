"""Timers as deadlines, for the cores (kraft/quorum/, kraft/replication/): a mixin.

A core wants timer ``key`` at a deadline (:meth:`DeadlineTimers._set_deadline`); the
runtime is told (a :class:`kraft.core.events.SetTimer` effect) only when that is earlier than
the deadline it already holds for the key. A later deadline (a follower's fetch timeout
pushed back by every successful Fetch, say) costs nothing until the earlier timer
fires: it is then re-armed at the wanted deadline. So a timer that keeps moving costs
one event per period, not one per move. Stale firings (a runtime that does not cancel)
are recognised by their ``at`` and ignored.

The core provides ``now`` (ms), ``out`` (its effects) and ``_timer_due(key)`` (called by
:meth:`DeadlineTimers._on_timer`; a holder that dispatches itself calls
:meth:`DeadlineTimers._fired` instead). The mixin has no instance layout of its own
(``__slots__ = ()``), so a slotted holder stays slotted.
"""
from __future__ import annotations

from .events import SetTimer, TimerFired


class DeadlineTimers:
    """Wanted and armed deadlines by key (keys: str or tuples of str and int)."""

    __slots__ = ()

    def _init_timers(self) -> None:
        self._want: dict = {}     # key -> deadline wanted (ms)
        self._armed: dict = {}    # key -> deadline the runtime holds (ms)

    def _set_deadline(self, key, at: float) -> None:
        """Want timer ``key`` at ``at`` (replacing what was wanted)."""
        self._want[key] = at
        armed = self._armed.get(key)
        if armed is None or at < armed:
            self._armed[key] = at
            self.out.append(SetTimer(key, at))

    def _clear_deadline(self, key) -> None:
        """Want no timer ``key`` (an armed one fires and is ignored)."""
        self._want.pop(key, None)

    def deadline(self, key) -> float | None:
        """The deadline (ms) wanted for timer ``key``, or None."""
        return self._want.get(key)

    def _on_timer(self, ev: TimerFired) -> None:
        key = self._fired(ev)
        if key is not None:
            self._timer_due(key)

    def _fired(self, ev: TimerFired):
        """Account for ``ev``: returns its key when that timer is due now (``now`` moved up to
        its deadline), or None (stale, no longer wanted, or re-armed at a later deadline)."""
        key, at = ev.key, ev.at
        if self._armed.get(key) != at:
            return None                             # stale: replaced or already handled
        del self._armed[key]
        want = self._want.get(key)
        if want is None:
            return None
        if want > at:
            self._armed[key] = want
            self.out.append(SetTimer(key, want))
            return None
        del self._want[key]
        if self.now < at:
            self.now = at
        return key
