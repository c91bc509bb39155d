"""Lost records: an acknowledged send whose value the final drain of its partition never read.

It feeds two of Jepsen's Kafka anomaly kinds (``jepsen.tests.kafka``; checkers/queue_checker.py
reports them): every such send is ``unseen`` (acknowledged, never read), and those at or
below an offset the drain read are also a ``lost-write`` (later records of the partition
were read, this one not). The final drain is the queue workload's ``poll`` ops with
``"final": true`` (workloads/queue_drain.py). Unlike Jepsen's checker, which counts a
value as read when any poll read it, this one judges by the final drain alone: it reads
the durable log at the end, so a record read mid-run and truncated later is lost here.
"""
from __future__ import annotations

from .fold import Checker, check_list
from .queue_ops import ack, hashable, is_final, is_int, poll_records, poll_value


class _Drain:
    """One partition's final drain as read so far: its values and how far it reaches."""

    __slots__ = ("values", "reach", "end", "empty_at_reach", "pages", "top")

    def __init__(self) -> None:
        self.values: set = set()
        self.reach = 0              # every offset below it was covered by a chain of pages from 0
        self.end: int | None = None  # "end" of the last page that named one
        self.empty_at_reach = False  # the last page read nothing at the reach
        self.pages = 0
        self.top: int | None = None  # the highest offset any page read

    def page(self, value: dict) -> None:
        recs = poll_records(value)
        self.pages += 1
        add = self.values.add
        for o, v in recs:
            add(hashable(v))
            if self.top is None or o > self.top:
                self.top = o
        start = value.get("from")
        if is_int(start) and start <= self.reach:
            top = max((o for o, _v in recs), default=None)
            if top is not None:
                self.reach = max(self.reach, top + 1)
            self.empty_at_reach = not recs and start >= self.reach
        else:
            self.empty_at_reach = False
        if is_int(value.get("end")):
            self.end = value["end"]

    @property
    def complete(self) -> bool:
        """Read to its end: the reach is past the last page's ``end``, or (pages without an
        ``end``) the last page was empty at the reach."""
        if self.end is not None:
            return self.reach >= self.end
        return self.empty_at_reach


class QueueLost(Checker):
    """Find acknowledged sends (ok ``send``) whose value no final poll of their partition read.

    A partition's drain is complete when its final ok polls, chained from offset 0
    (each page starting at or below the offset the earlier ones reached), reach
    the last page's ``end`` (the high watermark drained to); pages without
    ``end`` count as complete once one reads nothing at the reach. Acks to a
    partition without a complete drain cannot be judged (``unjudged``).

    Result: ``{"valid", "anomalies", "acked", "lost", "unjudged", "drains"}``.
    ``valid``: False with any lost send; else "unknown" when some ack was
    unjudged; else True. Each anomaly (in history order): ``{"op", "partition",
    "offset" (the ack's, None for acks=0), "value", "node", "drain_end",
    "drain_top" (the highest offset the drain read, None if none), "later_read"
    (True when the ack's offset is at or below ``drain_top``: Jepsen's lost-write),
    "found_in": [other partitions whose drain read the value]}``. ``drains``:
    per partition seen, ``{"partition", "complete", "end", "reached", "pages",
    "acked", "lost"}``. ``nodes`` is unused.

    Two passes: the first keeps each partition's drained values (a set) and
    reach; the second judges each ack as it comes, keeping only the lost ones.
    """

    passes = 2

    def __init__(self) -> None:
        self.drains: dict[int, _Drain] = {}
        self.acked: dict[int, int] = {}
        self.lost: dict[int, int] = {}
        self.unjudged = 0
        self.anomalies: list[dict] = []

    def begin(self, pass_no: int) -> None:
        super().begin(pass_no)
        self.feed = self._drain if pass_no == 0 else self._judge

    def _drain(self, op: dict) -> None:
        v = poll_value(op)
        if v is not None and is_final(v):
            d = self.drains.get(v["partition"])
            if d is None:
                d = self.drains[v["partition"]] = _Drain()
            d.page(v)

    def _judge(self, op: dict) -> None:
        a = ack(op)
        if a is None:
            return
        p, value, offset = a
        self.acked[p] = self.acked.get(p, 0) + 1
        d = self.drains.get(p)
        if d is None or not d.complete:
            self.unjudged += 1
            return
        if hashable(value) in d.values:
            return
        self.lost[p] = self.lost.get(p, 0) + 1
        later = offset is not None and d.top is not None and offset <= d.top
        self.anomalies.append({"op": op["index"], "partition": p, "offset": offset, "value": value,
                               "node": op.get("node"), "drain_end": d.end, "drain_top": d.top,
                               "later_read": later, "found_in": []})

    def result(self, nodes) -> dict:
        for a in self.anomalies:
            key = hashable(a["value"])
            a["found_in"] = sorted(q for q, d in self.drains.items() if q != a["partition"] and key in d.values)
        parts = sorted(set(self.drains) | set(self.acked))
        drains = []
        for p in parts:
            d = self.drains.get(p)
            drains.append({"partition": p, "complete": bool(d and d.complete), "end": d.end if d else None,
                           "reached": d.reach if d else 0, "pages": d.pages if d else 0,
                           "acked": self.acked.get(p, 0), "lost": self.lost.get(p, 0)})
        valid = False if self.anomalies else ("unknown" if self.unjudged else True)
        out = {"valid": valid, "anomalies": self.anomalies, "acked": sum(self.acked.values()),
               "lost": len(self.anomalies), "unjudged": self.unjudged, "drains": drains}
        if self.unjudged:
            out["note"] = "acks to partitions without a complete final drain cannot be judged"
        return out


def check_queue_lost(history: list[dict], nodes=None) -> dict:
    """:class:`QueueLost` over an op list (see there for what it reports)."""
    return check_list(QueueLost(), history, nodes)
