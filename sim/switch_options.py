"""Which simulation options show each ``--unsafe`` switch's bug soonest (README "Simulation",
the table of switches): ``kraft-chaos simulate --unsafe X`` takes them unless told
otherwise.

Most switches show under the defaults (3 voters, kraft.version 0, the random fault mix).
``early-high-watermark`` needs a new leader whose only follower catches up over several
small Fetches while clients read (the catalogue's ``catchup`` schedule does the same with
``fetch_max_records=100``). The data-plane switches (:data:`NEEDS_BROKERS`) need our
brokers: three of them. ``kv-cas-at-propose`` is a bug of the kv state machine: it needs
the kv workload.
"""
from __future__ import annotations

import dataclasses

from kraft.core.unsafe import SWITCHES

#: switch -> SimOptions fields that make its bug show soonest
PRESETS: dict[str, dict] = {
    "early-high-watermark": {"fetch_max_records": 10, "read_fraction": 0.5},
    "hw-below-min-isr": {"brokers": 3},
    "truncate-to-hw": {"brokers": 3},
    "page-cache-ack": {"brokers": 3},
    "kv-cas-at-propose": {"workload": "kv"},
}
#: the switches of the brokers' data plane (kraft/replication/): they need ``--brokers``
NEEDS_BROKERS = ("hw-below-min-isr", "truncate-to-hw", "page-cache-ack")


def preset(switches) -> dict:
    """The merged presets of ``switches`` (later ones win on a clash)."""
    out: dict = {}
    for s in switches:
        out.update(PRESETS.get(s, {}))
    return out


def options_for(switches, base, explicit: frozenset = frozenset()):
    """``base`` (a :class:`sim.api.SimOptions`) with the presets of ``switches`` applied to
    the fields not in ``explicit`` (those the user set); a preset ``workload`` (a quorum
    workload's) does not apply where brokers run (they run the queue workload)."""
    changes = {k: v for k, v in preset(switches).items() if k not in explicit}
    out = dataclasses.replace(base, **changes)
    if out.brokers and out.workload != base.workload:
        out = dataclasses.replace(out, workload=base.workload)   # brokers run the queue workload: no quorum one
    return out


def all_switches() -> list[str]:
    """Every switch, in kraft/core/unsafe.py's order."""
    return list(SWITCHES)
