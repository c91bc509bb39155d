"""Faults that need a leader wait, within a bound, for one instead of failing at once.

A KIP-853 voter change is asked of the leader; a random wipe at kraft.version 1 counts the
voter keys still alive in the leader's DescribeQuorum; a fault aimed at the leader (a kind
among its family's ``leader_kinds``: ``kill``, ``pause``, ``power-loss`` or ``wipe`` of kind
``leader``, the ``isolate-leader``, ``leader-minority``, ``one-way-leader`` and
``leader-diamond`` partitions and flaps) hits whoever leads. Which family needs what is its
spec's (faults/registry.py: ``leader_kinds``, ``needs_leader``, ``needs_leader_at_kv1``).
Under overlapping faults a leader comes and goes (a default run has one in about a fifth of
its seconds), so such a fault waits for one in two places:

* the schedule (nemesis/windows.py, :class:`LeaderGate`): before the start op, without
  holding the nemesis thread (a generator's wait), until the quorum monitor's view names a
  leader (for a fault that strikes the leader: the same one for :data:`SETTLE_S`, so a new
  leader is not felled by every leader-aimed fault at once before the voter changes that
  waited for it), at most :data:`SCHEDULE_WAIT_S`; the start's value then says how long it
  waited (``leader_wait``: ``{"waited_s", "leader": bool, "schedule_s"}``);
* the nemesis controller (:func:`await_leader`, :func:`leader_voter_state`): when the fault
  starts, polling the controller's ``find_leader`` (the monitor's fresh view, else a
  DescribeQuorum probe), at most :data:`CONTROLLER_WAIT_S`; this blocks the nemesis thread,
  so it is short.

When the bound passes, a voter change or a wipe at kraft.version 1 is recorded as skipped
with the reason, and a leader-aimed fault falls back to a random node (``leader_unknown``),
as it did before.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable

from faults.registry import spec_of
from faults.spec import EXPLICIT
from generator import Context, Generator, Wait

#: s the schedule waits for the monitor to show a leader before a fault that needs one
SCHEDULE_WAIT_S = 30.0
#: s a leader must have led (in the monitor's view, while the schedule waited) before a
#: fault aimed at it strikes: when a leader comes, the voter changes and wipes that waited
#: for one go first, instead of every leader-aimed fault felling it at once
SETTLE_S = 2.0
#: s the controller waits for a leader when the fault starts (blocking the nemesis thread)
CONTROLLER_WAIT_S = 3.0
#: s between the controller's looks for a leader
POLL_S = 0.25

def aims_at_leader(family: str, kind: str) -> bool:
    """Whether a ``family`` fault of ``kind`` strikes the leader (its spec's ``leader_kinds``;
    False for a name that is no family, such as a targeted fault's)."""
    spec = spec_of(family)
    return spec is not None and spec.aims_at_leader(kind)


def needs_leader(family: str, kind: str, voter_changes: bool = False) -> bool:
    """Whether a ``family`` fault of ``kind`` needs a leader: every fault of a family that
    ``needs_leader`` (``membership``), the leader-aimed kinds, and with ``voter_changes``
    (kraft.version 1) every random fault of a family that ``needs_leader_at_kv1`` (``wipe``:
    it counts the live voter keys). Explicit targets (``nodes``) never wait: a scenario says
    itself what it waits for."""
    spec = spec_of(family)
    if kind == EXPLICIT or spec is None:
        return False
    if spec.needs_leader or (spec.needs_leader_at_kv1 and voter_changes):
        return True
    return spec.aims_at_leader(kind)


@dataclasses.dataclass
class Waited:
    """What a wait found: ``leader`` (node, or None when the bound passed), ``waited_s``, and
    ``looks`` (how many times it asked; 1: the leader was there at once)."""

    leader: str | None
    waited_s: float
    looks: int = 1

    @property
    def waited(self) -> bool:
        """Whether there was no leader at the first look (the start's value then records
        the wait)."""
        return self.leader is None or self.looks > 1

    def value(self) -> dict:
        """The ``leader_wait`` field of a start's value."""
        return {"waited_s": round(self.waited_s, 3), "leader": self.leader is not None}


def await_leader(find_leader: Callable[[], str | None], bound_s: float, poll_s: float = POLL_S,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> Waited:
    """Poll ``find_leader()`` (None or an exception: none now) every ``poll_s`` s until it
    names a leader or ``bound_s`` s have passed (it is asked at least once). Blocking."""
    start, looks = clock(), 0
    while True:
        looks += 1
        try:
            leader = find_leader()
        except Exception:  # noqa: BLE001 - an unknown leader is a normal outcome
            leader = None
        waited = clock() - start
        if leader is not None or waited >= bound_s:
            return Waited(leader, waited, looks)
        sleep(min(poll_s, max(0.0, bound_s - waited)))


def leader_voter_state(db, find_leader: Callable[[], str | None] | None, bound_s: float,
                       poll_s: float = POLL_S, clock: Callable[[], float] = time.monotonic,
                       sleep: Callable[[float], None] = time.sleep) -> tuple[dict | None, Waited, str | None]:
    """``(voter state, waited, why)``: ``db.voter_state()`` (targets.base.DB), asked at once
    and then, when no leader answered, again each time ``find_leader`` (cheaper; None: ask
    ``voter_state`` alone each time) names one, until ``bound_s`` s have passed. The state is
    None, with ``why``, when no leader answered in time; ``waited`` (:class:`Waited`) names
    the leader it found. Blocking."""
    start, last, looks = clock(), None, 0
    while True:
        leader = None
        if find_leader is not None and looks:
            try:
                leader = find_leader()
            except Exception:  # noqa: BLE001 - none now
                leader = None
        if not looks or find_leader is None or leader is not None:
            looks += 1
            try:
                state = db.voter_state()
                return state, Waited(state.get("leader") or leader or "?", clock() - start, looks), None
            except Exception as err:  # noqa: BLE001 - lost it again: wait on
                last = err
        waited = clock() - start
        if waited >= bound_s:
            why = f"no leader within {bound_s:g} s"
            return None, Waited(None, waited, looks), f"{why} ({last})" if last is not None else why
        sleep(min(poll_s, max(0.0, bound_s - waited)))


class LeaderGate(Generator):
    """The schedule's wait: nothing until ``ctx.view`` names a leader (polled every
    ``poll_s``), the same one for ``settle_s`` s when that is > 0, or ``bound_s`` s have
    passed; then done. :attr:`waited` says what it found, for the start op that follows
    (:func:`tag`). With no view at all (no quorum monitor) it is done at once and
    :attr:`waited` stays None."""

    def __init__(self, bound_s: float = SCHEDULE_WAIT_S, poll_s: float = 0.05, settle_s: float = 0.0):
        self.bound_s, self.poll_s, self.settle_s = bound_s, poll_s, settle_s
        self._start: float | None = None
        self.waited: Waited | None = None
        self.done = False
        self._looks = 0
        self._seen: tuple[str | None, float] = (None, 0.0)      # (leader, seen since)

    def op(self, ctx: Context) -> dict | Wait | None:
        if self.done or ctx.view is None:
            self.done = True
            return None
        if self._start is None:
            self._start = ctx.time
        self._looks += 1
        leader = getattr(ctx.view, "leader", None)
        if leader != self._seen[0]:
            self._seen = (leader, ctx.time)
        settled = leader is not None and ctx.time - self._seen[1] >= self.settle_s
        waited = ctx.time - self._start
        if settled or waited >= self.bound_s:
            self.waited, self.done = Waited(leader if settled else None, waited, self._looks), True
            return None
        return Wait(min(self._start + self.bound_s, ctx.time + self.poll_s))


def tag(op: dict | None, gate: LeaderGate) -> dict | None:
    """``op`` (a start op) carrying ``gate``'s wait as ``leader_wait_s`` and, when the bound
    passed, ``leader_seen: False``; the nemesis worker moves them into the start's value.
    Nothing is added when the leader was there at once."""
    if op is None or gate.waited is None or not gate.waited.waited:
        return op
    return {**op, "leader_wait_s": round(gate.waited.waited_s, 3),
            **({} if gate.waited.leader is not None else {"leader_seen": False})}


def merge_wait(value: Any, op: dict) -> Any:
    """The start's completion ``value`` with the schedule's wait (``op``'s ``leader_wait_s``)
    added into its ``leader_wait``: ``schedule_s``, and ``waited_s`` the sum of both waits;
    ``leader`` False when neither found one. Values that are not dicts are left alone."""
    if "leader_wait_s" not in op or not isinstance(value, dict):
        return value
    sched = float(op["leader_wait_s"])
    mine = value.get("leader_wait") if isinstance(value.get("leader_wait"), dict) else None
    found = mine["leader"] if mine is not None else op.get("leader_seen", True)
    total = sched + (float(mine["waited_s"]) if mine is not None else 0.0)
    return {**value, "leader_wait": {"waited_s": round(total, 3), "leader": bool(found),
                                     "schedule_s": round(sched, 3)}}
