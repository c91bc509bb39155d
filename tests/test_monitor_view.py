"""The quorum monitor's view (workloads/monitor.py), which nemeses and scenario waits aim
with: a leader that stops answering is no longer the view's leader."""
from __future__ import annotations

import asyncio

from history import HistoryWriter
from history import outcomes
from workloads.counters import Sequence
from workloads.monitor import QuorumMonitor
from workloads.topology import Topology


def test_a_leader_that_stops_answering_leaves_the_view(tmp_path):
    state = {"n1": "lead", "n2": "follow"}

    class Client:
        def __init__(self, host, port, cluster_id, timeout_ms):
            self.node = {1: "n1", 2: "n2"}[port]

        async def describe_quorum(self):
            s = state[self.node]
            if s == "lead":
                return {"LeaderId": 1, "LeaderEpoch": 3, "HighWatermark": 5,
                        "CurrentVoters": [{"ReplicaId": 1, "LogEndOffset": 5}],
                        "Observers": [{"ReplicaId": 2, "LogEndOffset": 4}]}
            if s == "follow":
                raise outcomes.DefiniteError("NOT_LEADER_OR_FOLLOWER", leader_id=1, leader_epoch=3)
            raise outcomes.DefiniteError("connection")

        async def close(self):
            pass

    topo = Topology(("n1", "n2"), {"n1": ("h", 1), "n2": ("h", 2)}, {"n1": 1, "n2": 2}, Client)
    mon = QuorumMonitor(topo, "CID", HistoryWriter(tmp_path / "h.jsonl"), Sequence(100), interval_ms=10, timeout_ms=100,
                         client_factory=Client)

    async def main():
        stop = asyncio.Event()
        task = asyncio.create_task(mon.run(stop))
        await asyncio.sleep(0.1)
        seen = (mon.view.leader, mon.view.epoch, mon.view.log_end)
        state["n1"] = "dead"                   # killed: connection refused from now on
        await asyncio.sleep(0.1)
        gone = mon.view.leader
        state["n1"] = "lead"
        await asyncio.sleep(0.1)
        stop.set()
        await task
        return seen, gone, mon.view.leader

    seen, gone, back = asyncio.run(main())
    assert seen == ("n1", 3, {"n1": 5, "n2": 4})      # an observer's log end too (KIP-853)
    assert gone is None and back == "n1"
