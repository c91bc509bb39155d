"""Helpers for driving the cores (kraft/quorum/, kraft/replication/) by hand-made events in
unit tests: a settable clock, cores built from a log, and effect filters."""
from __future__ import annotations

import random

from kraft.core.events import Reply, Send
from kraft.core.record_log import RecordLog
from kraft.core.records import DATA, Record
from kraft.core.states import ElectionState
from kraft.core.unsafe import Unsafe
from kraft.quorum import QuorumConfig, QuorumCore
from kraft.rules.voter_set import VoterHistory, VoterNode, VoterSet


class Clock:
    """A clock the test moves: ``clock.t`` (ms)."""

    def __init__(self, t: float = 0.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def voters(n: int, dirs: bool = False) -> VoterSet:
    """Voters 1..n (with directory ids ``d<i>`` when ``dirs``)."""
    return VoterSet(tuple(VoterNode(i, f"d{i}" if dirs else None, "h", 9000 + i) for i in range(1, n + 1)))


def records(epochs) -> list[Record]:
    """Data records at offsets 0.. with the given epochs."""
    return [Record(i, e, DATA, i) for i, e in enumerate(epochs)]


def quorum_core(node_id: int = 1, n: int = 3, epochs=(), election: ElectionState = ElectionState(),
                switches=(), clock: Clock | None = None, history: VoterHistory | None = None,
                directory_id: str | None = None, seed: int = 0, **cfg) -> tuple[QuorumCore, list]:
    """A started quorum core of voter ``node_id`` among ``n`` (kraft.version 0) over a log of
    ``epochs``; returns (core, the start effects)."""
    clock = clock or Clock()
    cfg = dict(dict(election_timeout_ms=100, fetch_timeout_ms=200, request_timeout_ms=500,
                    fetch_max_wait_ms=50, election_backoff_max_ms=100), **cfg)
    c = QuorumCore(QuorumConfig(node_id, directory_id, unsafe=Unsafe.of(switches), **cfg),
                   RecordLog(records(epochs)), history or VoterHistory(voters(n), 0), clock=clock,
                   rng=random.Random(seed))
    return c, c.start(election)


def of(effects: list, kind) -> list:
    """The effects of type ``kind``."""
    return [e for e in effects if type(e) is kind]


def sent(effects: list, msg_type=None) -> list[Send]:
    """The Send effects (of messages of ``msg_type``)."""
    return [e for e in effects if type(e) is Send and (msg_type is None or type(e.msg) is msg_type)]


def replies(effects: list) -> dict:
    """Reply effects as {token: message}."""
    return {e.token: e.msg for e in effects if type(e) is Reply}


class Driver:
    """Drives one core: keeps the timers its SetTimer effects ask for, and fires them in
    time order as :meth:`advance` moves the clock. ``effects`` holds everything so far."""

    def __init__(self, core, clock: Clock, start_effects: list):
        self.core, self.clock = core, clock
        self.timers: dict = {}
        self.effects: list = []
        self.take(start_effects)

    def take(self, effects: list) -> list:
        from kraft.core.events import SetTimer
        for e in effects:
            if type(e) is SetTimer:
                self.timers[e.key] = e.at
        self.effects += effects
        return effects

    def step(self, event) -> list:
        """Hand ``event`` to the core now; returns its effects."""
        return self.take(self.core.step(event))

    def advance(self, to: float) -> list:
        """Fire every timer due up to ``to`` (ms), in order; returns the effects."""
        from kraft.core.events import TimerFired
        out: list = []
        while self.timers:
            key = min(self.timers, key=lambda k: (self.timers[k], str(k)))
            at = self.timers[key]
            if at > to:
                break
            del self.timers[key]
            self.clock.t = max(self.clock.t, at)
            out += self.step(TimerFired(key, at))
        self.clock.t = max(self.clock.t, to)
        return out
