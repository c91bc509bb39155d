"""Inconsistent offsets: two different records observed at one offset."""
from __future__ import annotations

from history.node_data import NodeData

from .compact import RecordTable
from .fold import Checker, check_list
from .lost_write import ack_value
from .reads import DATA, MAX_EXAMPLES, read_records, record_key


class _Seen:
    """The observations at some offsets, as the list-based checker kept them for all:
    offset -> record key -> ``{"type", "payload", "epochs", "ops", "count"}``."""

    def __init__(self) -> None:
        self.by_offset: dict[int, dict] = {}

    def observe(self, offset, epoch, rtype, payload, op_index) -> None:
        variants = self.by_offset.setdefault(offset, {})
        key = record_key(rtype, payload)
        obs = variants.get(key)
        if obs is None:
            obs = variants[key] = {"type": rtype, "payload": payload, "epochs": [], "ops": [],
                                   "count": 0}
        obs["count"] += 1
        if epoch is not None and epoch not in obs["epochs"]:
            obs["epochs"].append(epoch)
        if len(obs["ops"]) < MAX_EXAMPLES and op_index not in obs["ops"]:
            obs["ops"].append(op_index)


def _merge(first: dict, then: dict) -> list[dict]:
    """The variants at one offset observed as ``first``'s observations then ``then``'s."""
    out = {key: {**obs, "epochs": list(obs["epochs"]), "ops": list(obs["ops"])}
           for key, obs in first.items()}
    for key, obs in then.items():
        o = out.get(key)
        if o is None:
            out[key] = obs
            continue
        o["count"] += obs["count"]
        for e in obs["epochs"]:
            if e not in o["epochs"]:
                o["epochs"].append(e)
        for i in obs["ops"]:
            if len(o["ops"]) < MAX_EXAMPLES and i not in o["ops"]:
                o["ops"].append(i)
    return list(out.values())


class InconsistentOffsets(Checker):
    """Find offsets at which the history shows two different records.

    Observations: every record of every ok read (final or not, linearizable
    or not) and every ok append (an ack of ``{"value": V, "offset": O}``
    says O holds data V). Records are compared by (type, payload); the epoch
    is reported but not compared.

    Result: ``{"valid", "anomalies"}``; one anomaly per offset, by offset:
    ``{"offset", "records": [{"type", "payload", "epochs", "ops": [op
    indices, at most MAX_EXAMPLES], "count"}, ...]}`` listing each distinct
    record seen there, in the order first observed, acks before reads (the
    acks are taken first, then the reads, each in history order).
    ``nodes`` is unused.

    Two passes: the first keeps the first record seen at each offset
    (compactly) and notes the offsets where another one shows up; the second
    gathers the observations at those offsets only.
    """

    passes = 2

    def __init__(self) -> None:
        self.first = RecordTable()
        self.suspects: set[int] = set()
        self.acks, self.reads = _Seen(), _Seen()

    def begin(self, pass_no: int) -> None:
        super().begin(pass_no)
        if pass_no == 1:
            self.first = None
        self.feed = self._find if pass_no == 0 else self._gather

    def _find(self, op: dict) -> None:
        if op["type"] != "ok":
            return
        f = op["f"]
        if f == "read":
            if isinstance(op.get("value"), dict):
                self.suspects.update(self.first.differing(read_records(op)))
        elif f == "append" and (v := ack_value(op)) is not None:
            if not self.first.first_or_same(v["offset"], DATA, v["value"]):
                self.suspects.add(v["offset"])

    def _gather(self, op: dict) -> None:
        if op["type"] != "ok" or not self.suspects:
            return
        suspects = self.suspects
        f = op["f"]
        if f == "read":
            if isinstance(op.get("value"), dict):
                for offset, epoch, rtype, payload in read_records(op):
                    if offset in suspects:
                        self.reads.observe(offset, epoch, rtype, payload, op["index"])
        elif f == "append" and (v := ack_value(op)) is not None:
            if v["offset"] in suspects:
                self.acks.observe(v["offset"], v.get("epoch"), DATA, v["value"], op["index"])

    def result(self, nodes) -> dict:
        anomalies = []
        for offset in sorted(self.suspects):
            records = _merge(self.acks.by_offset.get(offset, {}), self.reads.by_offset.get(offset, {}))
            if len(records) > 1:
                anomalies.append({"offset": offset, "records": records})
        return {"valid": not anomalies, "anomalies": anomalies}


def check_inconsistent_offsets(history: list[dict], nodes: dict[str, NodeData] | None = None) -> dict:
    """:class:`InconsistentOffsets` over an op list (see there for what it reports)."""
    return check_list(InconsistentOffsets(), history, nodes)
