"""The active controller's side of the data plane in the simulator (KIP-631, KIP-497): broker
registration and fencing, the topic, partition leader elections and AlterPartition, all
written as Metadata records through the quorum (the leader's core appends them, as
kraft/controller/service.py's writes do) and acted on only once committed; the brokers' cores
(kraft/replication/) then get the committed state as LeaderAndIsr and ClusterView.

The decisions are kraft/controller/partition_election.py's pure functions on the leader's committed
MetadataImage. One write is in flight at a time (kraft/controller/service.py's lock). Heartbeats
are not messages here: a broker whose link with the quorum's leader is up (both ways, the
broker up and not paused) renews its session; one that has not for
``broker.session.timeout.ms`` (3 s) is fenced, and unfenced once it is back. A restarted
broker registers again (a new broker epoch, fenced: the partitions it led move to a new
leader epoch, as kraft/controller/service.py's BrokerRegistration does) before it hears of any
partition. Brokers learn
the committed metadata one link latency after it commits (when connected to the leader).
"""
from __future__ import annotations

from kraft.controller.partition_election import Rejected, alter_partition, create_topic, partition_changes
from kraft.core import errors
from kraft.core.record_log import RecordLog
from kraft.core.records import METADATA
from kraft.quorum.client_messages import ProposeRequest
from kraft.replication.messages import ClusterView, IsrAnswer, LeaderAndIsr
from kraft.state_machines.metadata_image import FENCE_BROKER, MIN_ISR, REGISTER_BROKER, UNFENCE_BROKER

from .admin import leader_of
from .runtime import CORE, AwaitsReplies, Runtime

TOPIC = "t"
SESSION_MS, TICK_MS = 3000.0, 250.0
#: a write unanswered this long (its leader died) is given up: the lock is free again (ms)
WRITE_TIMEOUT_MS = 5000.0


