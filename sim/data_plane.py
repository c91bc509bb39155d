"""The data plane of a simulated schedule with ``--brokers``: our brokers beside the quorum, the
controller that feeds them the quorum's committed metadata, the queue workload's clients,
the data plane's invariants checked after every broker step, and the final drain.
"""
from __future__ import annotations

import random

from kraft.core.unsafe import Unsafe

from .broker_invariants import BrokerInvariants
from .broker_nodes import broker_nodes
from .controller import TOPIC, SimController
from .invariants import QuorumInvariants
from .queue_clients import QueueClients
from .recording import Recording
from .runtime import Runtime


class DataPlane:
    """``brokers`` brokers (ids after the quorum's ``qids``) with ``policy``; ``qinv`` the quorum's
    invariants (the runtime's step hook is shared). ``ids``: the brokers' node ids;
    ``clients``: the queue clients."""

    def __init__(self, rt: Runtime, rec: Recording, rng: random.Random, qids: list[int], brokers: int,
                 policy: Unsafe, qinv: QuorumInvariants, concurrency: int):
        self.rt = rt
        self.inv = BrokerInvariants(lambda: rt.now, self._holders)
        first = max(qids) + 1
        self.ids = [first + i for i in range(brokers)]
        quorum = set(qids)
        binv = self.inv
        rt.on_step = lambda n, core, effects: (qinv if n.id in quorum else binv).after_step(n, core, effects)
        broker_nodes(rt, first, brokers, policy)
        self.controller = SimController(rt, qids, self.ids)
        rt.on_effect = self.controller.on_effect
        self.clients = QueueClients(rt, rec, rng, self.controller, self.inv, concurrency)

    def _holders(self, key: tuple, record) -> int:
        """How many brokers hold ``record`` of partition ``key`` (a live one in its log, a
        down one on its disk)."""
        n = 0
        for b in self.ids:
            node = self.rt.nodes[b]
            if node.core is not None:
                st = node.core.states.get(key)
                recs = st.log.records if st is not None else ()
            else:
                f = node.disk.logs.get(key)
                recs = f.records if f is not None else ()
            o = record.offset
            if o < len(recs) and recs[o].epoch == record.epoch and recs[o].payload == record.payload:
                n += 1
        return n

    def on_reply(self, token, msg) -> bool:
        """The controller's own writes."""
        return self.controller.on_reply(token, msg)

    def final(self, until: float) -> None:
        """After healing: wait for every partition to have a live leader (or ``until``), drain
        every partition, and check that the leaders still hold every acknowledged record."""
        rt, ctl = self.rt, self.controller
        parts = range(ctl.partitions)
        while rt.now < until:
            img = ctl.image
            if img is not None and all(self._live_leader(p) is not None for p in parts):
                break
            rt.run_until(rt.now + 250)
        rt.run_until(rt.now + 2000)           # the new leaders' high watermarks catch up
        for p in parts:
            self.clients.drain(p)
        deadline = rt.now + 20000
        while rt.now < deadline and not all(self.clients.drained.get(p) for p in parts):
            rt.run_until(rt.now + 250)
        for p in parts:
            lead = self._live_leader(p)
            if lead is not None:             # no leader after healing: the drain is incomplete (unknown)
                st = rt.nodes[lead].core.states[(TOPIC, p)]
                self.inv.holds_acked(lead, (TOPIC, p), st.log.records)

    def _live_leader(self, p: int) -> int | None:
        img = self.controller.image
        st = img.partitions.get((TOPIC, p)) if img is not None else None
        if st is None or st.leader < 0 or not self.rt.up(st.leader):
            return None
        core = self.rt.nodes[st.leader].core
        s = core.states.get((TOPIC, p))
        return st.leader if s is not None and s.role == "leader" else None
