"""Divergence: two nodes' logs differ inside both nodes' committed prefixes."""
from __future__ import annotations

from itertools import combinations

from history.node_data import NodeData

from .fold import Checker, check_list
from .reads import final_node_reads, is_int, record_key


def node_high_watermarks(history: list[dict], nodes: dict[str, NodeData]) -> tuple[dict[str, int], list[str]]:
    """Each node's high watermark and notes on the nodes skipped.

    Source, in order: the ``high_watermark`` of the node's final
    non-linearizable read (ok read, ``final: true``, ``linearizable: false``,
    ``node`` = the node), else ``NodeData.high_watermark``. Returns
    ``({node: hw}, [notes])``.
    """
    reads = final_node_reads(history)
    return _high_watermarks({name: op["value"].get("high_watermark") for name, op in reads.items()}, nodes)


def _high_watermarks(read_hws: dict, nodes: dict[str, NodeData]) -> tuple[dict[str, int], list[str]]:
    """:func:`node_high_watermarks` from ``{node: high_watermark of its final read}``."""
    hws, notes = {}, []
    for name, data in nodes.items():
        hw = read_hws.get(name)
        if not is_int(hw):
            hw = data.high_watermark
        if is_int(hw):
            hws[name] = hw
        else:
            notes.append(f"{name}: no final read and no high-watermark checkpoint; not compared")
    return hws, notes


class Divergence(Checker):
    """Find pairs of nodes whose logs differ below the lower of their high watermarks.

    Records are compared by (offset, epoch, type, payload). For a pair
    ``(a, b)`` the compared range is ``[max of the two log start offsets,
    min(hw_a, hw_b))``; an offset in that range missing from one log counts
    as a difference. One anomaly per pair: ``{"nodes": [a, b], "offset":
    first differing offset, "records": {a: record or None, b: record or
    None}, "count": differing offsets, "limit": min hw}``.

    Result: ``{"valid", "anomalies", "high_watermarks", "notes"}``. ``valid``
    is "unknown" when ``nodes`` is None, or when fewer than two nodes have a
    known high watermark (out of two or more nodes).

    One pass over the history, for the high watermark of each node's final
    read (``node_high_watermarks``); the rest reads the node logs only.
    """

    def __init__(self) -> None:
        self.read_hws: dict = {}        # node -> high_watermark of its last final read

    def feed(self, op: dict) -> None:
        if op["type"] == "ok" and op["f"] == "read":
            v = op.get("value")
            if (isinstance(v, dict) and v.get("final") is True and v.get("linearizable") is False
                    and op.get("node")):
                self.read_hws[op["node"]] = v.get("high_watermark")

    def result(self, nodes) -> dict:
        return divergence(self.read_hws, nodes)


def divergence(read_hws: dict, nodes: dict[str, NodeData] | None) -> dict:
    """The divergence result (see :class:`Divergence`) from ``{node: high_watermark of its
    final read}`` and the node data."""
    if nodes is None:
        return {"valid": "unknown", "anomalies": [], "high_watermarks": {},
                "notes": ["no node data"]}
    hws, notes = _high_watermarks(read_hws, nodes)
    logs = {}
    canon: dict[int, tuple] = {}    # id(payload) -> (payload, its record_key): nodes' logs may share payloads
    for name in hws:
        by_off = {}
        for rec in nodes[name].records:
            payload = rec[3]
            if type(payload) is int:
                key = rec[2], 0, payload
            else:
                seen = canon.get(id(payload))
                if seen is None or seen[1][0] != rec[2]:
                    seen = canon[id(payload)] = payload, record_key(rec[2], payload)
                key = seen[1]
            by_off[rec[0]] = (rec[0], rec[1], rec[2], key)
        logs[name] = (by_off, min(by_off) if by_off else 0, nodes[name].records)
    anomalies = []
    for a, b in combinations(sorted(hws), 2):
        la, sa, ra = logs[a]
        lb, sb, rb = logs[b]
        limit = min(hws[a], hws[b])
        first, count = None, 0
        for off in range(max(sa, sb), limit):
            if la.get(off) != lb.get(off) or off not in la:
                count += 1
                if first is None:
                    first = off
        if count:
            recs = {n: next((list(r) for r in rs if r[0] == first), None) for n, rs in ((a, ra), (b, rb))}
            anomalies.append({"nodes": [a, b], "offset": first, "records": recs,
                              "count": count, "limit": limit})
    if anomalies:
        valid = False
    elif len(hws) < 2 and len(nodes) >= 2:
        valid = "unknown"
        notes.append("fewer than two nodes with a known high watermark")
    else:
        valid = True
    return {"valid": valid, "anomalies": anomalies, "high_watermarks": hws, "notes": notes}


def check_divergence(history: list[dict], nodes: dict[str, NodeData] | None) -> dict:
    """:class:`Divergence` over an op list (see there for what it reports)."""
    return check_list(Divergence(), history, nodes)
