"""The ``flap`` family: a fresh partition every ``period_ms``, healed between (nemesis/flap.py).
Its kinds are partition kinds, usable on as many nodes as a partition's."""
from __future__ import annotations

from faults import partition
from faults.spec import FaultSpec

SPEC = FaultSpec("flap", ("random-halves", "isolate-one", "isolate-leader", "bridge"),
                 leader_kinds=("isolate-leader",), usable=partition.usable, takes_down=True)
