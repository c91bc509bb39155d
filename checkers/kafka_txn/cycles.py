"""G0, G1c and their real-time variants: cycles in the dependency graph of the data ops.

The graph is Jepsen's (``jepsen.tests.kafka``, ``graph``, searched by Elle's ``txn/cycles!`` at
strict serializability): one vertex per completed send / poll / txn op, and edges

- **wr**: the op that sent a value -> each other op that polled it;
- **ww** (only with ``ww_deps``): the op that sent a key's value -> the op that sent the next
  value in the key's version order;
- **realtime**: an ok op -> each op invoked after it completed (Elle's transitive reduction,
  collected in checkers/kafka_txn/collect.py).

The strongly connected components of the whole graph come from SciPy's compressed sparse graph
routines (``scipy.sparse.csgraph``: the graph is held as arrays, a few bytes an edge); each
component that holds a cycle is then searched with networkx, as Elle searches one: a cycle of
ww edges alone is **G0**; else one of ww and wr edges is **G1c**, and one of ww and realtime
edges is **G0-realtime**; when neither, any cycle is **G1c-realtime** (it needs both a wr and
a realtime edge). A component reports at most one cycle of each kind, and none that a cycle
found in it implies (Elle's anomaly implications). A cycle is a shortest one back through one
of up to :data:`TRIES` edges of the smallest sub-component found.
"""
from __future__ import annotations

from array import array
from typing import Any

from .collect import TxnOp
from .explain import anomaly, op_name, val
from .orders import KeyOrder

#: edge relations, as bits
WW, WR, RT = 1, 2, 4
REL_NAMES = {WW: "ww", WR: "wr", RT: "realtime"}
#: edges of a component tried as the start of a shortest cycle; the shortest found wins
TRIES = 16


def build_edges(ops: list[TxnOp], orders: dict[str, KeyOrder], writer_of: dict[str, dict[Any, int]],
                ww_deps: bool) -> tuple[array, array, array]:
    """``(src, dst, rel)`` arrays of the graph's edges (op ids; ``rel`` one of :data:`WW`,
    :data:`WR`, :data:`RT`). An op never depends on itself; a value no op sent gives no edge."""
    src, dst, rel = array("i"), array("i"), array("b")
    for op in ops:
        b = op.id
        if op.polled:
            ws: set = set()
            for k, vals in op.values():
                wk = writer_of.get(k)
                if wk:
                    ws.update(map(wk.get, vals))
            ws.discard(None)
            ws.discard(b)
            if ws:
                src.extend(ws)
                dst.extend([b] * len(ws))
                rel.extend([WR] * len(ws))
        if op.rt_preds:
            src.extend(op.rt_preds)
            dst.extend([b] * len(op.rt_preds))
            rel.extend([RT] * len(op.rt_preds))
    if ww_deps:
        for k, wk in writer_of.items():
            order = orders.get(k)
            if order is None:
                continue
            index, by_index = order.index, order.by_index
            for v2, b in wk.items():
                i2 = index.get(v2)
                if i2:
                    a = wk.get(by_index[i2 - 1])
                    if a is not None and a != b:
                        src.append(a)
                        dst.append(b)
                        rel.append(WW)
    return src, dst, rel


def components(n: int, src: array, dst: array, rel: array) -> list[dict[tuple[int, int], int]]:
    """The strongly connected components of ``n`` vertices that hold a cycle, each as its
    edges ``{(a, b): rel bits}``, smallest first vertex first."""
    import numpy as np

    if n == 0 or len(src) == 0:
        return []
    s = np.frombuffer(src, dtype=np.int32)
    d = np.frombuffer(dst, dtype=np.int32)
    if not (s > d).any():           # every edge runs forward in completion order: no cycle
        return []
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    g = csr_matrix((np.ones(len(s), dtype=np.int8), (s, d)), shape=(n, n))
    _count, labels = connected_components(g, directed=True, connection="strong")
    sizes = np.bincount(labels)
    inside = (labels[s] == labels[d]) & (sizes[labels[s]] > 1)
    if not inside.any():
        return []
    r = np.frombuffer(rel, dtype=np.int8)
    comps: dict[int, dict[tuple[int, int], int]] = {}
    for a, b, bits, lab in zip(s[inside].tolist(), d[inside].tolist(), r[inside].tolist(),
                               labels[s[inside]].tolist()):
        edges = comps.setdefault(lab, {})
        edges[(a, b)] = edges.get((a, b), 0) | bits
    return sorted(comps.values(), key=lambda e: min(a for a, _b in e))


