"""What the fault families' simulator hooks act on (``faults.spec.SimWorld``): the runtime's
nodes, network and wall clocks, and the voter changes of :mod:`sim.admin`. It keeps which
nodes a fault stopped or paused, so that their stops and the final heal undo just those."""
from __future__ import annotations

import random

from .admin import Admin, leader_of
from .network import LinkFault
from .runtime import Runtime


def companion_slot(k: int) -> str:
    """The fault window (history ``value.slot``) of the ``k``-th voter change that overlaps a
    membership fault's own (the checkers pair each start with its stop by slot)."""
    return f"admin-{k + 2}"


class World:
    """The simulated cluster as the fault hooks see it: quorum nodes ``ids`` of ``rt``, voter
    changes through ``admin``, at ``kraft_version``. ``down``: nodes stopped by a fault (to
    restart), ``paused``: nodes paused by one. ``admin_clients``: how many operators request
    voter changes at once: a voter removal comes with ``admin_clients - 1`` removals of other
    voters (drawn from the world's own stream, ``rng``), all requested in the same instant and
    each retried on its own, and they are added back together."""

    def __init__(self, rt: Runtime, admin: Admin, ids: list[int], kraft_version: int, admin_clients: int = 1):
        self.rt, self.admin, self.ids, self.kraft_version = rt, admin, ids, kraft_version
        self.down: set[int] = set()
        self.paused: set[int] = set()
        self.admin_clients = admin_clients
        self.rng = random.Random(rt.seed * 7 + 5)
        self.companions: dict[int, list[int]] = {}

    def name(self, node: int) -> str:
        return f"n{node}"

    def up(self, node: int) -> bool:
        return self.rt.up(node)

    def leader(self) -> int | None:
        """The live, unpaused quorum node leading the highest epoch, or None."""
        return leader_of(self.rt, self.ids)

    # -- processes and disks -------------------------------------------------------------------
    def stop_node(self, node: int, power_loss: bool = False, torn: bool = False) -> int:
        lost = self.rt.stop(node, power_loss=power_loss, torn=torn)
        self.down.add(node)
        return lost

    def restart_node(self, node: int) -> None:
        if node in self.down:
            self.down.discard(node)
            self.rt.start(node)

    def wipe_node(self, node: int) -> dict:
        sim_node = self.rt.nodes[node]
        was_down = not self.rt.up(node)
        self.rt.stop(node)
        old, last = sim_node.disk.directory_id, len(sim_node.disk.log(None).records) - 1
        sim_node.wipe()
        self.down.add(node)
        return {"down": was_down, "old_directory_id": old, "new_directory_id": sim_node.disk.directory_id,
                "last_offset": last if last >= 0 else None}

    def may_wipe(self, node: int) -> bool:
        """A wipe at kraft.version 1 keeps a majority of the voter keys on intact disks (as the
        real nemesis does: nemesis/wipe.py's ``guard_wipes``)."""
        lead = self.leader()
        if lead is None:
            return False
        voters = self.rt.nodes[lead].core.voters
        intact = [v for v in voters.voters if v.id != node
                  and self.rt.nodes[v.id].disk.directory_id == v.directory_id and v.id not in self.down]
        return len(intact) >= voters.majority

    def pause_node(self, node: int) -> None:
        self.rt.pause(node)
        self.paused.add(node)

    def resume_node(self, node: int) -> None:
        self.rt.resume(node)
        self.paused.discard(node)

    # -- network and clocks --------------------------------------------------------------------
    def cut(self, grudge: dict[int, list[int]]) -> None:
        self.rt.net.grudge(grudge)

    def heal_cuts(self) -> None:
        self.rt.net.heal_cuts()

    def shape(self, links: list[tuple[int, int]], delay_ms: float, jitter_ms: float, loss: float,
              duplicate: float) -> None:
        self.rt.net.shape(links, LinkFault(delay_ms, jitter_ms, loss, duplicate))

    def heal_packets(self) -> None:
        self.rt.net.heal_packets()

    def shift_clock(self, node: int, offset_ms: float) -> None:
        self.rt.nodes[node].wall_offset_ms += offset_ms

    def reset_clock(self, node: int) -> None:
        self.rt.nodes[node].wall_offset_ms = 0.0

    # -- voter changes -------------------------------------------------------------------------
    def voter_change_busy(self) -> bool:
        return bool(self.admin.in_flight or self.admin.removed)

    def remove_voter(self, node: int) -> None:
        others = [i for i in self.ids if i != node and i not in self.admin.removed and i not in self.admin.busy]
        extra = sorted(self.rng.sample(others, min(len(others), self.admin_clients - 1)))
        self.companions[node] = extra
        self.admin.remove(node)
        for k, n in enumerate(extra):
            self.admin.remove(n, slot=companion_slot(k))

    def add_back_voter(self, node: int) -> None:
        self.admin.add_back(node)
        for k, n in enumerate(self.companions.pop(node, [])):
            self.admin.add_back(n, slot=companion_slot(k))

    def replace_voter(self, node: int) -> None:
        self.admin.replace(node)
