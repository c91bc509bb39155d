"""How the schedule plays one fault of a family: start it, hold it, stop it; and for the
faults that need the quorum in some state, wait for that state first, on the generator's
clock (the nemesis thread serves the other timelines meanwhile).

* A fault that needs a leader (:func:`nemesis.leader_wait.needs_leader`) starts once the
  quorum monitor's view names one (one that has led for :data:`nemesis.leader_wait.SETTLE_S`
  when the fault strikes the leader), or after :data:`nemesis.leader_wait.SCHEDULE_WAIT_S`
  (the start's value then says how long it waited: ``leader_wait``).
* A membership removal (a family whose spec has ``voter_changes``) is added back by its stop
  once the view shows a leader and the removed nodes caught up (their log end offset at the
  leader's high watermark, as observers), or after :data:`CATCH_UP_WAIT_S`: the add back
  needs both.
* At kraft.version 1 with ``membership`` in the schedule (``replace_wiped``), a random
  wipe (a family whose spec ``wipes_disks``) is followed, once its nodes are back and caught
  up, by the KIP-853 replacement of the wiped voters (``start-membership`` kind ``nodes``,
  ``action`` ``replace``, slot ``wipe-replace``): the operator's answer to a lost disk,
  without which the wiped voters' keys stay dead and later wipes must be skipped to keep a
  majority of keys alive.
"""
from __future__ import annotations

from typing import Callable

from faults import membership
from faults.registry import fault_spec
from faults.spec import EXPLICIT
from generator import Context, Generator, Seq, Sleep, Wait, WaitFor
from nemesis.faults import Fault
from nemesis.leader_wait import SCHEDULE_WAIT_S, SETTLE_S, LeaderGate, aims_at_leader, needs_leader, tag
from nemesis.targeted import start_op, stop_op

#: s a membership stop (the add back) or a replacement waits for the nodes to catch up
CATCH_UP_WAIT_S = 20.0
#: the slot of the replacement that follows a wipe
REPLACE_SLOT = "wipe-replace"


class Emit(Generator):
    """One op, ``make(ctx)`` when first asked (None: nothing, done), whose completion is kept
    in :attr:`completion` (matched to the op itself: :class:`generator.Any` tells every
    timeline of every completion)."""

    def __init__(self, make: Callable[[Context], dict | None]):
        self.make = make
        self.op_sent: dict | None = None
        self.asked = False
        self.completion: dict | None = None

    def op(self, ctx: Context) -> dict | Wait | None:
        if self.asked:
            return None
        self.asked = True
        self.op_sent = self.make(ctx)
        return self.op_sent

    def update(self, ctx: Context, invoke: dict, completion: dict) -> None:
        if invoke is self.op_sent and self.op_sent is not None:
            self.completion = completion

    def value(self) -> dict:
        """The completion's value (``{}`` before it, or when it is not a dict)."""
        v = (self.completion or {}).get("value")
        return v if isinstance(v, dict) else {}


def removed_nodes(value: dict) -> list[str]:
    """The nodes a membership start removed and its stop adds back (``changes`` of op
    ``remove`` that were ok or of unknown outcome)."""
    return [c["node"] for c in value.get("changes") or []
            if isinstance(c, dict) and c.get("op") == "remove" and c.get("outcome") in ("ok", "info")]


def caught_up(nodes: list[str]) -> Callable[[Context], bool]:
    """A condition on the monitor's view: a leader, and each of ``nodes`` with a log end
    offset at or past the leader's high watermark."""
    def cond(ctx: Context) -> bool:
        view = ctx.view
        if getattr(view, "leader", None) is None:
            return False
        ends, hw = getattr(view, "log_end", {}), getattr(view, "high_watermark", 0)
        return all(ends.get(n, -1) >= hw for n in nodes)
    return cond


