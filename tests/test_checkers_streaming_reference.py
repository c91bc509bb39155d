"""The list-based log-safety checkers and stats as they were before they became folds (issue 13).

Frozen copies (docstrings dropped: the folds' modules define what each
reports), the oracle tests/test_checkers_streaming.py compares the
streaming checkers with. Stats carry the cas-mismatch and append-availability
rules of the kv workload. Not a test module itself.
"""
from __future__ import annotations

import bisect
import math
from itertools import accumulate, combinations

from checkers.reads import (DATA, LEADER_CHANGE, MAX_EXAMPLES, acks, final_committed_pages, final_node_reads,
                            is_final_committed, is_int, node_id, ok_ops, ok_reads, read_end, read_records,
                            record_key)
from history import NEMESIS, pair_ops

NodeData = object

# ---- checkers/lost_write.py --------------------------------------------------

def _offsetless_acks(history: list[dict]) -> list[dict]:
    # issue 14: ok appends acknowledged without an offset ({"value": V}, Kafka's CreateTopics)
    return [op for op in history if op["type"] == "ok" and op["f"] == "append"
            and isinstance(op.get("value"), dict) and "value" in op["value"] and "offset" not in op["value"]]


def check_lost_write(history: list[dict], nodes: dict[str, NodeData] | None = None) -> dict:
    offsetless = _offsetless_acks(history)
    acked = list(acks(history))
    n_acked = len(acked) + len(offsetless)
    pages = final_committed_pages(history)
    if not pages:
        return {"valid": True if not n_acked else "unknown", "anomalies": [], "acked": n_acked,
                "final_read": None, "final_pages": 0, "unjudged": n_acked,
                "note": None if not n_acked else "no ok read with final and linearizable true"}
    hw = pages[-1]["value"].get("high_watermark")
    ranges = [(p["value"].get("from"), read_end(p["value"])) for p in pages]
    ranges = sorted((a, b) for a, b in ranges if is_int(a) and is_int(b))
    # Pages may overlap: O is covered iff the furthest end among the pages starting at or
    # before O (reach[i - 1], i = how many start there) lies past O.
    starts = [a for a, _b in ranges]
    reach = list(accumulate((b for _a, b in ranges), max))
    by_offset = {}
    where: dict = {}
    for page in pages:
        for rec in read_records(page):
            by_offset[rec[0]] = rec
            if rec[2] == DATA:
                try:
                    where.setdefault(rec[3], []).append(rec[0])
                except TypeError:       # unhashable payload: never an appended value
                    pass
    anomalies, unjudged = [], 0
    for op in acked:
        v = op["value"]
        value, offset = v["value"], v["offset"]
        past_end = is_int(hw) and offset >= hw
        if not past_end:
            i = bisect.bisect_right(starts, offset)
            if not i or offset >= reach[i - 1]:
                unjudged += 1
                continue
        rec = by_offset.get(offset)
        if rec is not None and not past_end and rec[2] == DATA and rec[3] == value:
            continue
        try:
            found_at = sorted(where.get(value, []))
        except TypeError:
            found_at = []
        anomalies.append({"op": op["index"], "value": value, "offset": offset,
                          "epoch": v.get("epoch"), "node": op.get("node"),
                          "found": list(rec) if rec is not None else None,
                          "found_at": found_at})
    if offsetless and (not starts or starts[0] != 0):
        unjudged += len(offsetless)
    elif offsetless:
        lost = [op for op in offsetless if not isinstance(op["value"]["value"], (int, str))
                or op["value"]["value"] not in where]
        anomalies += [{"op": op["index"], "value": op["value"]["value"], "offset": None, "epoch": None,
                       "node": op.get("node"), "found": None, "found_at": []} for op in lost]
    return {"valid": not anomalies, "anomalies": anomalies, "acked": n_acked,
            "final_read": pages[-1]["index"], "final_pages": len(pages), "unjudged": unjudged}

# ---- checkers/phantom.py -----------------------------------------------------

