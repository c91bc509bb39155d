"""The faults the nemesis can apply: families, their kinds, and one fault as data.

A fault's ``family`` is what it does (the history's ``start-<family>`` /
``stop-<family>`` ops); its ``kind`` says how targets are chosen or what it
does exactly; its ``slot`` lets faults of one family overlap (each slot has
its own iptables chain and active entry; default: the family's name).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from nemesis.packet import PACKET_KINDS
from nemesis.power_loss import POWER_LOSS_KINDS

PARTITION_KINDS = ("random-halves", "isolate-one", "isolate-leader", "leader-minority",
                   "majorities-ring", "bridge", "one-way-leader", "one-way-one", "leader-diamond", "diamond")
PROCESS_KINDS = ("one", "minority", "leader")
#: ``crash``: SIGKILL a majority (the leader among them) or every node at once,
#: like a power loss; what a node had not written out is gone.
CRASH_KINDS = ("majority", "all")
FLAP_KINDS = ("random-halves", "isolate-one", "isolate-leader", "bridge")
ROLLING_KINDS = ("kill",)
#: ``wipe``: a disk failure: SIGKILL, delete the data, format again (fresh directory id);
#: the node restarts when the fault stops
WIPE_KINDS = ("one", "minority", "leader")
#: every kind takes ``nodes`` too: explicit ``targets`` (for a partition, the group cut off)
EXPLICIT = "nodes"

KINDS: dict[str, tuple[str, ...]] = {
    "partition": PARTITION_KINDS, "kill": PROCESS_KINDS, "pause": PROCESS_KINDS,
    "crash": CRASH_KINDS, "packet": PACKET_KINDS, "flap": FLAP_KINDS, "rolling": ROLLING_KINDS,
    "wipe": WIPE_KINDS, "power-loss": POWER_LOSS_KINDS,
}
#: ``membership``: KIP-853 voter changes (nemesis/membership.py); kind ``nodes`` takes an
#: ``action`` param (remove, add, replace)
KINDS["membership"] = ("remove", "remove-leader", "replace")
FAMILIES = tuple(KINDS)


@dataclasses.dataclass(frozen=True)
class Fault:
    """One fault: ``name`` (its family, in :data:`FAMILIES`), ``kind``, ``slot`` (None: the
    family's name), ``targets`` (explicit nodes, with kind ``nodes``) and ``params``
    (family settings, e.g. a flap's ``period_ms``)."""

    name: str
    kind: str
    slot: str | None = None
    targets: tuple[str, ...] | None = None
    params: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def key(self) -> str:
        """The slot this fault occupies while active."""
        return self.slot or self.name

    def to_value(self) -> dict:
        """The invoke value of this fault's start op: ``{"kind", "slot"?, "targets"?, ...params}``."""
        v: dict = {"kind": self.kind}
        if self.slot:
            v["slot"] = self.slot
        if self.targets is not None:
            v["targets"] = list(self.targets)
        v.update(self.params)
        return v

    @classmethod
    def from_value(cls, name: str, value: Mapping[str, Any]) -> "Fault":
        """The fault an op's ``start-<name>``/``stop-<name>`` value describes; raises ValueError
        for an unknown family or kind, or explicit targets that are not a list of names."""
        check_kind(name, value.get("kind"))
        targets = value.get("targets")
        if targets is not None and not (isinstance(targets, (list, tuple))
                                        and all(isinstance(t, str) for t in targets)):
            raise ValueError(f"nemesis {name}: targets must be a list of node names, got {targets!r}")
        params = {k: v for k, v in value.items() if k not in ("kind", "slot", "targets")}
        return cls(name, value["kind"], value.get("slot"),
                   tuple(targets) if targets is not None else None, params)


def check_kind(name: str, kind: Any) -> None:
    """Raise ValueError unless ``name`` is a family and ``kind`` one of its kinds (or ``nodes``)."""
    if name not in KINDS:
        raise ValueError(f"unknown nemesis {name!r}: choose from {', '.join(FAMILIES)}")
    if kind != EXPLICIT and kind not in KINDS[name]:
        raise ValueError(f"unknown {name} kind {kind!r}: choose from {', '.join(KINDS[name])}, {EXPLICIT}")


def kinds_for(name: str, n_nodes: int) -> list[str]:
    """The kinds of family ``name`` that make sense on ``n_nodes`` nodes.

    Partitions: ``majorities-ring`` only with 5 nodes, ``bridge``,
    ``leader-minority`` and the diamonds with 3 or more, the others with 2 or
    more (none with 1); flaps likewise. Raises ``ValueError`` for an unknown family.
    """
    check_kind(name, KINDS.get(name, ("?",))[0])
    kinds = list(KINDS[name])
    if name in ("partition", "flap"):
        if n_nodes < 2:
            return []
        kinds = [k for k in kinds if not (k == "majorities-ring" and n_nodes != 5)
                 and not (k in ("bridge", "diamond", "leader-diamond", "leader-minority") and n_nodes < 3)]
    return kinds
