"""The ``crash`` family: SIGKILL of a majority (the leader among it) or of every node at once,
restarted when the fault stops (nemesis/kill.py); what a node had not written out is gone. Not
simulated (the simulator's ``power-loss`` of a majority or all covers it)."""
from __future__ import annotations

from faults.spec import FaultSpec

SPEC = FaultSpec("crash", ("majority", "all"), takes_down=True, colour="#E9D3A0")