def check_phantom(history: list[dict], nodes: dict[str, NodeData] | None = None) -> dict:
    attempted: set = set()
    failed: dict = {}
    for op in history:
        if op["f"] != "append":
            continue
        key = record_key(DATA, op.get("value"))
        if op["type"] == "invoke":
            attempted.add(key)
        elif op["type"] == "fail":
            failed[key] = op["index"]
    found: dict = {}
    for op in ok_reads(history):
        for offset, _epoch, rtype, payload in read_records(op):
            if rtype != DATA:
                continue
            key = record_key(DATA, payload)
            if key in attempted and key not in failed:
                continue
            a = found.get(key)
            if a is None:
                a = found[key] = {
                    "value": payload,
                    "reason": "append-failed" if key in failed else "never-attempted",
                    "append": failed.get(key), "seen": [], "seen_count": 0}
            a["seen_count"] += 1
            if len(a["seen"]) < MAX_EXAMPLES:
                a["seen"].append({"op": op["index"], "offset": offset, "node": op.get("node")})
    anomalies = list(found.values())
    return {"valid": not anomalies, "anomalies": anomalies}

# ---- checkers/duplicate.py ---------------------------------------------------

def check_duplicate(history: list[dict], nodes: dict[str, NodeData] | None = None) -> dict:
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

# ---- checkers/inconsistent_offsets.py ----------------------------------------

def check_inconsistent_offsets(history: list[dict], nodes: dict[str, NodeData] | None = None) -> dict:
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

# ---- checkers/divergence.py --------------------------------------------------

def node_high_watermarks(history: list[dict], nodes: dict[str, NodeData]) -> tuple[dict[str, int], list[str]]:
    reads = final_node_reads(history)
    hws, notes = {}, []
    for name, data in nodes.items():
        op = reads.get(name)
        hw = op["value"].get("high_watermark") if op is not None else None
        if not is_int(hw):
            hw = data.high_watermark
        if is_int(hw):
            hws[name] = hw
        else:
            notes.append(f"{name}: no final read and no high-watermark checkpoint; not compared")
    return hws, notes


def check_divergence(history: list[dict], nodes: dict[str, NodeData] | None) -> dict:
    if nodes is None:
        return {"valid": "unknown", "anomalies": [], "high_watermarks": {},
                "notes": ["no node data"]}
    hws, notes = node_high_watermarks(history, nodes)
    logs = {}
    for name in hws:
        by_off = {}
        for rec in nodes[name].records:
            by_off[rec[0]] = (rec[0], rec[1], rec[2], record_key(rec[2], rec[3]))
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

# ---- checkers/election_safety.py ---------------------------------------------

def check_election_safety(history: list[dict], nodes: dict[str, NodeData] | None) -> dict:
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
    for op in ok_ops(history, "append"):     # acks name the epoch their node led
        v = op.get("value")
        if isinstance(v, dict):
            claim(v.get("epoch"), node_id(op.get("node")), {"source": "ack", "op": op["index"], "node": op.get("node")})
    anomalies = [{"epoch": epoch, "leaders": {str(l): ev for l, ev in sorted(by_leader.items())}}
                 for epoch, by_leader in sorted(leaders.items()) if len(by_leader) > 1]
    return {"valid": not anomalies, "anomalies": anomalies, "epochs": len(leaders)}

# ---- checkers/nonmonotonic_read.py -------------------------------------------

def malformed_read(value: dict) -> str | None:
    start, hw, recs = value.get("from"), value.get("high_watermark"), value.get("records")
    if not is_int(start) or not is_int(hw):
        return f"from {start!r} and high_watermark {hw!r} must be ints"
    end = read_end(value)
    if "to" in value and (not is_int(end) or end > hw):
        return f"to {end!r} must be an int <= high_watermark {hw}"
    if not isinstance(recs, list):
        return "records is not a list"
    expected = max(end - start, 0)
    if len(recs) != expected:
        return f"{len(recs)} records for range [{start}, {end}) of {expected} offsets"
    for i, r in enumerate(recs):
        if not (isinstance(r, list) and len(r) == 4 and r[0] == start + i):
            return f"record {i} is {r!r}, expected offset {start + i}"
    return None


