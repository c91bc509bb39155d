"""Jepsen's Kafka workload checker against generated histories: seeded random histories played
against a correct log (harness/analysis/kafka_synth.py: several keys, concurrent clients,
transactions committed, aborted and of unknown outcome, crashes, assigns) are valid; each
mutation (a lost record, an aborted one exposed, a reordered poll, ...) shows its kind."""
from __future__ import annotations

import copy
import functools
import json
import random

import pytest

from checkers.kafka_txn import Options, check_ops
from harness.analysis.kafka_synth import SynthOptions, synth_history

SEEDS = range(8)
DATA = ("send", "poll", "txn")


def options(seed: int) -> SynthOptions:
    r = random.Random(seed)
    return SynthOptions(mops=r.choice([300, 600]), threads=r.randint(2, 5), keys=r.randint(1, 4),
                        topics=r.randint(1, 2), max_mops=r.randint(1, 4), max_poll=r.choice([3, 6]),
                        abort_p=0.1, info_p=0.05, crash_p=0.01, sub_p=0.03, subscribe=False,
                        final_threads=r.randint(1, 2))


@functools.lru_cache(maxsize=None)
def _history(seed: int) -> str:
    return json.dumps(synth_history(options(seed), seed))


def history(seed: int) -> list[dict]:
    """A fresh copy of seed ``seed``'s valid history."""
    return json.loads(_history(seed))


def errors(h: list[dict], **opts) -> dict[str, list[str]]:
    r = check_ops(h, Options(**opts))
    return {k: [a["explanation"] for a in v["anomalies"]] for k, v in r["by_kind"].items()
            if v["anomalies"] and not v["allowed"]}


def done(h):
    """Completed data ops, in history order."""
    return [op for op in h if op["type"] != "invoke" and op["f"] in DATA]


def sends(op):
    """``(mop, key, offset, value)`` of an op's sends with a known offset."""
    return [(m, m[1], m[2][0], m[2][1]) for m in op["value"] if m[0] == "send" and isinstance(m[2], list)
            and m[2][0] is not None]


def polls(op):
    """Each poll result map of an op."""
    return [m[1] for m in op["value"] if m[0] == "poll" and len(m) > 1]


def add_poll(h, process, reads: dict) -> None:
    """Append an ok poll op of ``process`` reading ``reads``."""
    t = h[-1]["time"]
    for typ, value in (("invoke", [["poll"]]), ("ok", [["poll", reads]])):
        t += 1
        h.append({"index": len(h), "time": t, "type": typ, "process": process, "f": "poll", "value": value})


def process_pairs(h):
    """``(earlier, later)`` completed data ops of one process, consecutive in its own order with
    no assign between them."""
    last: dict = {}
    for op in h:
        if op["type"] == "invoke":
            continue
        if op["f"] in ("assign", "subscribe"):
            last.pop(op["process"], None)
        elif op["f"] in DATA:
            if op["process"] in last:
                yield last[op["process"]], op
            last[op["process"]] = op


def swap_values(h, key, a, b) -> None:
    """Values ``a`` and ``b`` of ``key`` trade places in the log: each send of one gets the
    other's offset, and each poll sees the other at its offset."""
    sw = {a: b, b: a}
    mops = [m for op in h if isinstance(op["value"], list) for m in op["value"]]
    offset = {m[2][1]: m[2][0] for m in mops if m[0] == "send" and m[1] == key and isinstance(m[2], list)}
    for m in mops:
        if m[0] == "send" and m[1] == key:
            if isinstance(m[2], list) and m[2][1] in sw:
                m[2][0] = offset[sw[m[2][1]]]
        elif m[0] == "poll" and len(m) > 1 and key in m[1]:
                for rec in m[1][key]:
                    rec[1] = sw.get(rec[1], rec[1])


# --- mutations: each returns the kind it must show, or None where the history offers no case ---

