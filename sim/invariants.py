"""The named invariants the simulator checks after every step of every node (Kafka's
``RaftEventSimulationTest`` invariants, and the data plane's).

Quorum (:class:`QuorumInvariants`):

- ``election-safety``: at most one leader per epoch (Raft §5.2; MonotonicEpoch/SingleLeader);
- ``hw-monotonic``: no node's high watermark goes backwards (within one life of the node:
  a restart starts from 0, as the high watermark is not persisted);
- ``committed-agreement``: the records below any node's high watermark are the same on
  every node (compared with the first copy ever committed at that offset);
- ``committed-lost``: a node that becomes leader holds every record committed so far
  (Raft's leader completeness, so no committed record is lost);
- ``voter-change``: a leader's voter set changes by at most one voter at a time (KIP-853).

Brokers (:class:`sim.broker_invariants.BrokerInvariants`): ``acked-produce-lost`` and
``consumer-above-hw``. A core's own FatalError (e.g. truncation below the high watermark)
is ``node-fatal``.

Each check costs O(1) per step unless something changed (an election, a higher high
watermark, a voter-set record).
"""
from __future__ import annotations

import dataclasses

from kraft.core.events import StateChanged, WriteLog
from kraft.core.records import VOTERS
from kraft.core.states import StateKind

LEADER = StateKind.LEADER
#: every invariant's name, and what it means
NAMES = {
    "election-safety": "at most one leader per epoch",
    "hw-monotonic": "no node's high watermark goes backwards",
    "committed-agreement": "committed data identical on every node that has it",
    "committed-lost": "no committed record lost (a new leader holds every committed record)",
    "voter-change": "voter sets change one voter at a time",
    "node-fatal": "a node stopped on its own invariant check (FatalError)",
    "acked-produce-lost": "no acknowledged acks=-1 record lost",
    "consumer-above-hw": "consumers never read above the high watermark",
    "liveness": "after the final heal, a committed leader within the bound and every client op "
                "completed (sim/liveness.py)",
}


@dataclasses.dataclass(frozen=True)
class Violation:
    """The first broken invariant: ``name`` (a key of :data:`NAMES`), ``at_ms`` (virtual
    time) and ``detail`` (one line)."""

    name: str
    at_ms: float
    detail: str


class InvariantBroken(Exception):
    """Raised by a check to stop the schedule; carries the :class:`Violation`."""

    def __init__(self, violation: Violation):
        super().__init__(f"{violation.name}: {violation.detail}")
        self.violation = violation


def _key(r) -> tuple:
    return (r.epoch, r.type, r.payload)


class QuorumInvariants:
    """The quorum's invariants over one schedule; ``now()`` gives the virtual time (ms)."""

    def __init__(self, now):
        self.now = now
        self.leaders: dict[int, int] = {}            # epoch -> node id
        self.hw: dict[int, tuple[int, int]] = {}      # node -> (life, high watermark)
        self.committed: list[tuple] = []             # (epoch, type, payload) by offset
        self.checked: dict[int, tuple[int, int]] = {}     # node -> (life, offsets compared)
        self.voters: dict[int, object] = {}           # node -> voter set after its last step

    def broken(self, name: str, detail: str) -> None:
        raise InvariantBroken(Violation(name, self.now(), detail))

    def after_step(self, node, core, effects: list) -> None:
        """Check node ``node`` (a SimNode) after a step of ``core`` that gave ``effects``."""
        nid, life = node.id, node.life
        for e in effects:
            t = type(e)
            if t is StateChanged:
                if e.kind is LEADER:
                    self._new_leader(nid, core)
            elif t is WriteLog and e.log is None and core.state.kind is LEADER:
                self._voter_writes(nid, core, e.records)
        hw = core.state.hw
        last = self.hw.get(nid)
        if last is not None and last[0] == life:
            if hw < last[1]:
                self.broken("hw-monotonic", f"n{nid}'s high watermark went from {last[1]} to {hw}")
            if hw == last[1]:
                return
        self.hw[nid] = (life, hw)
        self._compare(nid, life, core, hw)

    def _compare(self, nid: int, life: int, core, hw: int) -> None:
        done = self.checked.get(nid)
        start = done[1] if done is not None and done[0] == life else 0
        if hw <= start:
            return
        committed, records = self.committed, core.state.log.records
        for o in range(start, min(hw, len(records))):
            r = records[o]
            k = (r.epoch, r.type, r.payload)        # _key, inlined: this runs for every commit on every node
            if o < len(committed):
                if committed[o] != k:
                    self.broken("committed-agreement",
                                f"offset {o} committed as {committed[o]!r}, but n{nid} has {k!r} "
                                f"below its high watermark {hw}")
            else:
                committed.append(k)
        self.checked[nid] = (life, hw)

    def _new_leader(self, nid: int, core) -> None:
        epoch = core.epoch
        other = self.leaders.setdefault(epoch, nid)
        if other != nid:
            self.broken("election-safety", f"n{other} and n{nid} both leaders of epoch {epoch}")
        records, committed = core.state.log.records, self.committed
        if len(records) < len(committed):
            self.broken("committed-lost", f"n{nid} became leader of epoch {epoch} with log end "
                                          f"{len(records)}, below the committed end {len(committed)}")
        for o, k in enumerate(committed):
            if _key(records[o]) != k:
                self.broken("committed-lost", f"n{nid} became leader of epoch {epoch} with {_key(records[o])!r} "
                                              f"at offset {o}, where {k!r} was committed")
        self.voters[nid] = {(v.id, v.directory_id) for v in core.state.history.latest.voters}

    def _voter_writes(self, nid: int, core, written: list) -> None:
        prev = self.voters.get(nid)
        for r in written:
            if r.type != VOTERS:
                continue
            new = {(v["VoterId"], v.get("VoterDirectoryId")) for v in r.payload.get("Voters", [])}
            if prev is not None and len(prev ^ new) > 1:
                self.broken("voter-change", f"leader n{nid} wrote voters {sorted(new)} at offset {r.offset} "
                                            f"over {sorted(prev)}")
            prev = new
        self.voters[nid] = prev

    def final_leader(self, nid: int, core) -> None:
        """At the end: the last leader holds every committed record (``committed-lost``)."""
        records = core.state.log.records
        for o, k in enumerate(self.committed):
            if o >= len(records) or _key(records[o]) != k:
                self.broken("committed-lost", f"at the end, leader n{nid} lacks committed offset {o} ({k!r})")
