"""Which simulation options show each ``--unsafe`` switch's bug soonest (README "Simulation",
the table of switches): ``kraft-chaos simulate --unsafe X`` takes them unless told
otherwise.

Most switches show under the defaults (3 voters, kraft.version 0, the random fault mix).
``early-high-watermark`` needs a new leader whose only follower catches up over several
small Fetches while clients read (the catalogue's ``catchup`` schedule does the same with
``fetch_max_records=100``). The data-plane switches (:data:`NEEDS_BROKERS`) need our
brokers: three of them. ``reset-election-timer`` (the election-timer livelock) shows only
in elections without Pre-Vote: it brings the ``no-pre-vote`` switch along (its preset's
``unsafe`` is added to the switches asked for).
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
    "reset-election-timer": {"unsafe": ("no-pre-vote",)},
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
    the fields not in ``explicit`` (those the user set)."""
    changes = {k: v for k, v in preset(switches).items() if k not in explicit}
    if "unsafe" in changes:                   # switches a preset brings along join the others
        changes["unsafe"] = tuple(dict.fromkeys((*base.unsafe, *changes["unsafe"])))
    return dataclasses.replace(base, **changes)


def all_switches() -> list[str]:
    """Every switch, in kraft/core/unsafe.py's order."""
    return list(SWITCHES)
