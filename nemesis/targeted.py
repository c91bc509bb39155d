"""Targeted faults: aimed with the quorum monitor's view (``ctx.view``, a
:class:`workloads.monitor.QuorumView`-like object) at the moments Raft bugs live in.

- ``lag``: cut one follower off while clients write, so it falls behind;
  then heal it and at once kill the leader and the most up-to-date
  followers that may die while a majority stays up, and cut the up-to-date
  survivors off from each other, so only the laggard can win an election;
- ``catchup``: as ``lag``, but a second before the kill the survivors
  stop hearing the leader (one way), the laggard comes back over a slow link
  (packet delay) and the killed nodes stay down as long as it lagged, so a
  new leader, which never heard the old leader's last high watermark and
  whose majority needs the laggard, waits for it over several slow Fetches:
  the window in which a leader's commit rule (KAFKA-12619) and its reads
  are tested;
- ``elect``: wait for a new leader or a node entering a new epoch with no
  leader (it just voted or stands), kill it at once, and restart it cut off
  from the others for a while, so what it recovered shows before a peer
  corrects it;
- ``batch``: wait until the leader's last DescribeQuorum shows records past
  its high watermark (a batch in flight), and kill the leader at once.

Each is a generator of nemesis ops (``start-<family>`` / ``stop-<family>``)
in slots of its own, so they overlap the families' faults.
"""
from __future__ import annotations

import random
from typing import Callable

from generator import Context, Generator, Seq, Sleep, Wait, WaitFor
from nemesis.faults import Fault
from nemesis.targets import majority_size

#: how long a targeted fault waits for what it aims at (s)
AIM_TIMEOUT_S = 15.0
#: the catch-up fault's delay on the laggard's links (ms)
CATCHUP_DELAY_MS = 150
#: how long before the kill the survivors start dropping what the victims send (s)
CATCHUP_LEAD_S = 1.0


def start_op(fault: Fault) -> dict:
    """The ``start-<family>`` op of ``fault``."""
    return {"f": f"start-{fault.name}", "value": fault.to_value()}


def stop_op(fault: Fault) -> dict:
    """The ``stop-<family>`` op that heals ``fault``'s slot."""
    value = {"kind": fault.kind, **({"slot": fault.slot} if fault.slot else {})}
    return {"f": f"stop-{fault.name}", "value": value}


class Lazy(Generator):
    """One op made by ``make(ctx)`` when first asked (None: nothing, done)."""

    def __init__(self, make: Callable[[Context], dict | None]):
        self.make, self.done = make, False

    def op(self, ctx: Context) -> dict | Wait | None:
        if self.done:
            return None
        self.done = True
        return self.make(ctx)


def fault_window(fault: Fault | Callable[[Context], Fault | None], duration_s: float) -> Generator:
    """Start the fault, hold it ``duration_s``, stop it. ``fault`` may be made at start time
    from the context (for aim); a None fault is skipped."""
    made: list[Fault] = []

    def start(ctx: Context) -> dict | None:
        f = fault(ctx) if callable(fault) else fault
        if f is None:
            return None
        made.append(f)
        return start_op(f)

    return Seq([Lazy(start), Sleep(duration_s), Lazy(lambda ctx: stop_op(made[0]) if made else None)])


# -- targeted faults -----------------------------------------------------------

def _nodes(view) -> list[str]:
    return sorted(getattr(view, "nodes", None) or {})


def _start(make: Callable[[Context], Fault | None], held: list[Fault]) -> Generator:
    """The start op of ``make(ctx)``'s fault, which is kept in ``held`` for its stop."""
    def op(ctx: Context) -> dict | None:
        f = make(ctx)
        if f is None:
            return None
        held.append(f)
        return start_op(f)
    return Lazy(op)


def _stop(held: list[Fault]) -> Generator:
    """The stop op of the fault :func:`_start` kept in ``held`` (nothing if none started)."""
    return Lazy(lambda ctx: stop_op(held[0]) if held else None)