def drop_acked(h, rng):
    by_key: dict = {}
    for op in done(h):
        if op["type"] == "ok":
            for _m, k, o, v in sends(op):
                by_key.setdefault(k, []).append((o, v))
    cases = [(k, o, v) for k, xs in by_key.items() for o, v in xs if o < max(x for x, _ in xs)]
    if not cases:
        return None
    k, o, v = rng.choice(cases)
    for op in done(h):
        for p in polls(op):
            if k in p:
                p[k] = [r for r in p[k] if r != [o, v]]
    return "lost-write"


def expose_failed(h, rng):
    cases = [(k, o, v) for op in done(h) if op["type"] == "fail" for _m, k, o, v in sends(op)]
    if not cases:
        return None
    k, o, v = rng.choice(cases)
    add_poll(h, 10**6, {k: [[o, v]]})
    return "G1a"


def reorder_poll(h, rng):
    cases = [(p, k) for op in done(h) for p in polls(op) for k, recs in p.items() if len(recs) >= 2]
    if not cases:
        return None
    p, k = rng.choice(cases)
    i = rng.randrange(len(p[k]) - 1)
    p[k][i], p[k][i + 1] = p[k][i + 1], p[k][i]
    return "int-nonmonotonic-poll"


def duplicate_value(h, rng):
    recs = [(k, r) for op in done(h) for p in polls(op) for k, rs in p.items() for r in rs]
    if not recs:
        return None
    k, (o, v) = rng.choice(recs)
    top = max(r[0] for _k, r in recs if _k == k)
    add_poll(h, 10**6, {k: [[top + 7, v]]})
    return "duplicate"


def two_values_one_offset(h, rng):
    acked = [(m, k, o) for op in done(h) if op["type"] == "ok" for m, k, o, _v in sends(op)]
    cases = [(m1, o2) for m1, k1, o1 in acked for _m2, k2, o2 in acked if k1 == k2 and o1 != o2]
    if not cases:
        return None
    m, o = rng.choice(cases[:200])
    m[2][0] = o
    return "inconsistent-offsets"


def _consumer_cases(h):
    """``(A, B, key)``: B is its process's next data op after A, both ok, A polled at least two
    records of key and B polled key from right after A's last."""
    out = []
    for a, b in process_pairs(h):
        if a["type"] != "ok" or b["type"] != "ok" or a.get("final") or b.get("final"):
            continue
        last = {}
        for p in polls(a):
            for k, rs in p.items():
                last[k] = last.get(k, []) + rs
        first = {}
        for p in polls(b):
            for k, rs in p.items():
                first.setdefault(k, rs[0] if rs else None)
        for k, rs in last.items():
            if len(rs) >= 2 and first.get(k) is not None:
                out.append((a, b, k))
    return out


def skip_in_consumer(h, rng):
    cases = _consumer_cases(h)
    if not cases:
        return None
    a, _b, k = rng.choice(cases)
    for p in reversed(polls(a)):
        if p.get(k):
            p[k] = p[k][:-1]
            break
    return "poll-skip"


def reread_in_consumer(h, rng):
    cases = _consumer_cases(h)
    if not cases:
        return None
    a, b, k = rng.choice(cases)
    last = [r for p in polls(a) for r in p.get(k, [])][-1]
    for p in polls(b):
        if p.get(k):
            p[k].insert(0, list(last))
            break
    return "nonmonotonic-poll"


def read_own_write(h, rng):
    cases = [(op, k, o, v) for op in done(h) if op["type"] == "ok" for _m, k, o, v in sends(op)]
    if not cases:
        return None
    op, k, o, v = rng.choice(cases)
    op["value"].append(["poll", {k: [[o, v]]}])
    return "precommitted-read"


def nonmonotonic_send(h, rng):
    cases = []
    for a, b in process_pairs(h):
        if a["type"] == "ok" and b["type"] == "ok":
            for _m, k, _o, v1 in reversed(sends(a)):
                later = [v2 for _m2, k2, _o2, v2 in sends(b) if k2 == k]
                if later:
                    cases.append((k, v1, later[0]))
                    break
    if not cases:
        return None
    swap_values(h, *rng.choice(cases))
    return "nonmonotonic-send"


