"""What a fault family is, as data: :class:`FaultSpec`, read by everything that handles the
family's faults. The nemesis applies it on a real cluster (an injector in ``nemesis/``). The
checkers read its ops (checkers/fault_windows.py, checkers/fault_report.py). The plots shade
it (harness/reports/plot_data.py). The simulator draws, applies and exports it (:class:`SimHooks`,
used by sim/faults.py, sim/nemesis.py, sim/export.py).

Standard library only, and nothing of ours: the simulator imports it under PyPy. The
simulator's hooks act on a :class:`SimWorld` that the simulator passes in (sim/world.py), never
on its modules.
"""
from __future__ import annotations

import dataclasses
import random
from typing import Callable, Protocol

#: the kind every family takes beside its own: explicit ``targets`` (a partition: the group
#: cut off, or an explicit ``grudge``), used by the targeted faults and scenario files
EXPLICIT = "nodes"


def always(kind: str, n_nodes: int) -> bool:
    """Every kind works on any number of nodes (the default of :attr:`FaultSpec.usable`)."""
    return True


class Planned(Protocol):
    """A planned fault in a simulated schedule (``sim.faults.PlannedFault``)."""

    at_ms: float
    duration_ms: float
    family: str
    kind: str

    def param(self, name: str, default=None): ...


class SimWorld(Protocol):
    """What a family's simulator hooks act on: the simulated cluster (sim/world.py implements
    it). Nodes are int ids; ``name(id)`` is the node's name in the history (``n<id>``)."""

    kraft_version: int

    def name(self, node: int) -> str: ...

    def up(self, node: int) -> bool: ...

    def stop_node(self, node: int, power_loss: bool = False, torn: bool = False) -> int:
        """Kill the node (``power_loss``: its unsynced writes are lost, ``torn``: the newest
        torn); it stays down until :meth:`restart_node`. Returns the records lost."""

    def restart_node(self, node: int) -> None:
        """Start a node a fault stopped (nothing when it was not stopped by one)."""

    def wipe_node(self, node: int) -> dict:
        """Stop the node and wipe its disk (a fresh directory id); it stays down until
        :meth:`restart_node`. Returns ``{"down", "old_directory_id", "new_directory_id",
        "last_offset"}`` as the real nemesis records a wipe."""

    def may_wipe(self, node: int) -> bool:
        """Whether wiping ``node`` keeps a majority of the voters' keys on intact disks."""

    def pause_node(self, node: int) -> None: ...

    def resume_node(self, node: int) -> None: ...

    def cut(self, grudge: dict[int, list[int]]) -> None:
        """Drop packets: ``{node: [nodes whose packets it drops]}``."""

    def heal_cuts(self) -> None: ...

    def shape(self, links: list[tuple[int, int]], delay_ms: float, jitter_ms: float, loss: float,
              duplicate: float) -> None:
        """Delay (ms, +- jitter), lose and duplicate (fractions) the packets of ``links``
        (``(from, to)``)."""

    def heal_packets(self) -> None: ...

    def shift_clock(self, node: int, offset_ms: float) -> None: ...

    def reset_clock(self, node: int) -> None: ...

    def voter_change_busy(self) -> bool:
        """Whether a voter change is in flight or a removed voter awaits its add back."""

    def remove_voter(self, node: int) -> None: ...

    def add_back_voter(self, node: int) -> None: ...

    def replace_voter(self, node: int) -> None:
        """The KIP-853 replacement of a wiped voter's key by its new one."""


@dataclasses.dataclass
class SimStart:
    """One fault's start in the simulator, as its hooks fill it in: ``targets`` (node ids; a
    hook that lands nothing empties them), ``pool`` (the nodes the family may touch),
    ``value`` (the start op's completion value, shaped as the real nemesis's) and ``landed``
    (what the export reads: a partition adds its ``grudge``, ``{id: [ids]}``)."""

    targets: list[int]
    pool: list[int]
    value: dict
    landed: dict


def _nothing(*args) -> None:
    return None


def _no_params(kind: str, rng: random.Random) -> dict:
    return {}


def _no_export_params(params: dict) -> dict:
    return {}


def explicit_targets(applied: dict, names: Callable[[list[int]], list[str]]) -> dict:
    """A landed fault as explicit targets: ``{"kind": "nodes", "targets": [names]}``."""
    return {"kind": EXPLICIT, "targets": names(applied["targets"])}


