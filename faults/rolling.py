"""The ``rolling`` family: every target SIGKILLed and restarted in turn, ``gap_s`` apart, while
the fault holds (nemesis/rolling.py)."""
from __future__ import annotations

from faults.spec import FaultSpec

SPEC = FaultSpec("rolling", ("kill",), takes_down=True)
