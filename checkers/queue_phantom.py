"""Phantom records: a polled value that no send attempted to that partition, or whose send failed.

Source: Jepsen's Kafka test: a read of a value whose sends all failed is its ``G1a``
(aborted read); a value no send named (for that partition) has no Jepsen name, whose checker
calls such a history unknown: here it is ``phantom``, as for the append workload
(checkers/phantom.py, which judges appends to one log; here a value also has a partition).
checkers/queue_checker.py reports the cases under those names.
"""
from __future__ import annotations

from .fold import Checker, check_list
from .queue_ops import MAX_EXAMPLES, SEND, hashable, poll_records, poll_value, sent


class QueuePhantom(Checker):
    """Find values read by an ok ``poll`` (final ones too) that

    - ``never-sent``: no ``send`` invoked that value;
    - ``wrong-partition``: was sent, but only to other partitions;
    - ``send-failed``: was sent to this partition by sends that all ended ``fail``
      (``fail`` means certainly not written).

    Result: ``{"valid", "anomalies"}``; one anomaly per (value, partition read), in
    the order first seen: ``{"value", "partition", "reason", "sent_to": [partitions
    its sends named], "send": index of the (last) fail op or None, "seen": [{"op",
    "offset", "node"}, ...] (at most MAX_EXAMPLES), "seen_count"}``. ``nodes`` is
    unused.

    Two passes: the first collects, per value, the partitions its sends named and
    whether any send to each did not fail; the second judges each poll's records.
    """

    passes = 2

    def __init__(self) -> None:
        self.sends: dict = {}       # value key -> {partition: True if some send not failed, else fail index}
        self.found: dict = {}       # (value key, P) -> anomaly

    def begin(self, pass_no: int) -> None:
        super().begin(pass_no)
        self.feed = self._collect if pass_no == 0 else self._judge

    def _collect(self, op: dict) -> None:
        if op["f"] != SEND:
            return
        s = sent(op)
        if s is None:
            return
        p, value = s
        parts = self.sends.setdefault(hashable(value), {})
        t = op["type"]
        if t == "invoke":
            parts.setdefault(p, None)        # attempted; judged by its completion
        elif t == "fail":
            if parts.get(p) is not True:
                parts[p] = op["index"]
        else:                               # ok or info: may have been written
            parts[p] = True

    def _judge(self, op: dict) -> None:
        v = poll_value(op)
        if v is None:
            return
        p = v["partition"]
        sends = self.sends
        for offset, value in poll_records(v):
            parts = sends.get(hashable(value))
            if parts is not None:
                state = parts.get(p, False)
                if state is True or state is None:      # written, maybe, or still in flight
                    continue
            self._found(op, p, offset, value, parts)

    def _found(self, op: dict, p: int, offset: int, value, parts: dict | None) -> None:
        key = (hashable(value), p)
        a = self.found.get(key)
        if a is None:
            if parts is None:
                reason, fail = "never-sent", None
            elif p in parts:
                reason, fail = "send-failed", parts[p]
            else:
                reason, fail = "wrong-partition", None
            a = self.found[key] = {"value": value, "partition": p, "reason": reason,
                                   "sent_to": sorted(parts or ()), "send": fail, "seen": [],
                                   "seen_count": 0}
        a["seen_count"] += 1
        if len(a["seen"]) < MAX_EXAMPLES:
            a["seen"].append({"op": op["index"], "offset": offset, "node": op.get("node")})

    def result(self, nodes) -> dict:
        anomalies = list(self.found.values())
        return {"valid": not anomalies, "anomalies": anomalies}


def check_queue_phantom(history: list[dict], nodes=None) -> dict:
    """:class:`QueuePhantom` over an op list (see there for what it reports)."""
    return check_list(QueuePhantom(), history, nodes)
