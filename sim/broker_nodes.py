"""Broker nodes in the simulator: a :class:`kraft.replication.BrokerCore` rebuilt from its
:class:`sim.disk.SimDisk` at every (re)start (each partition's log and its high-watermark
checkpoint), as kraft/broker/service.py does from its log dirs. Broker ids follow the quorum's
(voters + 1, ...), named ``n<id>`` like every node.
"""
from __future__ import annotations

from kraft.core.record_log import RecordLog
from kraft.core.unsafe import Unsafe
from kraft.replication import BrokerConfig, BrokerCore

from .disk import SimDisk
from .runtime import Runtime, SimNode


class BrokerNode(SimNode):
    """A broker: ``policy`` (kraft.core.unsafe)."""

    def __init__(self, node_id: int, policy: Unsafe):
        super().__init__(node_id, f"n{node_id}", SimDisk(None))
        self.policy = policy

    def wipe(self) -> None:
        self.disk.wipe(None)

    def build(self, rt: Runtime):
        core = BrokerCore(BrokerConfig(self.id, unsafe=self.policy), clock=lambda: rt.now)
        for key in sorted(k for k in self.disk.logs if k is not None):
            core.add_partition(key, RecordLog(list(self.disk.logs[key].records)), self.disk.hw.get(key, 0))
        return core, []


def broker_nodes(rt: Runtime, first_id: int, n: int, policy: Unsafe) -> list[BrokerNode]:
    """Add and start ``n`` brokers with ids ``first_id``..; returns them."""
    out = [BrokerNode(first_id + i, policy) for i in range(n)]
    for b in out:
        rt.add(b)
        rt.start(b.id)
    return out