@dataclasses.dataclass(frozen=True)
class SimHooks:
    """How the simulator draws, applies and exports a family (sim/faults.py, sim/nemesis.py,
    sim/export.py).

    ``weight`` and ``kinds``: how often a schedule draws the family and which kinds (the
    draw's order is faults/registry.py's ``SIMULATED``); ``draw(kind, rng)``: the fault's
    parameters beyond the node ``pick`` (drawn from the schedule's ``rng`` in a fixed order);
    ``kraft_v1_only``: drawn only at kraft.version 1; ``quorum_only``: touches the quorum's
    nodes only, never brokers; ``aims_at_leader``: kinds beyond the family's leader kinds that
    strike the simulator's leader of the moment.

    ``start(world, fault, started)`` applies it (:class:`SimStart`); ``stop(world, fault,
    targets)`` undoes it; ``records``: False when the family records its own ops (voter
    changes, through the simulator's admin).

    Export to a scenario file: ``export_nodes(applied, names)`` the fault as explicit targets
    (default :func:`explicit_targets`), ``export_params(params)`` the settings a replay keeps;
    ``left_out(applied, names, params)``: a fault the real nemesis cannot play, the line that
    says so (the fault is left out)."""

    weight: int
    kinds: tuple[str, ...]
    start: Callable[[SimWorld, Planned, SimStart], None]
    stop: Callable[[SimWorld, Planned, list[int]], None] = _nothing
    draw: Callable[[str, random.Random], dict] = _no_params
    kraft_v1_only: bool = False
    quorum_only: bool = False
    aims_at_leader: tuple[str, ...] = ()
    records: bool = True
    export_nodes: Callable[[dict, Callable[[list[int]], list[str]]], dict] = explicit_targets
    export_params: Callable[[dict], dict] = _no_export_params
    left_out: Callable[[dict, list[str], dict], str] | None = None


@dataclasses.dataclass(frozen=True)
class FaultSpec:
    """One fault family (faults/registry.py lists them all).

    - ``name``: the history's ``start-<name>`` / ``stop-<name>`` and the ``--nemesis`` name;
      ``kinds``: its kinds on a real cluster, beside :data:`EXPLICIT` (none: the simulator's
      alone); ``usable(kind, n_nodes)``: whether a kind works on that many nodes;
      ``leader_kinds``: the kinds aimed at the leader (they wait for one).
    - Leader: ``needs_leader``: every kind but :data:`EXPLICIT` waits for a leader;
      ``needs_leader_at_kv1``: likewise at kraft.version 1 only; ``asked_first``: the overlap
      schedule asks its timeline before the others, so that when a leader comes after none,
      this family's faults that waited for one start before the faults that strike it.
    - Judging: ``takes_down``: its targets may not answer while it holds
      (checkers/fault_windows.py); ``cuts``: its value's ``grudge`` says who could not talk,
      and without a grudge its targets count as down.
    - Facts that other modules read: ``voter_changes``: its ops carry KIP-853 voter changes
      (``changes``, ``added_back``; its kind ``nodes`` takes an ``action``), which decide
      whether a start happened, are counted in the fault report and need kraft.version 1; its
      stop adds back what its start removed once those nodes caught up. ``wipes_disks``: its
      start's value has ``wiped`` (``{node: {...}}``) and ``wipe_skipped`` (``{node: why}``)
      and, with voter changes in the schedule, its wiped voters are replaced after.
      ``needs_disks``: a run that names it mounts the lazyfs disks.
    - ``located``: kinds that strike the node the target finds for a role of the data plane
      (``DB.locate``: Kafka's transaction or group coordinator, a partition's leader); accepted
      when named (``kill:txn-coordinator``), never drawn for a bare family name, not simulated.
    - Plots: ``colour`` (``#RRGGBB``; None: the plots' grey) and ``label`` (None: the name).
    - ``sim``: how the simulator draws and applies it (:class:`SimHooks`; None: not simulated).
    """

    name: str
    kinds: tuple[str, ...]
    leader_kinds: tuple[str, ...] = ()
    usable: Callable[[str, int], bool] = always
    needs_leader: bool = False
    needs_leader_at_kv1: bool = False
    asked_first: bool = False
    takes_down: bool = False
    cuts: bool = False
    voter_changes: bool = False
    wipes_disks: bool = False
    needs_disks: bool = False
    located: tuple[str, ...] = ()
    colour: str | None = None
    label: str | None = None
    sim: SimHooks | None = None

    def kinds_for(self, n_nodes: int) -> list[str]:
        """The kinds that work on ``n_nodes`` nodes, in order."""
        return [k for k in self.kinds if self.usable(k, n_nodes)]

    def accepts(self, kind: str) -> bool:
        """Whether ``kind`` is one of its kinds, drawn or :attr:`located` (not :data:`EXPLICIT`)."""
        return kind in self.kinds or kind in self.located

    def aims_at_leader(self, kind: str) -> bool:
        """Whether a fault of ``kind`` strikes the leader."""
        return kind in self.leader_kinds

    @property
    def plot_label(self) -> str:
        """The legend's name of the family."""
        return self.label or self.name