def _cycle(edges: dict[tuple[int, int], int], rels: int) -> list[int] | None:
    """A short cycle (vertices, first repeated last) over the edges with a bit in ``rels``,
    or None when they hold none (networkx)."""
    import networkx as nx

    h = nx.DiGraph()
    h.add_edges_from(e for e, bits in edges.items() if bits & rels)
    comps = [c for c in nx.strongly_connected_components(h) if len(c) > 1]
    if not comps:
        return None
    comp = min(comps, key=lambda c: (len(c), min(c)))
    sub = h.subgraph(comp)
    best = None
    for a, b in sorted(sub.edges())[:TRIES]:
        path = nx.shortest_path(sub, b, a)
        if best is None or len(path) + 1 < len(best):
            best = [a, *path]
        if len(best) == 3:
            break
    return best


def _label(bits: int, rels: int) -> int:
    """The relation a step is explained by: ww before wr before realtime (Elle's order)."""
    bits &= rels
    return WW if bits & WW else (WR if bits & WR else RT)


def search(edges: dict[tuple[int, int], int]) -> list[tuple[str, list[tuple[int, int, int]]]]:
    """The cycles of one component as ``(kind, [(a, b, rel), ...])``, in Elle's order and
    with its implications (module docstring)."""
    found = []

    def look(rels: int) -> bool:
        cyc = _cycle(edges, rels)
        if cyc is None:
            return False
        steps = [(a, b, _label(edges[(a, b)], rels)) for a, b in zip(cyc, cyc[1:])]
        labels = {rel for _a, _b, rel in steps}
        kind = ("G1c" if WR in labels else "G0") + ("-realtime" if RT in labels else "")
        found.append((kind, steps))
        return True

    if look(WW):
        return found
    g1c = look(WW | WR)
    g0rt = look(WW | RT)
    if not (g1c or g0rt):
        look(WW | WR | RT)
    return found


def _step_text(a: TxnOp, b: TxnOp, rel: int, orders: dict[str, KeyOrder],
               writer_of: dict[str, dict[Any, int]]) -> tuple[str, dict]:
    if rel == WR:
        for k, (offs, vals) in b.reads.items():
            wk = writer_of.get(k, {})
            for o, v in zip(offs, vals):
                if wk.get(v) == a.id:
                    return (f"op {a.index} sent {val(v)} to key {k}, which op {b.index} polled at offset {o}",
                            {"key": k, "value": v, "offset": o})
    elif rel == WW:
        for k, v2, _o in b.writes:
            order = orders.get(k)
            i2 = order.index.get(v2) if order else None
            if i2:
                v1 = order.by_index[i2 - 1]
                if writer_of.get(k, {}).get(v1) == a.id:
                    return (f"op {a.index} sent {val(v1)} to key {k} (offset {order.offsets[i2 - 1]}) just before "
                            f"op {b.index} sent {val(v2)} (offset {order.offsets[i2]})",
                            {"key": k, "value": v1, "next_value": v2})
    return f"op {a.index} completed before op {b.index} was invoked (at index {b.invoke})", {}


def cycle_anomalies(ops: list[TxnOp], orders: dict[str, KeyOrder], writer_of: dict[str, dict[Any, int]],
                    ww_deps: bool) -> list[dict]:
    """Every cycle anomaly of the history's dependency graph (module docstring), explained."""
    src, dst, rel = build_edges(ops, orders, writer_of, ww_deps)
    out = []
    for edges in components(len(ops), src, dst, rel):
        for kind, steps in search(edges):
            texts, details = [], []
            for a, b, r in steps:
                text, fields = _step_text(ops[a], ops[b], r, orders, writer_of)
                texts.append(f"{text} ({REL_NAMES[r]})")
                details.append({"from": ops[a].index, "to": ops[b].index, "type": REL_NAMES[r], **fields})
            cycle = [ops[a].index for a, _b, _r in steps] + [ops[steps[0][0]].index]
            names = ", ".join(op_name(ops[a]) for a, _b, _r in steps)
            out.append(anomaly(kind, f"{names} form a cycle: " + "; ".join(texts),
                               cycle=cycle, steps=details, ops=cycle[:-1], scc_size=len({a for a, _ in edges})))
    return out
