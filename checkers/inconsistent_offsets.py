"""Inconsistent offsets: two different records observed at one offset."""
from __future__ import annotations

from .node_data import NodeData
from .reads import DATA, MAX_EXAMPLES, acks, ok_reads, read_records, record_key


def check_inconsistent_offsets(history: list[dict], nodes: dict[str, NodeData] | None = None) -> dict:
    """Find offsets at which the history shows two different records.

    Observations: every record of every ok read (final or not, linearizable
    or not) and every ok append (an ack of ``{"value": V, "offset": O}``
    says O holds data V). Records are compared by (type, payload); the epoch
    is reported but not compared.

    Returns ``{"valid", "anomalies"}``; one anomaly per offset: ``{"offset",
    "records": [{"type", "payload", "epochs", "ops": [op indices, at most
    MAX_EXAMPLES], "count"}, ...]}`` listing each distinct record seen there.
    ``nodes`` is unused.
    """
    seen: dict[int, dict] = {}    # offset -> record key -> observation

    def observe(offset, epoch, rtype, payload, op_index):
        variants = seen.setdefault(offset, {})
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

    for op in acks(history):
        v = op["value"]
        observe(v["offset"], v.get("epoch"), DATA, v["value"], op["index"])
    for op in ok_reads(history):
        for offset, epoch, rtype, payload in read_records(op):
            observe(offset, epoch, rtype, payload, op["index"])
    anomalies = [{"offset": offset, "records": list(variants.values())}
                 for offset, variants in sorted(seen.items()) if len(variants) > 1]
    return {"valid": not anomalies, "anomalies": anomalies}
