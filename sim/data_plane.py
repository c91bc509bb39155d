"""The data plane of a simulated schedule with ``--brokers``: our brokers beside the quorum,
whose nodes run the controller role, the queue workload's topic and clients, the data
plane's invariants checked after every broker step, and the final drain.

The controllers and brokers run the real cores (sim/controller_nodes.py,
sim/broker_nodes.py): registration, heartbeats, AlterPartition and CreateTopics are
messages over the simulated network, answered by the active controller's
:class:`kraft.controller.core.ControllerCore`. One thing is modelled rather than run: what a
broker's observer of the metadata quorum knows (a real broker runs an observer RaftNode).
Every :data:`DELIVER_MS` each broker that can reach the quorum's leader both ways (the
broker up and not paused, the leader not paused) learns that leader and its committed
image, one link latency later (:class:`sim.broker_nodes.ObserverUpdate`).
"""
from __future__ import annotations

import random

from kraft.controller.messages import CreateTopicsRequest, NewTopic
from kraft.core import errors
from kraft.core.unsafe import Unsafe
from kraft.state_machines.metadata_image import MIN_ISR

from .admin import leader_of
from .broker_invariants import BrokerInvariants
from .broker_nodes import ObserverUpdate, broker_nodes
from .invariants import QuorumInvariants
from .queue_clients import TOPIC, QueueClients
from .recording import Recording
from .runtime import CORE, AwaitsReplies, Runtime

#: how often the brokers' images follow the leader's (ms)
DELIVER_MS = 250.0
#: how often the topic is asked for until it exists (ms)
CREATE_RETRY_MS = 500.0


class DataPlane(AwaitsReplies):
    """``brokers`` brokers (ids after the quorum's ``qids``, whose nodes are ControllerNodes)
    with ``policy``; ``qinv`` the quorum's invariants (the runtime's step hook is shared).
    The topic ``t`` has ``partitions`` partitions, replication min(3, brokers) and
    min.insync.replicas min(``min_insync``, brokers). ``ids``: the brokers' node ids;
    ``clients``: the queue clients; ``image``: the committed metadata the clients see (the
    leader's, as of the last delivery)."""

    def __init__(self, rt: Runtime, rec: Recording, rng: random.Random, qids: list[int], brokers: int,
                 policy: Unsafe, qinv: QuorumInvariants, concurrency: int, partitions: int = 2, min_insync: int = 2):
        super().__init__()
        self.rt, self.qids = rt, qids
        self.partitions = partitions
        self.topic = NewTopic(TOPIC, partitions, min(3, brokers), ((MIN_ISR, min(min_insync, brokers)),))
        self.inv = BrokerInvariants(lambda: rt.now, self._holders)
        first = max(qids) + 1
        self.ids = [first + i for i in range(brokers)]
        quorum = set(qids)
        binv = self.inv
        rt.on_step = lambda n, core, effects: (qinv if n.id in quorum else binv).after_step(n, core, effects)
        broker_nodes(rt, first, brokers, policy, tuple(qids))
        self.image = None
        self.delivered: dict[int, tuple] = {}      # broker -> (life, leader, image offset) it was handed
        self.created = False
        self.hint, self.turn = -1, 0
        self.clients = QueueClients(rt, rec, rng, self, self.inv, concurrency)
        rt.at(0.0, self._deliver)
        rt.at(0.0, self._create)

    # -- the brokers' metadata (modelled) ----------------------------------------------------------
    def _deliver(self) -> None:
        rt = self.rt
        rt.at(rt.now + DELIVER_MS, self._deliver)
        lead = leader_of(rt, self.qids)
        if lead is None or rt.nodes[lead].paused or not rt.nodes[lead].core.leader_epoch_committed():
            return
        image = self.image = rt.nodes[lead].core.state.metadata.image
        for b in self.ids:
            n = rt.nodes[b]
            if (n.core is None or n.paused or (b, lead) in rt.net.cut or (lead, b) in rt.net.cut
                    or self.delivered.get(b) == (n.life, lead, image.offset)):
                continue
            self.delivered[b] = (n.life, lead, image.offset)
            rt.push(rt.now + rt.net.latency, CORE, b, n.life, ObserverUpdate(lead, image))

    # -- the topic (the queue workload's set-up: CreateTopics until it exists) ----------------------
    def _create(self) -> None:
        """Send CreateTopics to the hinted controller, else the next one, until it is answered
        NONE or TOPIC_ALREADY_EXISTS."""
        rt = self.rt
        if self.created:
            return
        rt.at(rt.now + CREATE_RETRY_MS, self._create)
        to = self.hint if self.hint >= 0 else self.qids[self.turn % len(self.qids)]
        self.turn += 1
        token = rt.client_request(to, CreateTopicsRequest((self.topic,)))
        if token is not None:
            self.waiting[token] = self._created

    def _created(self, resp) -> None:
        code = resp.topics[0].error_code if resp.topics else resp.error_code
        if code in (errors.NONE, errors.TOPIC_ALREADY_EXISTS):
            self.created = True
        self.hint = resp.leader_id if code == errors.NOT_CONTROLLER else -1

    # -- the invariants' and the clients' view ---------------------------------------------------------
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

    def final(self, until: float) -> None:
        """After healing: wait for every partition to have a live leader (or ``until``), drain
        every partition, and check that the leaders still hold every acknowledged record."""
        rt = self.rt
        parts = range(self.partitions)
        while rt.now < until:
            if self.image is not None and all(self._live_leader(p) is not None for p in parts):
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
        img = self.image
        st = img.partitions.get((TOPIC, p)) if img is not None else None
        if st is None or st.leader < 0 or not self.rt.up(st.leader):
            return None
        core = self.rt.nodes[st.leader].core
        s = core.states.get((TOPIC, p))
        return st.leader if s is not None and s.role == "leader" else None