def _stop_after(gate: Callable[[Context], bool] | None, fault: Fault) -> list[Generator]:
    stop = Emit(lambda ctx: stop_op(fault))
    return [WaitFor(gate, CATCH_UP_WAIT_S, poll_s=0.1), stop] if gate is not None else [stop]


def family_window(fault: Fault, duration_s: float, *, voter_changes: bool = False,
                  replace_wiped: bool = False, leader_wait_s: float = SCHEDULE_WAIT_S,
                  aim_at_leader: bool = True) -> Generator:
    """One family ``fault`` for about ``duration_s`` (s), with the waits of the module
    docstring: ``voter_changes`` says the quorum is at kraft.version 1 (a random wipe then
    needs a leader), ``replace_wiped`` that wiped voters are replaced after the wipe;
    ``aim_at_leader`` False says the quorum's leader is none of the nodes the faults touch
    (``--nemesis-targets clients``), so a leader-aimed kind does not wait for it."""
    items: list[Generator] = []
    gate = None
    aims = aims_at_leader(fault.name, fault.kind)
    if needs_leader(fault.name, fault.kind, voter_changes) and (aim_at_leader or not aims):
        gate = LeaderGate(leader_wait_s, settle_s=SETTLE_S if aims else 0.0)
        items.append(gate)
    start = Emit(lambda ctx: tag(start_op(fault), gate) if gate is not None else start_op(fault))
    items += [start, Sleep(duration_s)]
    spec = fault_spec(fault.name)
    if spec.voter_changes:
        items += [Lazy(lambda ctx: _gated_stop(fault, removed_nodes(start.value())))]
    else:
        items.append(Emit(lambda ctx: stop_op(fault)))
    if spec.wipes_disks and replace_wiped and fault.kind != EXPLICIT:
        items.append(Lazy(lambda ctx: _replacement(start.value().get("wiped") or {}, duration_s)))
    return Seq(items)


class Lazy(Generator):
    """A generator made by ``make(ctx)`` when first asked (None: nothing), then run."""

    def __init__(self, make: Callable[[Context], Generator | None]):
        self.make = make
        self.gen: Generator | None = None
        self.made = False

    def op(self, ctx: Context) -> dict | Wait | None:
        if not self.made:
            self.made, self.gen = True, self.make(ctx)
        return self.gen.op(ctx) if self.gen is not None else None

    def update(self, ctx: Context, invoke: dict, completion: dict) -> None:
        if self.gen is not None:
            self.gen.update(ctx, invoke, completion)


def _gated_stop(fault: Fault, removed: list[str]) -> Generator:
    return Seq(_stop_after(caught_up(removed) if removed else None, fault))


def _replacement(wiped: dict, duration_s: float) -> Generator | None:
    """The replacement of the quorum nodes a wipe's start reports (``wiped``: ``{node: {...,
    "new_directory_id", "quorum_node"}}``; None when no quorum node was wiped): once they caught up,
    ``start-membership`` ``nodes`` / ``replace`` with their new ``directory_ids``, held at
    most a second, then its stop."""
    if not isinstance(wiped, dict):
        return None
    # only quorum nodes are voters to replace: with faults on the brokers too (the queue
    # workload's default) a wipe may take a broker, which rejoins as it is
    wiped = {n: w for n, w in wiped.items() if not isinstance(w, dict) or w.get("quorum_node", True)}
    if not wiped:
        return None
    nodes = sorted(wiped)
    ids = {n: w["new_directory_id"] for n, w in wiped.items()
           if isinstance(w, dict) and isinstance(w.get("new_directory_id"), str)}
    fault = Fault(membership.SPEC.name, EXPLICIT, slot=REPLACE_SLOT, targets=tuple(nodes),
                  params={"action": "replace", **({"directory_ids": ids} if ids else {})})
    return Seq([WaitFor(caught_up(nodes), CATCH_UP_WAIT_S, poll_s=0.1), Emit(lambda ctx: start_op(fault)),
                Sleep(min(duration_s, 1.0)), Emit(lambda ctx: stop_op(fault))])
