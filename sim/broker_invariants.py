"""The data plane's invariants, checked after every step of a broker (sim/invariants.py names
them):

- ``acked-produce-lost``: a broker that becomes a partition's leader holds every record an
  acks=-1 Produce of that partition was acknowledged for (same offset, same value), and
  at the end the last leader still does: no acknowledged record is lost;
- ``consumer-above-hw``: a ConsumerFetch is answered only with records below the answering
  leader's high watermark at that moment, and below the high watermark as it must be: held
  by at least ``min.insync.replicas`` replicas (KIP-966: the leader's high watermark does
  not advance while its ISR is smaller), so what a consumer reads is committed.
"""
from __future__ import annotations

from kraft.core.events import Reply
from kraft.replication.messages import OffsetsResponse
from kraft.replication.replica import LEADER

from .invariants import InvariantBroken, Violation


class BrokerInvariants:
    """``now()`` the virtual time; ``fetches`` maps a ConsumerFetch's token to its partition key
    (the consumers fill it); :meth:`acked` records an acknowledged acks=-1 Produce."""

    def __init__(self, now, holders=None):
        self.now = now
        self.holders = holders or (lambda key, record: 0)     # replicas whose log holds ``record``
        self.acks: dict[tuple, dict[int, object]] = {}       # key -> {offset: value}
        self.roles: dict[tuple, tuple] = {}                   # (broker, key) -> (role, leader epoch)
        self.fetches: dict = {}

    def broken(self, name: str, detail: str) -> None:
        raise InvariantBroken(Violation(name, self.now(), detail))

    def acked(self, key: tuple, offset: int, value) -> None:
        self.acks.setdefault(key, {})[offset] = value

    def after_step(self, node, core, effects: list) -> None:
        for e in effects:
            if type(e) is Reply and type(e.msg) is OffsetsResponse and e.token in self.fetches:
                key = self.fetches.pop(e.token)
                st = core.states.get(key)
                top = max((r.offset for r in e.msg.records), default=-1)
                if st is None or top < 0:
                    continue
                if top >= st.hw:
                    self.broken("consumer-above-hw", f"n{node.id} answered a consumer of {key} with offset {top}, "
                                                     f"its high watermark {st.hw}")
                held = self.holders(key, e.msg.records[-1])
                if held < st.min_insync:
                    self.broken("consumer-above-hw", f"n{node.id} answered a consumer of {key} with offset {top}, "
                                                     f"held by {held} replica(s) < min.insync.replicas "
                                                     f"{st.min_insync}: above the true high watermark")
        for key, st in core.states.items():
            now = (st.role, st.leader_epoch)
            if self.roles.get((node.id, node.life, key)) != now:
                self.roles[(node.id, node.life, key)] = now
                if st.role == LEADER:
                    self.holds_acked(node.id, key, st.log.records)

    def holds_acked(self, nid: int, key: tuple, records: list) -> None:
        """``acked-produce-lost`` unless ``records`` (n<nid>'s log of ``key``) hold every ack."""
        for off, value in sorted(self.acks.get(key, {}).items()):
            if off >= len(records) or records[off].payload != value:
                got = records[off].payload if off < len(records) else None
                self.broken("acked-produce-lost", f"n{nid} leads {key[0]}-{key[1]} without the acknowledged "
                                                  f"value {value} at offset {off} (it has {got!r})")
