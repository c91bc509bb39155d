"""Duplicates: one data value at more than one offset of a single read."""
from __future__ import annotations

from .node_data import NodeData
from .reads import DATA, MAX_EXAMPLES, final_committed_pages, ok_reads, read_records, record_key


def check_duplicate(history: list[dict], nodes: dict[str, NodeData] | None = None) -> dict:
    """Find data values that appear at two or more different offsets within one ok
    read. The final committed log is one such read, even when it was taken in
    several pages (``reads.final_committed_pages``).

    The same duplication repeats in every later read of that prefix, so it
    is reported once per (value, offsets): ``{"value", "offsets": [...],
    "ops": [read indices, at most MAX_EXAMPLES], "op_count", "nodes":
    [nodes that served those reads]}``. Returns ``{"valid", "anomalies"}``.
    ``nodes`` is unused.
    """
    found: dict = {}
    pages = final_committed_pages(history)
    page_ids = {id(p) for p in pages}
    # each read is a list of ops: one op, or the pages of the final committed log
    reads = [[op] for op in ok_reads(history) if id(op) not in page_ids]
    if pages:
        reads.append(pages)
    for ops in reads:
        op = ops[0]
        seen: dict = {}
        for page in ops:
            for offset, _epoch, rtype, payload in read_records(page):
                if rtype == DATA:
                    seen.setdefault(record_key(DATA, payload), (payload, set()))[1].add(offset)
        for key, (payload, offsets) in seen.items():
            if len(offsets) < 2:
                continue
            offs = tuple(sorted(offsets))
            a = found.get((key, offs))
            if a is None:
                a = found[(key, offs)] = {"value": payload, "offsets": list(offs), "ops": [],
                                          "op_count": 0, "nodes": []}
            a["op_count"] += 1
            if len(a["ops"]) < MAX_EXAMPLES:
                a["ops"].append(op["index"])
            node = op.get("node")
            if node is not None and node not in a["nodes"]:
                a["nodes"].append(node)
    anomalies = list(found.values())
    return {"valid": not anomalies, "anomalies": anomalies}