def int_nonmonotonic_send(h, rng):
    cases = []
    for op in done(h):
        if op["type"] == "ok":
            ss = sends(op)
            cases += [(k, v1, v2) for i, (_m, k, _o, v1) in enumerate(ss) for _m2, k2, _o2, v2 in ss[i + 1:]
                      if k2 == k]
    if not cases:
        return None
    swap_values(h, *rng.choice(cases))
    return "int-nonmonotonic-send"


def int_poll_skip(h, rng):
    cases = [(p, k) for op in done(h) for p in polls(op) for k, recs in p.items() if len(recs) >= 3]
    if not cases:
        return None
    p, k = rng.choice(cases)
    del p[k][rng.randrange(1, len(p[k]) - 1)]
    return "int-poll-skip"


def read_the_future(h, rng):
    ops = done(h)
    cases = []
    for w in ops:
        if w["type"] != "ok" or not sends(w):
            continue
        invoked = max(op["index"] for op in h if op["process"] == w["process"] and op["type"] == "invoke"
                      and op["index"] < w["index"])
        early = [r for r in ops if r["type"] == "ok" and r["index"] < invoked and r["process"] != w["process"]
                 and polls(r) and not sends(r)]         # a pure poll: no wr edge back, no plain G1c
        if early:
            cases.append((w, early))
        if len(cases) > 20:
            break
    if not cases:
        return None
    w, early = rng.choice(cases)
    _m, k, o, v = sends(w)[0]
    polls(rng.choice(early))[0].setdefault(k, []).append([o, v])
    return "G1c-realtime"


def drop_final_polls(h, rng):
    keep = [op for op in h if not op.get("final")]
    acked = {(k, v) for op in done(keep) if op["type"] == "ok" for _m, k, _o, v in sends(op)}
    read = {(k, r[1]) for op in done(keep) if op["type"] == "ok" for p in polls(op) for k, rs in p.items()
            for r in rs}
    if not acked - read:                    # the clients read everything themselves
        return None
    h[:] = keep
    for i, op in enumerate(h):
        op["index"] = i
    return "unseen"


MUTATIONS = [drop_acked, expose_failed, reorder_poll, duplicate_value, two_values_one_offset, skip_in_consumer,
             reread_in_consumer, read_own_write, nonmonotonic_send, int_nonmonotonic_send, int_poll_skip,
             read_the_future, drop_final_polls]


@pytest.mark.parametrize("seed", SEEDS)
def test_a_history_from_a_correct_log_is_valid(seed):
    h = history(seed)
    r = check_ops(h)
    assert r["valid"] is True, errors(h)
    assert r["counts"]["micro_ops"] >= options(seed).mops
    kinds = {e["f"] + "/" + e["type"] for e in h}
    assert {"txn/ok", "poll/ok"} <= kinds or {"send/ok", "poll/ok"} <= kinds
    assert check_ops(h, Options(ww_deps=True))["valid"] is True     # G0 and G1c are then allowed


def test_the_generated_histories_hold_what_the_checker_must_cope_with():
    seen = set()
    for seed in SEEDS:
        for op in history(seed):
            seen.add((op["f"], op["type"]))
    assert {("txn", "ok"), ("txn", "fail"), ("txn", "info"), ("send", "fail"), ("poll", "ok"),
            ("crash", "info"), ("assign", "ok")} <= seen


@pytest.mark.parametrize("mutate", MUTATIONS, ids=lambda m: m.__name__)
def test_each_mutation_shows_its_kind(mutate):
    applied = 0
    for seed in SEEDS:
        h = history(seed)
        kind = mutate(h, random.Random(seed))
        if kind is None:
            continue
        applied += 1
        found = errors(h)
        assert kind in found, f"seed {seed}: {mutate.__name__} should show {kind}, found {found}"
    assert applied >= 3, f"{mutate.__name__} found a case in only {applied} histories"
