"""Where values sit: one value at two offsets (duplicate), two values at one offset (inconsistent).

Source: Jepsen's Kafka test, its ``duplicate`` and ``inconsistent-offsets``, the names
checkers/queue_checker.py reports these under. The queue analogues of checkers/duplicate.py and
checkers/inconsistent_offsets.py, which judge one log of ``[offset, epoch,
type, payload]`` records; here a position is a (partition, offset) pair and
the observations are acks as well as reads:

- every ok ``send`` with an offset (the ack says partition P holds V at O);
- every record ``[O, V]`` of every ok ``poll`` of P (final or not).
"""
from __future__ import annotations

from typing import Any, Iterator

from .fold import Checker, check_list
from .queue_ops import add_example, ack, hashable, poll_records, poll_value


def observations(op: dict) -> Iterator[tuple[int, int, Any, str]]:
    """``(P, O, V, source)`` for each position ``op`` shows; source "send" or "poll"."""
    t = op["type"]
    if t != "ok":
        return
    v = poll_value(op)
    if v is not None:
        p = v["partition"]
        for o, value in poll_records(v):
            yield p, o, value, "poll"
        return
    a = ack(op)
    if a is not None and a[2] is not None:
        yield a[0], a[2], a[1], "send"


class _Gather:
    """Per suspect key, the distinct things observed with it, with example ops and counts."""

    def __init__(self) -> None:
        self.found: dict = {}

    def observe(self, key, item_key, item: dict, index: int, source: str) -> None:
        items = self.found.setdefault(key, {})
        entry = items.get(item_key)
        if entry is None:
            entry = items[item_key] = {**item, "ops": [], "sources": [], "count": 0}
        entry["count"] += 1
        add_example(entry["ops"], index)
        add_example(entry["sources"], source)


class QueueDuplicate(Checker):
    """Find values observed at two or more positions (partition, offset).

    Result: ``{"valid", "anomalies", "values"}`` (``values``: distinct values
    observed). One anomaly per value, in the order first observed: ``{"value",
    "positions": [{"partition", "offset", "ops": [op indices, at most
    MAX_EXAMPLES], "sources": ["send" and/or "poll"], "count"}, ...]}``, the
    positions in the order observed. ``nodes`` is unused.

    Two passes: the first keeps each value's first position and notes the values
    seen elsewhere too; the second gathers every observation of those values.
    """

    passes = 2

    def __init__(self) -> None:
        self.first: dict = {}       # value key -> (P, O)
        self.suspects: dict = {}    # value key -> the value, in the order first found
        self.values = 0
        self.gather = _Gather()

    def begin(self, pass_no: int) -> None:
        super().begin(pass_no)
        self.feed = self._find if pass_no == 0 else self._gather
        if pass_no == 1:
            self.values, self.first = len(self.first), {}

    def _find(self, op: dict) -> None:
        first, suspects = self.first, self.suspects
        for p, o, value, _src in observations(op):
            key = hashable(value)
            pos = first.get(key)
            if pos is None:
                first[key] = (p, o)
            elif pos != (p, o) and key not in suspects:
                suspects[key] = value

    def _gather(self, op: dict) -> None:
        if not self.suspects:
            return
        for p, o, value, src in observations(op):
            key = hashable(value)
            if key in self.suspects:
                self.gather.observe(key, (p, o), {"partition": p, "offset": o}, op["index"], src)

    def result(self, nodes) -> dict:
        anomalies = []
        for key, value in self.suspects.items():
            positions = list(self.gather.found.get(key, {}).values())
            if len(positions) >= 2:
                anomalies.append({"value": value, "positions": positions})
        return {"valid": not anomalies, "anomalies": anomalies, "values": self.values}


class QueueInconsistentOffsets(Checker):
    """Find positions (partition, offset) at which two different values were observed.

    Result: ``{"valid", "anomalies"}``; one anomaly per position, by partition
    then offset: ``{"partition", "offset", "values": [{"value", "ops": [op
    indices, at most MAX_EXAMPLES], "sources": ["send" and/or "poll"],
    "count"}, ...]}``, each distinct value in the order first observed.
    ``nodes`` is unused.

    Two passes: the first keeps the first value seen at each position and notes
    the positions where another shows up; the second gathers the observations
    at those positions only.
    """

    passes = 2

    def __init__(self) -> None:
        self.first: dict = {}       # (P, O) -> value key
        self.suspects: set = set()
        self.gather = _Gather()

    def begin(self, pass_no: int) -> None:
        super().begin(pass_no)
        self.feed = self._find if pass_no == 0 else self._gather
        if pass_no == 1:
            self.first = {}

    def _find(self, op: dict) -> None:
        first = self.first
        for p, o, value, _src in observations(op):
            key = hashable(value)
            seen = first.setdefault((p, o), key)
            if seen != key:
                self.suspects.add((p, o))

    def _gather(self, op: dict) -> None:
        if not self.suspects:
            return
        for p, o, value, src in observations(op):
            if (p, o) in self.suspects:
                self.gather.observe((p, o), hashable(value), {"value": value}, op["index"], src)

    def result(self, nodes) -> dict:
        anomalies = [{"partition": p, "offset": o, "values": list(self.gather.found[(p, o)].values())}
                     for p, o in sorted(self.suspects)]
        return {"valid": not anomalies, "anomalies": anomalies}


def check_queue_duplicate(history: list[dict], nodes=None) -> dict:
    """:class:`QueueDuplicate` over an op list (see there for what it reports)."""
    return check_list(QueueDuplicate(), history, nodes)


def check_queue_inconsistent_offsets(history: list[dict], nodes=None) -> dict:
    """:class:`QueueInconsistentOffsets` over an op list (see there for what it reports)."""
    return check_list(QueueInconsistentOffsets(), history, nodes)
