"""Election safety (Raft §5.2, KIP-595): at most one leader per epoch."""
from __future__ import annotations

from .node_data import NodeData
from .reads import LEADER_CHANGE, MAX_EXAMPLES, is_int, node_id, ok_ops, ok_reads, read_records


def check_election_safety(history: list[dict], nodes: dict[str, NodeData] | None) -> dict:
    """Find epochs with two or more distinct leaders.

    Evidence of "L led epoch E":
    - a LeaderChange record with epoch E and payload ``LeaderId`` L, in any
      node's log (``nodes``) or in any ok read;
    - an ok ``describe-quorum`` with ``LeaderEpoch`` E and ``LeaderId`` L;
      the answering node (``node``, id taken from its name: ``"n2"`` -> 2)
      answered as leader, so it is evidence for its own id in E too — an
      answer whose ``LeaderId`` is not the answering node thus shows two
      leaders.
    LeaderIds that are not non-negative ints (e.g. -1, no leader) are ignored.

    Returns ``{"valid", "anomalies", "epochs"}`` (``epochs``: number of epochs
    with a known leader). One anomaly per epoch: ``{"epoch", "leaders": {L:
    [evidence, at most MAX_EXAMPLES]}}``, evidence being ``{"source": "log",
    "node", "offset"}``, ``{"source": "read", "op", "offset", "node"}`` or
    ``{"source": "describe-quorum", "op", "node", "LeaderId"}``.
    """
    leaders: dict[int, dict[int, list]] = {}

    def claim(epoch, leader, evidence):
        if not (is_int(epoch) and is_int(leader) and leader >= 0):
            return
        ev = leaders.setdefault(epoch, {}).setdefault(leader, [])
        if len(ev) < MAX_EXAMPLES:
            ev.append(evidence)

    for name, data in sorted((nodes or {}).items()):
        for offset, epoch, rtype, payload in data.records:
            if rtype == LEADER_CHANGE and isinstance(payload, dict):
                claim(epoch, payload.get("LeaderId"), {"source": "log", "node": name, "offset": offset})
    for op in ok_reads(history):
        for offset, epoch, rtype, payload in read_records(op):
            if rtype == LEADER_CHANGE and isinstance(payload, dict):
                claim(epoch, payload.get("LeaderId"),
                      {"source": "read", "op": op["index"], "offset": offset, "node": op.get("node")})
    for op in ok_ops(history, "describe-quorum"):
        v = op.get("value")
        if not isinstance(v, dict):
            continue
        epoch, leader = v.get("LeaderEpoch"), v.get("LeaderId")
        ev = {"source": "describe-quorum", "op": op["index"], "node": op.get("node"), "LeaderId": leader}
        claim(epoch, leader, ev)
        answering = node_id(op.get("node"))
        if answering is not None and answering != leader:
            claim(epoch, answering, ev)
    anomalies = [{"epoch": epoch, "leaders": {str(l): ev for l, ev in sorted(by_leader.items())}}
                 for epoch, by_leader in sorted(leaders.items()) if len(by_leader) > 1]
    return {"valid": not anomalies, "anomalies": anomalies, "epochs": len(leaders)}