def check_nonmonotonic_read(history: list[dict], nodes: dict[str, NodeData] | None = None) -> dict:
    anomalies = []
    observations = []     # (completion index, prefix end, completion op)
    reads = []            # (invoke index, completion op, hw)
    for inv, comp in pair_ops(history):
        if comp is None or comp["type"] != "ok" or not isinstance(comp.get("value"), dict):
            continue
        v = comp["value"]
        if comp["f"] == "append":
            if is_int(v.get("offset")):
                observations.append((comp["index"], v["offset"] + 1, comp))
            continue
        if comp["f"] != "read":
            continue
        problem = malformed_read(v)
        if problem:
            anomalies.append({"kind": "malformed", "op": comp["index"], "node": comp.get("node"),
                              "problem": problem})
            continue
        if v.get("linearizable") is not True:
            continue
        observations.append((comp["index"], v["high_watermark"], comp))
        reads.append((inv["index"], comp, v["high_watermark"]))
    observations.sort(key=lambda o: o[0])
    reads.sort(key=lambda r: r[0])
    best, best_op, i = -1, None, 0
    final_reported = False
    for inv_index, comp, hw in reads:
        while i < len(observations) and observations[i][0] < inv_index:
            if observations[i][1] > best:
                best, best_op = observations[i][1], observations[i][2]
            i += 1
        if best_op is not None and hw < best:
            if "to" in comp["value"] and is_final_committed(comp):
                if final_reported:
                    continue
                final_reported = True
            anomalies.append({"kind": "nonmonotonic", "op": comp["index"], "invoke": inv_index,
                              "node": comp.get("node"), "high_watermark": hw,
                              "earlier_op": best_op["index"], "earlier_f": best_op["f"],
                              "earlier_high_watermark": best})
    return {"valid": not anomalies, "anomalies": anomalies, "reads": len(reads)}

# ---- checkers/stats.py -------------------------------------------------------

#: ``error`` of a kv cas whose compare failed (workloads/kv.py): a definite fail.
CAS_MISMATCH = "cas-mismatch"
#: Width of an availability window, in ns (1 s).
WINDOW_NS = 1_000_000_000
#: Latency quantiles reported, as (name, q).
QUANTILES = (("p50", 0.50), ("p90", 0.90), ("p99", 0.99), ("max", 1.0))


def quantile(sorted_values: list[float], q: float) -> float | None:
    if not sorted_values:
        return None
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def check_stats(history: list[dict], nodes: dict[str, NodeData] | None = None) -> dict:
    counts: dict[str, dict[str, int]] = {}
    leaders: set[tuple[int, int]] = set()   # (before issue 13 it was set only when client ops existed)
    invoked = {op["f"] for op in history if op["type"] == "invoke"}
    for op in history:
        if op["type"] != "invoke":
            c = counts.setdefault(op["f"], {"ok": 0, "fail": 0, "info": 0})
            c[op["type"]] += 1
    client = [op for op in history if op["process"] != NEMESIS]
    windows = 0
    availability = append_availability = None
    if client:
        t0, t1 = client[0]["time"], client[-1]["time"]
        windows = max(1, math.ceil((t1 - t0) / WINDOW_NS))
        leader_windows, append_windows = set(), set()
        dq_invoked = False
        for op in client:
            w = min((op["time"] - t0) // WINDOW_NS, windows - 1)
            if op["f"] == "describe-quorum":
                dq_invoked = True
                v = op.get("value")
                if (op["type"] == "ok" and isinstance(v, dict) and is_int(v.get("LeaderId"))
                        and v["LeaderId"] >= 0):
                    leader_windows.add(w)
                    if is_int(v.get("LeaderEpoch")):
                        leaders.add((v["LeaderEpoch"], v["LeaderId"]))
            elif op["f"] == "append" and op["type"] == "ok":
                append_windows.add(w)
        availability = len(leader_windows) / windows if dq_invoked else None
        append_availability = len(append_windows) / windows
    latencies: dict[str, list[float]] = {}
    for inv, comp in pair_ops(history):
        if comp is not None and comp["type"] == "ok" and inv["process"] != NEMESIS:
            latencies.setdefault(inv["f"], []).append((comp["time"] - inv["time"]) / 1e6)
    latency_ms = {}
    for f, vals in sorted(latencies.items()):
        vals.sort()
        latency_ms[f] = {name: quantile(vals, q) for name, q in QUANTILES}
        latency_ms[f]["n"] = len(vals)
    out = {"valid": True, "counts": counts, "windows": windows, "availability": availability,
           "append_availability": append_availability, "latency_ms": latency_ms,
           "epochs": {"max": max((e for e, _ in leaders), default=None), "leaders": len(leaders)}}
    if "append" not in invoked:
        del out["append_availability"]
    if "cas" in invoked:
        out["cas_mismatches"] = sum(1 for op in history if op["f"] == "cas" and op["type"] == "fail"
                                    and op.get("error") == CAS_MISMATCH)
    return out
