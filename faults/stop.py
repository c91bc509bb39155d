"""The ``stop`` family: a clean shutdown (SIGTERM) of one node, a minority or the leader, started
again when the fault stops (nemesis/stop.py). Unlike ``kill``, the node ends as its operator
would end it: a Kafka broker runs its controlled shutdown (leaderships moved away, logs
flushed, ``.kafka_cleanshutdown`` written), which is what KIP-966's Eligible Leader Replicas
count on. Not simulated: our quorum's nodes have no shutdown of their own to model."""
from __future__ import annotations

from faults.kill import LOCATED_KINDS, PROCESS_KINDS
from faults.spec import FaultSpec

SPEC = FaultSpec("stop", PROCESS_KINDS, leader_kinds=("leader",), takes_down=True, located=LOCATED_KINDS,
                 colour="#C9A0E9", label="clean stop")
