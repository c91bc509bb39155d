"""Carrying out a :class:`sim.faults.PlannedFault` in the simulator: choosing its targets when
it starts, applying it through its family's simulator hooks (``faults.spec.SimHooks``, on the
:class:`sim.world.World`), undoing it when it stops, and recording both as nemesis ops
(DEVELOPERS.md "Nemesis ops": ``start-<family>`` / ``stop-<family>``; a partition's value
names its ``grudge``, ``{node: [nodes it drops packets from]}``). Voter changes (KIP-853) go
to the leader as RemoveRaftVoter / AddRaftVoter requests (:mod:`sim.admin`).

:attr:`Nemesis.applied` lists each fault as it landed (explicit targets and grudge), the
material of an exported scenario (sim/export.py).
"""
from __future__ import annotations

import random

from faults.registry import fault_spec
from faults.spec import SimStart

from .admin import Admin, leader_of
from .faults import PlannedFault
from .recording import Recording
from .runtime import Runtime
from .world import World

current_leader = leader_of


class Nemesis:
    """Applies faults to quorum nodes ``ids`` of ``rt``; records into ``rec``; ``admin_clients``:
    the voter changes a membership fault requests at once (:class:`sim.world.World`)."""

    def __init__(self, rt: Runtime, rec: Recording, ids: list[int], kraft_version: int,
                 brokers: list[int] | None = None, admin_clients: int = 1):
        self.rt, self.rec, self.ids, self.kv = rt, rec, ids, kraft_version
        self.brokers = list(brokers or [])
        self.admin = Admin(rt, rec, ids)
        self.world = World(rt, self.admin, ids, kraft_version, admin_clients)
        self.applied: list[dict] = []

    def schedule(self, specs: list[PlannedFault]) -> None:
        """Start each fault at its time."""
        for s in specs:
            self.rt.at(s.at_ms, lambda s=s: self.start(s))

    # -- targets -------------------------------------------------------------------------------
    def _pool(self, s: PlannedFault) -> list[int]:
        """The nodes a fault may hit: the quorum's, and the brokers' too unless its family
        touches the quorum only (wipes, voter changes)."""
        return self.ids if fault_spec(s.family).sim.quorum_only else self.ids + self.brokers

    def _targets(self, s: PlannedFault) -> tuple[list[int], bool]:
        ids = self._pool(s)
        n = len(ids)
        rng = random.Random(s.param("pick", 0))
        lead = current_leader(self.rt, self.ids)
        spec = fault_spec(s.family)
        if spec.aims_at_leader(s.kind) or s.kind in spec.sim.aims_at_leader:
            if lead is not None:
                return [lead], False
            return [ids[rng.randrange(n)]], True
        if s.kind == "minority":
            return sorted(rng.sample(ids, (n - 1) // 2)), False
        if s.kind == "majority":
            rest = [i for i in ids if i != lead]
            k = n // 2 + 1
            picked = ([lead] if lead is not None else []) + rng.sample(rest, k - (lead is not None))
            return sorted(picked), False
        if s.kind == "all" or s.param("all_links"):
            return list(ids), False
        return [ids[rng.randrange(n)]], False

    # -- start and stop ----------------------------------------------------------------------
    def start(self, s: PlannedFault) -> None:
        rt = self.rt
        hooks = fault_spec(s.family).sim
        targets, unknown = self._targets(s)
        asked = {"kind": s.kind, **{k: v for k, v in s.params if k not in ("pick", "all_links")}}
        done = {"kind": s.kind, "targets": [f"n{t}" for t in targets]}
        if unknown:
            done["leader_unknown"] = True
        landed = {"at_ms": rt.now, "duration_ms": s.duration_ms, "family": s.family, "kind": s.kind,
                  "targets": targets, "params": dict(asked), "leader": current_leader(rt, self.ids)}
        started = SimStart(targets, self._pool(s), done, landed)
        hooks.start(self.world, s, started)
        targets = started.targets
        landed["targets"] = targets
        done["targets"] = [f"n{t}" for t in targets]
        rt.note(f"start {s.family}/{s.kind} {done}")
        if hooks.records:              # else its own ops are recorded as they go (voter changes)
            self.rec.nemesis(f"start-{s.family}", asked, done)
        self.applied.append(landed)
        rt.at(rt.now + s.duration_ms, lambda: self.stop(s, targets))

    def stop(self, s: PlannedFault, targets: list[int]) -> None:
        hooks = fault_spec(s.family).sim
        done: dict = {"kind": s.kind, "targets": [f"n{t}" for t in targets]}
        hooks.stop(self.world, s, targets)
        self.rt.note(f"stop {s.family}/{s.kind}")
        if hooks.records:
            self.rec.nemesis(f"stop-{s.family}", {"kind": s.kind}, done)

    def heal_all(self) -> None:
        """The end of the faults: heal the network, resume and restart every node, add back every
        removed voter; recorded as ``heal``."""
        rt = self.rt
        rt.net.heal_cuts()
        rt.net.heal_packets()
        restarted = []
        for i in self.ids + self.brokers:
            n = rt.nodes[i]
            n.wall_offset_ms = 0.0
            if n.paused:
                rt.resume(i)
            if n.core is None:
                rt.start(i)
                restarted.append(f"n{i}")
        self.world.down.clear()
        self.world.paused.clear()
        self.rec.nemesis("heal", {"kind": "all"}, {"kind": "all", "held": restarted, "restarted": []})
        if self.kv:
            self.admin.restore()
