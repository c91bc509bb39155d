"""What a workload's final phase may ask of the cluster once every fault is healed
(``workloads.registry.Quorum``): a leader, followers caught up, the leader's DescribeQuorum,
each quorum node's log."""
from __future__ import annotations

import asyncio
import logging

from harness.run.leader import describe_all, pick_leader, wait_for_catch_up, wait_for_leader

log = logging.getLogger("kraft_chaos.runner")


class RunQuorum:
    """What a workload's final phase may ask of the cluster (workloads.registry.Quorum)."""

    def __init__(self, db, nodes: list[str], cluster_id: str):
        self.db, self.nodes, self.cluster_id = db, nodes, cluster_id

    async def wait_for_leader(self, timeout_s: float) -> str | None:
        return await wait_for_leader(self.db, self.nodes, self.cluster_id, timeout_s)

    async def wait_for_catch_up(self, timeout_s: float) -> bool:
        return await wait_for_catch_up(self.db, self.nodes, self.cluster_id, timeout_s)

    async def describe_leader(self) -> tuple[str | None, dict | None]:
        bodies = await describe_all(self.db, self.nodes, self.cluster_id)
        leader = pick_leader(bodies)
        return leader, bodies.get(leader) if leader else None

    async def read_logs(self) -> dict[str, list | None]:
        async def one(node: str) -> list | None:
            try:
                return await asyncio.to_thread(self.db.read_log, node)
            except NotImplementedError:
                return None             # the target keeps its log elsewhere (node data)
            except Exception as e:
                log.error("could not read the log of %s: %s", node, e)
                return None
        logs = await asyncio.gather(*(one(n) for n in self.nodes))
        return dict(zip(self.nodes, logs))
