"""Order within a partition: acks against acknowledgement order, and each consumer's polls.

Source: Jepsen's Kafka test (jepsen.tests.kafka): its ``nonmonotonic-poll`` and
``int-nonmonotonic-poll`` (a consumer's polls going back, across polls or within one), the
names checkers/queue_checker.py reports them under; and, for sends, offsets against the
real-time order of acknowledgements (``reordered-send``: a send acknowledged before another
was invoked must sit at a lower offset). That one is not Jepsen's: its ``nonmonotonic-send``
compares only one producer's successive ops, which this check covers and extends to every
pair of sends ordered in real time.
"""
from __future__ import annotations

from .fold import Checker, check_list
from .queue_ops import POLL, SEND, ack, is_int, poll_records, poll_value, sent


class QueueReordered(Checker):
    """Find sends whose offset is not above that of a send to the same partition that
    was acknowledged before they were invoked.

    If send A completed ok (with an offset) before send B was invoked, both to
    partition P, then A's offset must be below B's: the log is in the order of
    acknowledgement. Sends without an offset (acks=0) are not compared.

    Result: ``{"valid", "anomalies", "compared"}`` (``compared``: ok sends with
    an offset). Each anomaly, in completion order: ``{"op", "invoke",
    "partition", "offset", "value", "earlier_op", "earlier_offset",
    "earlier_value"}`` where the earlier send is the one with the highest
    offset acknowledged to P before B's invoke. ``nodes`` is unused.

    One pass: each partition's highest acknowledged offset so far, noted at each
    send's invoke and compared at its completion; only the sends in flight are kept.
    """

    def __init__(self) -> None:
        self.best: dict[int, tuple[int, int, object]] = {}    # P -> (offset, op index, value)
        self.open: dict = {}                                  # process -> (invoke index, P, best then)
        self.compared = 0
        self.anomalies: list[dict] = []

    def feed(self, op: dict) -> None:
        if op["f"] != SEND:
            return
        if op["type"] == "invoke":
            s = sent(op)
            if s is not None:
                self.open[op["process"]] = (op["index"], s[0], self.best.get(s[0]))
            return
        opened = self.open.pop(op["process"], None)
        a = ack(op)
        if a is None or a[2] is None:
            return
        p, value, offset = a
        self.compared += 1
        if opened is not None and opened[1] == p and opened[2] is not None and offset <= opened[2][0]:
            e_off, e_op, e_value = opened[2]
            self.anomalies.append({"op": op["index"], "invoke": opened[0], "partition": p, "offset": offset,
                                   "value": value, "earlier_op": e_op, "earlier_offset": e_off,
                                   "earlier_value": e_value})
        b = self.best.get(p)
        if b is None or offset > b[0]:
            self.best[p] = (offset, op["index"], value)

    def result(self, nodes) -> dict:
        return {"valid": not self.anomalies, "anomalies": self.anomalies, "compared": self.compared}


class QueueNonmonotonicPoll(Checker):
    """Find polls whose records go back: a consumer process's offsets must only grow.

    Each process polls from positions of its own (the workload records them as
    ``from``); a poll's ``from`` below where the process's previous poll of
    that partition ended is a seek, which is allowed (counted in ``seeks``).
    Within each ok poll (final ones too):

    - ``within-poll``: a record's offset is not above the one before it;
    - ``before-from``: a record's offset is below the poll's ``from`` (the
      position it asked for);
    - ``backwards``: for a poll without an int ``from``, a record's offset is
      below where the process's previous poll of the partition ended.

    Result: ``{"valid", "anomalies", "polls", "seeks"}``; at most one anomaly
    per poll (the first offending record), in history order: ``{"case", "op",
    "process", "partition", "from", "offset", "previous_offset", "node"}``
    (``previous_offset``: the record before it, the ``from`` or the previous
    end). ``nodes`` is unused.

    One pass; keeps where each (process, partition) last ended.
    """

    def __init__(self) -> None:
        self.ends: dict = {}        # (process, P) -> offset after the last record read, or the from
        self.polls = self.seeks = 0
        self.anomalies: list[dict] = []

    def feed(self, op: dict) -> None:
        if op["f"] != POLL:
            return
        v = poll_value(op)
        if v is None:
            return
        self.polls += 1
        p, start = v["partition"], v.get("from")
        key = (op["process"], p)
        prev_end = self.ends.get(key)
        if not is_int(start):
            start = None
        elif prev_end is not None and start < prev_end:
            self.seeks += 1
        recs = poll_records(v)
        bound, kind = (start, "before-from") if start is not None else (prev_end, "backwards")
        last = None
        for o, _value in recs:
            problem = None
            if last is not None and o <= last:
                problem, before = "within-poll", last
            elif last is None and bound is not None and o < bound:
                problem, before = kind, bound
            if problem:
                self.anomalies.append({"case": problem, "op": op["index"], "process": op["process"],
                                       "partition": p, "from": start, "offset": o,
                                       "previous_offset": before, "node": op.get("node")})
                break
            last = o
        top = max((o for o, _v in recs), default=None)
        end = top + 1 if top is not None else start
        if end is not None:
            self.ends[key] = end

    def result(self, nodes) -> dict:
        return {"valid": not self.anomalies, "anomalies": self.anomalies, "polls": self.polls,
                "seeks": self.seeks}


def check_queue_reordered(history: list[dict], nodes=None) -> dict:
    """:class:`QueueReordered` over an op list (see there for what it reports)."""
    return check_list(QueueReordered(), history, nodes)


def check_queue_nonmonotonic_poll(history: list[dict], nodes=None) -> dict:
    """:class:`QueueNonmonotonicPoll` over an op list (see there for what it reports)."""
    return check_list(QueueNonmonotonicPoll(), history, nodes)
