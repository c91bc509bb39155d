"""Carrying out a :class:`sim.faults.FaultSpec` in the simulator: choosing its targets when it
starts, applying it to the runtime, undoing it when it stops, and recording both as nemesis
ops (DEVELOPERS.md "Nemesis ops": ``start-<family>`` / ``stop-<family>``; a partition's value
names its ``grudge``, ``{node: [nodes it drops packets from]}``). Voter changes (KIP-853) go
to the leader as RemoveRaftVoter / AddRaftVoter requests (:mod:`sim.admin`).

:attr:`Nemesis.applied` lists each fault as it landed (explicit targets and grudge), the
material of an exported scenario (sim/export.py).
"""
from __future__ import annotations

import random

from .admin import Admin, leader_of
from .faults import FaultSpec
from .network import LinkFault
from .recording import Recording
from .runtime import Runtime



current_leader = leader_of


class Nemesis:
    """Applies faults to quorum nodes ``ids`` of ``rt``; records into ``rec``."""

    def __init__(self, rt: Runtime, rec: Recording, ids: list[int], kraft_version: int,
                 brokers: list[int] | None = None):
        self.rt, self.rec, self.ids, self.kv = rt, rec, ids, kraft_version
        self.brokers = list(brokers or [])
        self.admin = Admin(rt, rec, ids)
        self.applied: list[dict] = []
        self.down: set[int] = set()          # stopped by a fault, to restart at the end
        self.paused: set[int] = set()

    def schedule(self, specs: list[FaultSpec]) -> None:
        """Start each fault at its time."""
        for s in specs:
            self.rt.at(s.at_ms, lambda s=s: self.start(s))

    # -- targets -------------------------------------------------------------------------------
    def _pool(self, s: FaultSpec) -> list[int]:
        """The nodes a fault may hit: the quorum's, and the brokers' too but for wipes and voter
        changes."""
        return self.ids if s.family in ("wipe", "membership") else self.ids + self.brokers

    def _targets(self, s: FaultSpec) -> tuple[list[int], bool]:
        ids = self._pool(s)
        n = len(ids)
        rng = random.Random(s.param("pick", 0))
        lead = current_leader(self.rt, self.ids)
        if s.kind in ("leader", "isolate-leader", "one-way-leader", "remove-leader"):
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
        if s.kind == "all" or (s.family == "packet" and s.param("all_links")):
            return list(ids), False
        return [ids[rng.randrange(n)]], False

    def _grudge(self, s: FaultSpec, t: int) -> dict[int, list[int]]:
        ids = self._pool(s)
        rng = random.Random(s.param("pick", 0) + 1)
        others = [i for i in ids if i != t]
        if s.kind in ("isolate-one", "isolate-leader"):
            g = {o: [t] for o in others}
            g[t] = others
            return g
        if s.kind in ("one-way-one", "one-way-leader"):
            return {o: [t] for o in others}
        shuffled = rng.sample(ids, len(ids))
        if s.kind == "diamond":
            a, b = shuffled[:2]
            return {a: [b], b: [a]}
        if s.kind == "bridge" and len(ids) >= 3:
            mid = shuffled[0]
            rest = shuffled[1:]
            left, right = rest[:len(rest) // 2], rest[len(rest) // 2:]
        else:                                  # random-halves
            left, right = shuffled[:len(ids) // 2], shuffled[len(ids) // 2:]
        g = {a: list(right) for a in left}
        g.update({b: list(left) for b in right})
        return g

    def _may_wipe(self, t: int) -> bool:
        """A wipe at kraft.version 1 keeps a majority of the voter keys on intact disks (as the
        real nemesis does: nemesis/windows.py)."""
        lead = current_leader(self.rt, self.ids)
        if lead is None:
            return False
        voters = self.rt.nodes[lead].core.voters
        intact = [v for v in voters.voters if v.id != t and self.rt.nodes[v.id].disk.directory_id == v.directory_id
                  and v.id not in self.down]
        return len(intact) >= voters.majority

    # -- start and stop ----------------------------------------------------------------------
    def start(self, s: FaultSpec) -> None:
        rt = self.rt
        targets, unknown = self._targets(s)
        asked = {"kind": s.kind, **{k: v for k, v in s.params if k not in ("pick", "all_links")}}
        done = {"kind": s.kind, "targets": [f"n{t}" for t in targets]}
        if unknown:
            done["leader_unknown"] = True
        landed = {"at_ms": rt.now, "duration_ms": s.duration_ms, "family": s.family, "kind": s.kind,
                  "targets": targets, "params": dict(asked), "leader": current_leader(rt, self.ids)}
        fam = s.family
        if fam == "partition":
            g = self._grudge(s, targets[0])
            rt.net.grudge(g)
            done["grudge"] = {f"n{k}": [f"n{v}" for v in vs] for k, vs in sorted(g.items())}
            landed["grudge"] = g
        elif fam == "packet":
            f = LinkFault(s.param("delay_ms", 0), s.param("jitter_ms", 0), s.param("loss_pct", 0) / 100,
                          s.param("duplicate_pct", 0) / 100)
            rt.net.shape([(a, b) for a in targets for b in self._pool(s) if a != b], f)
        elif fam == "wipe" and not self._may_wipe(targets[0]):
            done["wipe_skipped"] = "a majority of the voters' disks must stay intact"
            targets = []
        elif fam == "wipe":
            done["wiped"] = {}
            for t in targets:
                node = rt.nodes[t]
                was_down = not rt.up(t)
                rt.stop(t)
                old, last = node.disk.directory_id, len(node.disk.log(None).records) - 1
                node.wipe()
                self.down.add(t)
                done["wiped"][f"n{t}"] = {"down": was_down, "old_directory_id": old,
                                          "new_directory_id": node.disk.directory_id,
                                          "last_offset": last if last >= 0 else None}
        elif fam in ("kill", "power-loss"):
            for t in targets:
                if rt.up(t):
                    lost = rt.stop(t, power_loss=fam == "power-loss", torn=bool(s.param("torn")))
                    self.down.add(t)
                    if lost:
                        done.setdefault("lost_records", {})[f"n{t}"] = lost
        elif fam == "pause":
            for t in targets:
                rt.pause(t)
                self.paused.add(t)
        elif fam == "clock":
            for t in targets:
                rt.nodes[t].wall_offset_ms += s.param("offset_ms", 0)
        elif fam == "membership":
            if self.admin.in_flight or self.admin.removed:
                targets = []                  # one voter change at a time, as the real nemesis
            else:
                self.admin.remove(targets[0])
        landed["targets"] = targets
        done["targets"] = [f"n{t}" for t in targets]
        rt.note(f"start {s.family}/{s.kind} {done}")
        if fam != "membership":              # the admin records its voter changes
            self.rec.nemesis(f"start-{fam}", asked, done)
        self.applied.append(landed)
        rt.at(rt.now + s.duration_ms, lambda: self.stop(s, targets))

    def stop(self, s: FaultSpec, targets: list[int]) -> None:
        rt, fam = self.rt, s.family
        done: dict = {"kind": s.kind, "targets": [f"n{t}" for t in targets]}
        if fam == "partition":
            rt.net.heal_cuts()
        elif fam == "packet":
            rt.net.heal_packets()
        elif fam in ("kill", "power-loss", "wipe"):
            for t in targets:
                if t in self.down:
                    self.down.discard(t)
                    rt.start(t)
                if fam == "wipe" and self.kv:
                    self.admin.replace(t)     # at once: the old key must not look like a live voter
        elif fam == "pause":
            for t in targets:
                rt.resume(t)
                self.paused.discard(t)
        elif fam == "clock":
            for t in targets:
                rt.nodes[t].wall_offset_ms = 0.0
        elif fam == "membership" and targets:
            self.admin.add_back(targets[0])
        rt.note(f"stop {s.family}/{s.kind}")
        if fam != "membership":
            self.rec.nemesis(f"stop-{fam}", {"kind": s.kind}, done)

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
        self.down.clear()
        self.paused.clear()
        self.rec.nemesis("heal", {"kind": "all"}, {"kind": "all", "held": restarted, "restarted": []})
        if self.kv:
            self.admin.restore()
