"""One fault as data (:class:`Fault`), and the checks of a family's name and kind.

A fault's ``family`` is what it does (the history's ``start-<family>`` /
``stop-<family>`` ops); its ``kind`` says how targets are chosen or what it
does exactly; its ``slot`` lets faults of one family overlap (each slot has
its own iptables chain and active entry; default: the family's name). The families and
their kinds are faults/registry.py's (``families()``: those a real cluster plays).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from faults.registry import families, spec_of
from faults.spec import EXPLICIT


@dataclasses.dataclass(frozen=True)
class Fault:
    """One fault: ``name`` (its family, one of ``faults.registry.families()``), ``kind``,
    ``slot`` (None: the family's name), ``targets`` (explicit nodes, with kind ``nodes``) and
    ``params`` (family settings, e.g. a flap's ``period_ms``)."""

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
    """Raise ValueError unless ``name`` is a family a real cluster plays and ``kind`` one of its
    kinds, its located kinds (``FaultSpec.located``) or ``nodes``."""
    spec = spec_of(name)
    if spec is None or not spec.kinds:
        raise ValueError(f"unknown nemesis {name!r}: choose from {', '.join(families())}")
    if kind != EXPLICIT and not spec.accepts(kind):
        raise ValueError(f"unknown {name} kind {kind!r}: choose from {', '.join((*spec.kinds, *spec.located))}, "
                         f"{EXPLICIT}")


def kinds_for(name: str, n_nodes: int) -> list[str]:
    """The kinds of family ``name`` that make sense on ``n_nodes`` nodes (its spec's
    ``usable``: partitions, for one, need 2 nodes or more, ``majorities-ring`` exactly 5,
    ``bridge``, ``leader-minority`` and the diamonds 3 or more; flaps likewise). Raises
    ``ValueError`` for an unknown family.
    """
    check_kind(name, EXPLICIT)
    return spec_of(name).kinds_for(n_nodes)