def lag_fault(rng: random.Random, lag_s: float, down_s: float, n_nodes: int,
              slow_ms: int | None = None) -> Generator:
    """``lag``: isolate a follower for ``lag_s`` while clients write, then heal it and kill the
    leader and the freshest followers, as many as may die while a majority (the laggard
    among it) stays up, for ``down_s``. While they are down, the up-to-date survivors (if
    there are two or more) are cut off from each other but not from the laggard, so only
    the laggard can gather a majority of votes: a correct quorum stays leaderless until the
    killed return, one whose votes ignore the log elects the laggard.

    With ``slow_ms`` (``catchup``) the laggard comes back over links delayed ``slow_ms``,
    until the killed nodes are back; and from :data:`CATCHUP_LEAD_S` before the kill until
    they are back, the survivors drop what the victims send (a one-way partition), so a
    survivor's last Fetch still advances the doomed leader's high watermark (and its client
    acknowledgements) while the answer that would tell the survivor is lost: as when a
    leader dies mid-round."""
    chosen: list[str] = []
    victims: list[str] = []

    def isolate(ctx: Context) -> Fault | None:
        view = ctx.view
        nodes = _nodes(view)
        leader = getattr(view, "leader", None)
        followers = [n for n in nodes if n != leader]
        if not followers:
            return None
        chosen.append(rng.choice(followers))
        return Fault("partition", "nodes", slot="lag", targets=(chosen[0],))

    def kill_fresh(ctx: Context) -> Fault | None:
        view = ctx.view
        if not chosen:
            return None
        lagging = view.lagging(exclude=(chosen[0],)) if hasattr(view, "lagging") else []
        leader = getattr(view, "leader", None)
        fresh = [n for n in reversed(lagging) if n != leader]
        if not victims:
            aimed = ([leader] if leader and leader != chosen[0] else []) + fresh
            victims[:] = aimed[:max(1, n_nodes - majority_size(n_nodes))]
        return Fault("kill", "nodes", slot="lag", targets=tuple(victims)) if victims else None

    def slow(ctx: Context) -> Fault | None:
        return Fault("packet", "nodes", slot="lag-slow", targets=(chosen[0],),
                     params={"effect": "delay", "delay_ms": slow_ms, "jitter_ms": 0}) if chosen else None

    def mute_victims(ctx: Context) -> Fault | None:
        if kill_fresh(ctx) is None:              # aims the kill now, at who leads now
            return None
        survivors = [n for n in _nodes(ctx.view) if n not in victims and n != chosen[0]]
        return Fault("partition", "nodes", slot="lag-lead", targets=tuple(victims),
                     params={"grudge": {s: list(victims) for s in survivors}}) if survivors else None

    def split_survivors(ctx: Context) -> Fault | None:
        fresh = [n for n in _nodes(ctx.view) if n not in victims and n != chosen[0]] if chosen else []
        if len(fresh) < 2:
            return None
        return Fault("partition", "nodes", slot="lag-split", targets=tuple(fresh),
                     params={"grudge": {s: [o for o in fresh if o != s] for s in fresh}})

    cut: list[Fault] = []
    killed: list[Fault] = []
    split: list[Fault] = []
    slowed: list[Fault] = []
    leading: list[Fault] = []
    aim = WaitFor(lambda ctx: getattr(ctx.view, "leader", None) is not None, AIM_TIMEOUT_S)
    if not slow_ms:
        return Seq([aim, _start(isolate, cut), Sleep(lag_s), _stop(cut), _start(kill_fresh, killed),
                    _start(split_survivors, split), Sleep(down_s), _stop(split), _stop(killed)])
    return Seq([aim, _start(isolate, cut), Sleep(lag_s), _start(mute_victims, leading), Sleep(CATCHUP_LEAD_S),
                _start(slow, slowed), _stop(cut), _start(kill_fresh, killed), Sleep(down_s),
                _stop(killed), _stop(leading), _stop(slowed)])


def elect_fault(down_s: float) -> Generator:
    """``elect``: wait for a new leader, or nodes seen in an epoch above the leader's with no
    leader (they have just voted, or stand); kill them at once, cut them off from the other
    nodes while they are down, restart them still cut off (so what they recovered from their
    disks shows before any peer can correct it), and heal after ``down_s``."""
    base: list[int] = []
    target: list[str] = []

    def aimed(ctx: Context) -> bool:
        view = ctx.view
        if view is None:
            return False
        if not base:
            base.append(view.elections)
            return False
        newest = max((seen.time for seen in view.nodes.values()), default=0.0)
        electing = [n for n, seen in sorted(view.nodes.items())
                    if seen.epoch > view.epoch and seen.leader < 0 and seen.time >= newest - 1.0]
        if electing:       # the candidate and those that voted: which is which does not show
            target[:] = electing
            return True
        if view.elections > base[0] and view.leader is not None:
            target[:] = [view.leader]
            return True
        return False

    def kill(ctx: Context) -> Fault | None:
        return Fault("kill", "nodes", slot="elect", targets=tuple(target)) if target else None

    def cut(ctx: Context) -> Fault | None:
        return Fault("partition", "nodes", slot="elect-cut", targets=tuple(target)) if target else None

    killed: list[Fault] = []
    isolated: list[Fault] = []
    return Seq([WaitFor(aimed, AIM_TIMEOUT_S, poll_s=0.02), _start(kill, killed), _start(cut, isolated),
                Sleep(0.2), _stop(killed), Sleep(down_s), _stop(isolated)])


def batch_fault(down_s: float) -> Generator:
    """``batch``: kill the leader while its log holds records past its high watermark (as its
    DescribeQuorum last showed), for ``down_s``."""
    target: list[str] = []

    def in_flight(ctx: Context) -> bool:
        view = ctx.view
        leader = getattr(view, "leader", None)
        if leader is None or view.log_end.get(leader, -1) <= view.high_watermark:
            return False
        target[:] = [leader]
        return True

    return Seq([WaitFor(in_flight, AIM_TIMEOUT_S, poll_s=0.02),
                fault_window(lambda ctx: Fault("kill", "nodes", slot="batch", targets=tuple(target))
                             if target else None, down_s)])


#: each targeted fault, beside the families: ``make(rng, duration_s, n_nodes)``, its generator
#: lasting about ``duration_s`` (s) on ``n_nodes`` nodes
TARGETED: dict[str, Callable[[random.Random, float, int], Generator]] = {
    "lag": lambda rng, duration_s, n_nodes: lag_fault(rng, duration_s, max(1.0, duration_s / 2), n_nodes),
    # down as long as the lag: the new leader waits for its laggard until the killed come back
    "catchup": lambda rng, duration_s, n_nodes: lag_fault(rng, duration_s, duration_s, n_nodes,
                                                          slow_ms=CATCHUP_DELAY_MS),
    "elect": lambda rng, duration_s, n_nodes: elect_fault(max(0.5, duration_s / 2)),
    "batch": lambda rng, duration_s, n_nodes: batch_fault(max(0.5, duration_s / 2)),
}


def targeted_fault(name: str, rng: random.Random, duration_s: float, n_nodes: int) -> Generator:
    """The targeted fault ``name`` (in :data:`TARGETED`) lasting about ``duration_s``; raises
    ValueError for another name."""
    make = TARGETED.get(name)
    if make is None:
        raise ValueError(f"unknown targeted fault {name!r}: choose from {', '.join(TARGETED)}")
    return make(rng, duration_s, n_nodes)
