"""The simulated queue workload's clients (workloads/queue.py's ops, Jepsen's Kafka queue):
producers ``send`` unique ints with acks=-1 to a partition's leader broker, consumers
``poll`` their partitions from the position they reached, and after healing a final
drain reads every partition from offset 0 to its high watermark (``"final": true``,
``"end"``), for the queue checkers (checkers/queue_*.py).

Clients find a partition's leader in the committed metadata (the data plane's ``image``, as
a Metadata request would give it). An op whose outcome is unknown ends ``info`` and the slot
takes a fresh process. Acknowledged sends are handed to the broker invariants.
"""
from __future__ import annotations

import random

from kraft.core import errors
from kraft.replication.messages import ConsumerFetchRequest, ProduceRequest

from .broker_invariants import BrokerInvariants
from .recording import Recording
from .runtime import Runtime

#: the queue workload's topic
TOPIC = "t"
CLIENT_TIMEOUT_MS, POLL_MAX, DRAIN_PAGE = 5000.0, 100, 500
#: definite refusals of a Produce (nothing appended)
DEFINITE = {errors.NOT_LEADER_OR_FOLLOWER, errors.NOT_ENOUGH_REPLICAS, errors.UNKNOWN_TOPIC_OR_PARTITION}
FIRST_DRAIN_PROCESS = 20_000


class QueueClients:
    """``concurrency`` client slots over the brokers of ``plane`` (its ``image``, the committed
    metadata, and ``partitions``, how many the topic has: sim/data_plane.py)."""

    def __init__(self, rt: Runtime, rec: Recording, rng: random.Random, plane,
                 inv: BrokerInvariants, concurrency: int):
        self.rt, self.rec, self.rng, self.plane, self.inv = rt, rec, rng, plane, inv
        self.concurrency = concurrency
        self.process = {s: s for s in range(concurrency)}
        self.position: dict[tuple, int] = {}          # (slot, partition) -> next offset to poll
        self.busy: set[int] = set()
        self.waiting: dict = {}
        self.next_value = 0
        self.drained: dict[int, bool] = {}
        self.drain_process: dict[int, int] = {}

    def _leader(self, p: int) -> int | None:
        img = self.plane.image
        st = img.partitions.get((TOPIC, p)) if img is not None else None
        return st.leader if st is not None and st.leader >= 0 else None

    def issue(self, slot: int, f: str) -> None:
        """A ``send`` ("append" in the plan) or a ``poll`` ("read") from ``slot`` (skipped while busy)."""
        if slot in self.busy:
            return
        parts = self.plane.partitions
        if f == "append":
            self.next_value += 1
            p = self.rng.randrange(parts)
            value = {"partition": p, "value": self.next_value}
            msg = ProduceRequest((TOPIC, p), -1, self.next_value)
            kind = "send"
        else:
            p = slot % parts
            value = {"partition": p, "from": self.position.get((slot, p), 0)}
            msg = ConsumerFetchRequest((TOPIC, p), value["from"], POLL_MAX)
            kind = "poll"
        self._send(slot, kind, value, p, msg)

    def _send(self, slot: int, kind: str, value: dict, p: int, msg, process=None) -> None:
        lead = self._leader(p)
        proc = self.process[slot] if process is None else process
        inv = self.rec.invoke(proc, kind, value, f"n{lead}" if lead is not None else None)
        token = self.rt.client_request(lead, msg) if lead is not None else None
        if token is None:
            self.rec.complete(inv, "fail", value, error="no leader" if lead is None else "connection")
            if slot < 0:
                self.rt.at(self.rt.now + 500, lambda: self.drain(p))
            return
        if kind == "poll":
            self.inv.fetches[token] = (TOPIC, p)
        self.busy.add(slot)
        self.waiting[token] = (slot, inv, kind, p)
        self.rt.at(self.rt.now + CLIENT_TIMEOUT_MS, lambda: self._timeout(token))

    def _timeout(self, token) -> None:
        entry = self.waiting.pop(token, None)
        if entry is None:
            return
        slot, inv, kind, p = entry
        self.rec.complete(inv, "info", inv["value"], error="timeout")
        self._done(slot, p, retire=True)

    def _done(self, slot: int, p: int, retire: bool) -> None:
        self.busy.discard(slot)
        if slot < 0:
            if retire:
                self.drain_process[p] = self.drain_process.get(p, FIRST_DRAIN_PROCESS + p) + 100
            self.rt.at(self.rt.now + 500, lambda: self.drain(p))
        elif retire:
            self.process[slot] += self.concurrency
            for k in [k for k in self.position if k[0] == slot]:
                del self.position[k]

    def on_reply(self, token, msg) -> bool:
        entry = self.waiting.pop(token, None)
        if entry is None:
            return False
        slot, inv, kind, p = entry
        self.busy.discard(slot)
        code, value = msg.error_code, inv["value"]
        if code == errors.NONE and kind == "send":
            self.inv.acked((TOPIC, p), msg.base_offset, value["value"])
            self.rec.complete(inv, "ok", dict(value, offset=msg.base_offset))
            return True
        if code == errors.NONE:
            recs = [[r.offset, r.payload] for r in msg.records]
            self.rec.complete(inv, "ok", dict(value, records=recs))
            if slot >= 0:
                self.position[(slot, p)] = recs[-1][0] + 1 if recs else value["from"]
            else:
                self._drain_page(p, value, recs)
            return True
        name = errors.name(code)
        if kind == "poll" or code in DEFINITE:
            self.rec.complete(inv, "fail", value, error=name)
            self._done(slot, p, retire=False)
        else:
            self.rec.complete(inv, "info", value, error=name)
            self._done(slot, p, retire=True)
        return True

    # -- the final drain ----------------------------------------------------------------------------
    def _leader_hw(self, p: int) -> int | None:
        lead = self._leader(p)
        st = self.rt.nodes[lead].core.states.get((TOPIC, p)) if lead is not None and self.rt.up(lead) else None
        return st.hw if st is not None else None

    def drain(self, p: int, pos: int = 0) -> None:
        """Read partition ``p`` from ``pos`` to the leader's high watermark, page by page."""
        if self.drained.get(p):
            return
        end = self._leader_hw(p)
        value = {"partition": p, "from": pos, "final": True, "end": end}
        self._send(-1 - p, "poll", value, p, ConsumerFetchRequest((TOPIC, p), pos, DRAIN_PAGE),
                   process=self.drain_process.get(p, FIRST_DRAIN_PROCESS + p))

    def _drain_page(self, p: int, value: dict, recs: list) -> None:
        pos = recs[-1][0] + 1 if recs else value["from"]
        end = value.get("end")
        if end is not None and pos >= end and self._leader_hw(p) in (None, end):
            self.drained[p] = True            # reached, and the high watermark has not grown since
            return
        self.rt.at(self.rt.now + (1 if end is not None else 500), lambda: self.drain(p, pos))