class SimController(AwaitsReplies):
    """Controller of brokers ``broker_ids`` over quorum nodes ``quorum_ids``; topic ``t`` with
    ``partitions`` partitions, replication min(3, brokers), ``min_insync``."""

    def __init__(self, rt: Runtime, quorum_ids: list[int], broker_ids: list[int], partitions: int = 2,
                 min_insync: int = 2):
        super().__init__()                   # waiting: token -> callback(response)
        self.rt, self.qids, self.bids = rt, quorum_ids, broker_ids
        self.partitions, self.min_insync = partitions, min(min_insync, len(broker_ids))
        self.last_seen = {b: 0.0 for b in broker_ids}
        self.busy = False
        self.alters: list = []               # (broker, ProposeIsr) waiting for the write lock
        self.delivered: dict[int, tuple] = {}    # broker -> (life, image offset) it has
        self.registered: dict[int, int] = {}     # broker -> the life (incarnation) it registered in
        self.image = None
        rt.at(TICK_MS, self.tick)

    # -- the committed image and writes ---------------------------------------------------------
    def _leader(self):
        lead = leader_of(self.rt, self.qids)
        if lead is None:
            return None, None
        core = self.rt.nodes[lead].core
        return (lead, core) if core.leader_epoch_committed() else (None, None)

    def _write(self, lead: int, core, build) -> None:
        """Build the records from the committed image and the log end (``build(image, offset)``),
        append them at once on the leader, and wait for the commit."""
        payloads, done = build(core.state.metadata.image, core.state.log.end_offset)
        if not payloads:
            done(None)
            return
        self.busy = True
        token = self.rt.request_now(lead, ProposeRequest(METADATA, payloads, wait=True))
        if token is None:
            self.busy = False
            done(errors.NOT_CONTROLLER)
            return

        def answered(resp) -> None:
            self.busy = False
            done(resp.error_code)
        self.waiting[token] = answered

        def timeout() -> None:              # the leader died with the write: no answer comes
            if self.waiting.pop(token, None) is not None:
                self.busy = False
                done(errors.REQUEST_TIMED_OUT)
        self.rt.at(self.rt.now + WRITE_TIMEOUT_MS, timeout)

    def _reachable(self, b: int, lead: int) -> bool:
        rt = self.rt
        n = rt.nodes[b]
        return (n.core is not None and not n.paused and (b, lead) not in rt.net.cut
                and (lead, b) not in rt.net.cut)

    # -- the periodic work ------------------------------------------------------------------------
    def tick(self) -> None:
        rt = self.rt
        rt.at(rt.now + TICK_MS, self.tick)
        lead, core = self._leader()
        if lead is None:
            return
        image = core.state.metadata.image
        self.image = image
        for b in self.bids:
            if self._reachable(b, lead):
                self.last_seen[b] = rt.now
                self._deliver(b, image)
        if self.busy:
            return
        if self.alters:
            self._alter(lead, core, *self.alters.pop(0))
            return
        if len(image.brokers) < len(self.bids) or TOPIC not in image.topics:
            self._write(lead, core, self._bootstrap)
            return
        for b in self.bids:                  # a restarted broker registers again (a new epoch)
            n = rt.nodes[b]
            if n.core is not None and self.registered.get(b) != n.life and self._reachable(b, lead):
                self._write(lead, core, lambda img, off, b=b, life=n.life: self._register(img, off, b, life))
                return
        for b in self.bids:
            info = image.brokers.get(b)
            if info is None:
                continue
            stale = rt.now - self.last_seen[b] > SESSION_MS
            if stale != info.fenced:
                kind = FENCE_BROKER if stale else UNFENCE_BROKER
                rec = {"type": kind, "id": b, "epoch": info.epoch}
                self._write(lead, core, lambda img, off, rec=rec: (
                    [rec] + partition_changes(img.apply(off, rec)), lambda code: None))
                return

    def _register(self, image, offset: int, b: int, life: int):
        """BrokerRegistration of a restarted broker (kraft/controller/service.py): it is fenced under its
        new epoch, so the partitions it led elect another leader (a new leader epoch) until a
        heartbeat unfences it."""
        rec = {"type": REGISTER_BROKER, "brokerId": b, "brokerEpoch": offset, "host": f"n{b}", "port": 9092,
               "incarnationId": f"i{b}.{life}"}

        def done(code) -> None:
            if code == errors.NONE:
                self.registered[b] = life
        return [rec] + partition_changes(image.apply(offset, rec)), done

    def _bootstrap(self, image, offset: int):
        """Register and unfence every broker, then create the topic (one write)."""
        out, img = [], image
        lives = {b: self.rt.nodes[b].life for b in self.bids}

        def done(code) -> None:
            if code == errors.NONE:
                self.registered.update(lives)
        for b in self.bids:
            if b in img.brokers:
                continue
            for rec in ({"type": REGISTER_BROKER, "brokerId": b, "brokerEpoch": offset, "host": f"n{b}",
                         "port": 9092, "incarnationId": f"i{b}"},
                        {"type": UNFENCE_BROKER, "id": b, "epoch": offset}):
                img = img.apply(offset, rec)
                out.append(rec)
                offset += 1
        if TOPIC not in img.topics:
            out += create_topic(img, TOPIC, "topic-t", self.partitions, min(3, len(self.bids)),
                                {MIN_ISR: self.min_insync})
        return out, done

    def _deliver(self, b: int, image) -> None:
        """Hand broker ``b`` the committed state it has not seen yet (after one latency)."""
        rt = self.rt
        n = rt.nodes[b]
        if self.delivered.get(b) == (n.life, image.offset) or self.registered.get(b) != n.life:
            return                           # seen, or not registered in this life yet
        self.delivered[b] = (n.life, image.offset)
        at = rt.now + rt.net.latency
        rt.push(at, CORE, b, n.life, ClusterView(True, frozenset(image.unfenced())))
        for key in sorted(image.partitions):
            st = image.partitions[key]
            if b in st.replicas and key not in n.core.states:
                n.core.add_partition(key, RecordLog(), 0)
            min_isr = image.topics[st.topic].configs.get(MIN_ISR, 1)
            rt.push(at, CORE, b, n.life, LeaderAndIsr(key, st.leader, st.leader_epoch, st.partition_epoch,
                                                      st.isr, st.replicas, min_isr))

    # -- AlterPartition ----------------------------------------------------------------------------
    def on_effect(self, node, effect) -> None:
        """A broker's ProposeIsr: queued for the write lock."""
        self.alters.append((node.id, node.life, effect))

    def _alter(self, lead: int, core, b: int, life: int, e) -> None:
        rt = self.rt

        def answer(code: int) -> None:
            n = rt.nodes[b]
            if n.life == life and n.core is not None and self._reachable(b, lead):
                rt.push(rt.now + rt.net.latency, CORE, b, life, IsrAnswer(e.log, e.isr, e.partition_epoch, code))

        if not self._reachable(b, lead):
            return                           # lost on the way: the broker proposes afresh later

        def build(image, offset):
            try:
                state = alter_partition(image, b, e.log[0], e.log[1], e.leader_epoch, e.partition_epoch,
                                        list(e.isr))
            except Rejected as r:
                answer(r.code)
                return [], lambda code: None
            if state is image.partitions.get(e.log):
                return [], lambda code: answer(errors.NONE)
            return [state.to_change()], lambda code: answer(errors.NONE if code == errors.NONE else code)
        self._write(lead, core, build)
