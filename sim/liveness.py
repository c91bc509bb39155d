"""The simulator's liveness invariant, ``liveness``: once the faults stop and everything heals,
the quorum makes progress again (TigerBeetle's VOPR liveness mode; Kafka's
``RaftEventSimulationTest`` asserts that a leader is eventually elected).

Checked at the end of every schedule, after the nemesis's final heal (virtual time
``healed_ms``):

- **a leader within the bound**: a live, unpaused voter leads and has committed the first
  record of its epoch (``QuorumCore.leader_epoch_committed``) no later than
  :func:`bound_ms` after the heal: :data:`BOUND_TIMEOUTS` election timeouts;
- **every client op completes**: by the end of the final reads no client op (the
  quorum monitor's samples aside) is left without a completion. Whether the final reads are
  ``ok`` is not asked: a leader may legitimately step down just after the heal (its
  check-quorum window still counting the partition), and its final read then fails.

Only the healed end is judged: during the faults anything may stall. A schedule that breaks
either fails as the invariant ``liveness`` (:class:`sim.invariants.Violation`).
"""
from __future__ import annotations

from history import NEMESIS

from .admin import leader_of
from .invariants import InvariantBroken, Violation
from .runtime import Runtime

#: how long after the final heal a committed leader may take, in election timeouts (ms each:
#: the cores' ``election_timeout_ms``). A follower notices a dead leader after its fetch
#: timeout (2 election timeouts), then stands after up to 2 more; a split vote or a lost
#: Pre-Vote costs another 2 or so. 8 leaves room for two such rounds on top
BOUND_TIMEOUTS = 8
#: the quorum monitor's op (sim/monitor.py): its samples are not client ops
MONITOR_F = "describe-quorum"


def bound_ms(election_timeout_ms: float) -> float:
    """The bound (ms of virtual time after the heal) for a committed leader."""
    return BOUND_TIMEOUTS * election_timeout_ms


class LivenessWatch:
    """Watches the healed end of one schedule: quorum nodes ``ids`` of ``rt``, healed at
    ``healed_ms`` (virtual ms), with election timeout ``election_timeout_ms``.
    :meth:`poll` after every slice of the settling loop; :meth:`check_leader` once it ends;
    :meth:`check_ops` after the final reads."""

    def __init__(self, rt: Runtime, ids: list[int], healed_ms: float, election_timeout_ms: float):
        self.rt, self.ids, self.healed_ms = rt, ids, healed_ms
        self.bound = bound_ms(election_timeout_ms)
        #: when a committed leader was first seen after the heal (virtual ms), or None
        self.led_at: float | None = None

    def poll(self) -> bool:
        """Look for a committed leader now; True once one has been seen."""
        if self.led_at is None:
            lead = leader_of(self.rt, self.ids)
            if lead is not None and self.rt.nodes[lead].core.leader_epoch_committed():
                self.led_at = self.rt.now
        return self.led_at is not None

    def check_leader(self) -> None:
        """Raise :class:`InvariantBroken` (``liveness``) unless a committed leader came within
        the bound of the heal."""
        if self.led_at is None or self.led_at - self.healed_ms > self.bound:
            when = ("none by " + f"{(self.rt.now - self.healed_ms) / 1000:.3f} s after it"
                    if self.led_at is None else f"the first {(self.led_at - self.healed_ms) / 1000:.3f} s after it")
            self._broken(self.healed_ms + self.bound,
                         f"no leader committed in its epoch within {self.bound / 1000:g} s of the final heal "
                         f"at {self.healed_ms / 1000:.3f} s ({when})")

    def check_ops(self, ops: list[dict]) -> None:
        """Raise :class:`InvariantBroken` (``liveness``) if a client op of ``ops`` (the history)
        has no completion."""
        open_ops: dict = {}
        for op in ops:
            p = op["process"]
            if p == NEMESIS or op["f"] == MONITOR_F:
                continue
            if op["type"] == "invoke":
                open_ops[p] = op
                continue
            open_ops.pop(p, None)
        if open_ops:
            first = min(open_ops.values(), key=lambda o: o["index"])
            self._broken(self.rt.now, f"{len(open_ops)} client op(s) never completed, the first "
                                      f"{first['f']} invoked at {first['time'] / 1e9:.3f} s by process {first['process']}")

    def _broken(self, at_ms: float, detail: str) -> None:
        raise InvariantBroken(Violation("liveness", at_ms, detail))
