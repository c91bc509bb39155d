"""Election safety (Raft §5.2, KIP-595): at most one leader per epoch."""
from __future__ import annotations

from history.node_data import NodeData

from .fold import Checker, check_list
from .reads import LEADER_CHANGE, MAX_EXAMPLES, is_int, node_id, read_records


def _claim(leaders: dict, epoch, leader, evidence) -> None:
    """Note ``evidence`` that ``leader`` led ``epoch`` (at most MAX_EXAMPLES per pair)."""
    if not (is_int(epoch) and is_int(leader) and leader >= 0):
        return
    ev = leaders.setdefault(epoch, {}).setdefault(leader, [])
    if len(ev) < MAX_EXAMPLES:
        ev.append(evidence)


class ElectionSafety(Checker):
    """Find epochs with two or more distinct leaders.

    Evidence of "L led epoch E":
    - a LeaderChange record with epoch E and payload ``LeaderId`` L, in any
      node's log (``nodes``) or in any ok read;
    - an ok ``describe-quorum`` with ``LeaderEpoch`` E and ``LeaderId`` L;
      the answering node (``node``, id taken from its name: ``"n2"`` -> 2)
      answered as leader, so it is evidence for its own id in E too — an
      answer whose ``LeaderId`` is not the answering node thus shows two
      leaders;
    - an ok append whose value names epoch E, answered by node L: only the
      leader of an epoch appends records of that epoch and acknowledges them.
    LeaderIds that are not non-negative ints (e.g. -1, no leader) are ignored.

    Result: ``{"valid", "anomalies", "epochs"}`` (``epochs``: number of
    epochs with a known leader). One anomaly per epoch, by epoch: ``{"epoch",
    "leaders": {L: [evidence, at most MAX_EXAMPLES]}}`` (by leader id),
    evidence being ``{"source": "log", "node", "offset"}`` (nodes by name,
    first), ``{"source": "read", "op", "offset", "node"}`` (then reads),
    ``{"source": "describe-quorum", "op", "node", "LeaderId"}`` (then
    describe-quorum answers) or ``{"source": "ack", "op", "node"}`` (then
    acknowledged appends).

    One pass; evidence is kept per (epoch, leader) and source, so memory
    follows the epochs, not the history.
    """

    def __init__(self) -> None:
        self.from_reads: dict[int, dict[int, list]] = {}
        self.from_dq: dict[int, dict[int, list]] = {}
        self.from_acks: dict[int, dict[int, list]] = {}

    def feed(self, op: dict) -> None:
        if op["type"] != "ok":
            return
        f = op["f"]
        v = op.get("value")
        if not isinstance(v, dict):
            return
        if f == "read":
            for offset, epoch, rtype, payload in read_records(op):
                if rtype == LEADER_CHANGE and isinstance(payload, dict):
                    _claim(self.from_reads, epoch, payload.get("LeaderId"),
                           {"source": "read", "op": op["index"], "offset": offset, "node": op.get("node")})
        elif f == "describe-quorum":
            epoch, leader = v.get("LeaderEpoch"), v.get("LeaderId")
            ev = {"source": "describe-quorum", "op": op["index"], "node": op.get("node"), "LeaderId": leader}
            _claim(self.from_dq, epoch, leader, ev)
            answering = node_id(op.get("node"))
            if answering is not None and answering != leader:
                _claim(self.from_dq, epoch, answering, ev)
        elif f == "append":
            _claim(self.from_acks, v.get("epoch"), node_id(op.get("node")),
                   {"source": "ack", "op": op["index"], "node": op.get("node")})

    def result(self, nodes) -> dict:
        leaders: dict[int, dict[int, list]] = {}
        for name, data in sorted((nodes or {}).items()):
            for offset, epoch, rtype, payload in data.records:
                if rtype == LEADER_CHANGE and isinstance(payload, dict):
                    _claim(leaders, epoch, payload.get("LeaderId"),
                           {"source": "log", "node": name, "offset": offset})
        for source in (self.from_reads, self.from_dq, self.from_acks):
            for epoch, by_leader in source.items():
                for leader, evidence in by_leader.items():
                    for ev in evidence:
                        _claim(leaders, epoch, leader, ev)
        anomalies = [{"epoch": epoch, "leaders": {str(l): ev for l, ev in sorted(by_leader.items())}}
                     for epoch, by_leader in sorted(leaders.items()) if len(by_leader) > 1]
        return {"valid": not anomalies, "anomalies": anomalies, "epochs": len(leaders)}


def check_election_safety(history: list[dict], nodes: dict[str, NodeData] | None) -> dict:
    """:class:`ElectionSafety` over an op list (see there for what it reports)."""
    return check_list(ElectionSafety(), history, nodes)
