"""The streaming checkers (folds) give exactly what the list-based ones gave.

The list-based checkers as they were before they became folds are frozen in
tests/test_checkers_streaming_reference.py. Compared, as JSON text (so
order, key order and int/float/bool all count): every history the checker
tests build by hand, random histories full of odd shapes, and a synthetic
history with injected anomalies read from its file, as ``kraft-chaos
check`` reads it.
"""
from __future__ import annotations

import importlib
import inspect
import json
import math
import random

import pytest

import checkers.log_safety as log_safety
from checkers.divergence import Divergence
from checkers.duplicate import Duplicate
from checkers.election_safety import ElectionSafety
from checkers.fold import CheckContext, check_list, ops_of, run_checkers
from checkers.inconsistent_offsets import InconsistentOffsets
from checkers.lost_write import LostWrite
from checkers.nonmonotonic_read import NonmonotonicRead
from checkers.phantom import Phantom
from checkers.registry import check_all_folds
from checkers.stats import Stats
from history import store
from harness.analysis.synth import SynthOptions, read_sidecar, synth_run
from history import HistoryError, iter_history, read_history
from history.node_data import NodeData
from tests import test_checkers_streaming_reference as ref

#: name -> (reference list function, fold factory, the wrapper's module and name)
CHECKERS = {
    "lost-write": (ref.check_lost_write, LostWrite, "checkers.lost_write", "check_lost_write"),
    "phantom": (ref.check_phantom, Phantom, "checkers.phantom", "check_phantom"),
    "duplicate": (ref.check_duplicate, Duplicate, "checkers.duplicate", "check_duplicate"),
    "inconsistent-offsets": (ref.check_inconsistent_offsets, InconsistentOffsets,
                             "checkers.inconsistent_offsets", "check_inconsistent_offsets"),
    "divergence": (ref.check_divergence, Divergence, "checkers.divergence", "check_divergence"),
    "election-safety": (ref.check_election_safety, ElectionSafety, "checkers.election_safety",
                        "check_election_safety"),
    "nonmonotonic-read": (ref.check_nonmonotonic_read, NonmonotonicRead, "checkers.nonmonotonic_read",
                          "check_nonmonotonic_read"),
    "stats": (ref.check_stats, Stats, "checkers.stats", "check_stats"),
}


def text(result) -> str:
    return json.dumps(result, default=repr)


def outcome(fn, *args):
    """``("ok", result as JSON text)`` or ``("raises", type name, message)``."""
    try:
        return "ok", text(fn(*args))
    except HistoryError as e:
        return "raises", type(e).__name__, str(e)


def assert_same_everywhere(history: list[dict], nodes=None) -> None:
    """Each checker alone over the list, and all of them in one run, equal the reference."""
    want = {name: outcome(r, history, nodes) for name, (r, _f, _m, _n) in CHECKERS.items()}
    for name, (_r, factory, _m, _n) in CHECKERS.items():
        assert outcome(lambda h, n: check_list(factory(), h, n), history, nodes) == want[name], name
    if all(w[0] == "ok" for w in want.values()):
        together = run_checkers(ops_of(history), {name: c[1]() for name, c in CHECKERS.items()}, nodes)
        assert {name: ("ok", text(r)) for name, r in together.items()} == want


# -- (a) the histories of the checker tests -------------------------------------------------

CHECKER_TESTS = ["tests.test_checkers_lost_write", "tests.test_checkers_phantom",
                 "tests.test_checkers_duplicate", "tests.test_checkers_inconsistent_offsets",
                 "tests.test_checkers_divergence", "tests.test_checkers_election_safety",
                 "tests.test_checkers_nonmonotonic_read", "tests.test_checkers_stats",
                 "tests.test_checkers_log_safety"]


@pytest.mark.parametrize("module", CHECKER_TESTS)
def test_every_checker_test_history_gives_the_reference_results(module, monkeypatch, tmp_path):
    """Run the checker tests with each checker call also compared with the reference,
    on every checker (not just the one the test calls)."""
    seen: dict = {}     # (id of history, id of nodes) -> history, compared once

    def both(fn):
        def call(history, nodes=None, *args, **kw):
            if (id(history), id(nodes)) not in seen:
                assert_same_everywhere(history, nodes)
                seen[id(history), id(nodes)] = history, nodes
            return fn(history, nodes, *args, **kw)
        return call

    mod = importlib.import_module(module)
    for name, (_r, _f, wmod, wname) in CHECKERS.items():
        if hasattr(mod, wname):
            monkeypatch.setattr(mod, wname, both(getattr(mod, wname)))
        if name in log_safety.CHECKERS:
            monkeypatch.setitem(log_safety.CHECKERS, name, both(log_safety.CHECKERS[name]))
    monkeypatch.setattr(log_safety, "check_stats", both(log_safety.check_stats))
    for tname, test in sorted(vars(mod).items()):
        if tname.startswith("test_") and callable(test):
            params = inspect.signature(test).parameters
            d = tmp_path / tname
            d.mkdir()
            test(**({"tmp_path": d} if "tmp_path" in params else {}))
    assert seen


# -- (b) random histories ------------------------------------------------------------------------

ODD_VALUES = [None, "x", True, False, 5.0, 2 ** 70, -3, [1], {"a": 1}, float("nan"), 0]


def random_history(seed: int) -> tuple[list[dict], dict | None]:
    """A history (and sometimes node data) with random, often odd, ops: colliding values,
    malformed and overlapping reads, paged final reads, values of every JSON type."""
    rng = random.Random(seed)
    ops: list[dict] = []
    t = 0
    n_values = rng.choice([3, 8, 30])
    log = [rng.randrange(n_values) if rng.random() < 0.85 else None for _ in range(rng.randrange(1, 25))]

    def value():
        return rng.choice(ODD_VALUES) if rng.random() < 0.08 else rng.randrange(n_values)

    def record(off):
        r = rng.random()
        if r < 0.05:
            return rng.choice([[off, 1], "x", [off, "e", "data", 1], [str(off), 1, "data", 2], None])
        if r < 0.12 or (off < len(log) and log[off] is None):
            return [off, rng.randrange(1, 4), "LeaderChange", {"LeaderId": rng.choice([-1, 0, 1, 2, 3]),
                                                              "Voters": [1, 2, 3]}]
        v = log[off] if off < len(log) and rng.random() < 0.8 else value()
        return [off, rng.randrange(1, 4), "data", v]

    def records(start, end):
        out = [record(o) for o in range(start, end)]
        if out and rng.random() < 0.1:
            out.insert(rng.randrange(len(out)), record(rng.randrange(max(end, 1))))
        if out and rng.random() < 0.05:
            del out[rng.randrange(len(out))]
        return out

    def add(type, process, f, v, **extra):
        nonlocal t
        t += rng.choice([1, 10 ** 6, 3 * 10 ** 8, 2 * 10 ** 9]) if rng.random() > 0.03 else -10 ** 9
        op = {"index": len(ops), "time": t, "type": type, "process": process, "f": f, "value": v}
        if rng.random() < 0.9:
            op["node"] = rng.choice(["n1", "n2", "n3", "x"])
        op.update(extra)
        ops.append(op)
        return op

    def read_value(lin, final, paged=None):
        hw = rng.choice([len(log), len(log), max(0, len(log) - rng.randrange(4)), len(log) + 2])
        if rng.random() < 0.04:
            hw = rng.choice([None, "7", 5.0, float("nan")])
        start = rng.randrange(0, len(log) + 1) if rng.random() < 0.3 else 0
        end = hw if isinstance(hw, int) else len(log)
        v = {"from": start, "linearizable": lin, "final": final, "high_watermark": hw}
        if paged is not None:
            v["to"], start, end = paged[1], paged[0], paged[1]
            v["from"] = start
        v["records"] = records(start, end) if rng.random() > 0.03 else "nope"
        return v

    inflight: dict = {}
    procs = list(range(rng.randrange(1, 6)))
    next_proc = len(procs)
    for _ in range(rng.randrange(5, 120)):
        idle = [p for p in procs if p not in inflight]
        if idle and (rng.random() < 0.55 or not inflight):
            p = rng.choice(idle)
            f = rng.choice(["append"] * 5 + ["read"] * 3 + ["describe-quorum", "cas", "nemesis"])
            if f == "nemesis":
                kind = rng.choice(["partition", "kill"])
                add("invoke", "nemesis", rng.choice(["start-", "stop-"]) + kind, None)
                add("info", "nemesis", ops[-1]["f"], {"targets": ["n1"]})
                continue
            arg = value() if f == "append" else None
            if f == "read":
                arg = {"from": 0, "linearizable": rng.random() < 0.8, "final": rng.random() < 0.2}
            inflight[p] = (add("invoke", p, f, arg), arg)
            continue
        p = rng.choice(list(inflight))
        inv, arg = inflight.pop(p)
        f = inv["f"]
        kind = rng.choices(["ok", "fail", "info"], [0.75, 0.15, 0.1])[0]
        if kind == "ok":
            if f == "append":
                off = rng.randrange(len(log) + 3) if rng.random() > 0.05 else rng.choice([None, "1", 2 ** 70, -1])
                val = arg if rng.random() < 0.9 else value()
                v = {"value": val, "offset": off, "epoch": rng.choice([1, 2, 3, None])}
                if rng.random() < 0.03:
                    v = rng.choice([{"offset": 1}, 7, None])
                if isinstance(off, int) and 0 <= off < len(log) + 1 and rng.random() < 0.5:
                    if off == len(log):
                        log.append(val)
                    else:
                        log[off] = val
            elif f == "read":
                v = read_value(arg["linearizable"], arg["final"])
            elif f == "describe-quorum":
                v = {"LeaderId": rng.choice([-1, 1, 2, 3, "2"]), "LeaderEpoch": rng.choice([1, 2, 3, None])}
            else:
                v = arg
            add("ok", p, f, v)
        else:
            extra = {"error": "cas-mismatch"} if f == "cas" and rng.random() < 0.5 else {"error": "timeout"}
            add(kind, p, f, arg, **extra)
            if kind == "info":
                procs.remove(p)
                procs.append(next_proc)
                next_proc += 1
    final_proc = next_proc
    for _ in range(rng.choice([0, 1, 1, 2])):     # final reads: whole, or in pages
        if rng.random() < 0.5:
            add("invoke", final_proc, "read", {"from": 0, "linearizable": True, "final": True})
            add("ok", final_proc, "read", read_value(True, True))
        else:
            cuts = sorted({0, len(log), *(rng.randrange(len(log) + 1) for _ in range(rng.randrange(3)))})
            hw = len(log) if rng.random() < 0.8 else len(log) + 1
            for a, b in zip(cuts, cuts[1:] or [len(log)]):
                add("invoke", final_proc, "read", {"from": a, "linearizable": True, "final": True})
                v = read_value(True, True, paged=(a, b))
                v["high_watermark"] = hw if rng.random() < 0.9 else hw + 1
                add("ok" if rng.random() < 0.95 else "info", final_proc, "read", v)
    for node in ["n1", "n2", "n3"]:
        if rng.random() < 0.6:
            add("invoke", final_proc, "read", {"from": 0, "linearizable": False, "final": True}, node=node)
            add("ok", final_proc, "read", read_value(False, True), node=node)
    nodes = None
    if rng.random() < 0.5:
        nodes = {}
        for name in rng.sample(["n1", "n2", "n3"], rng.randrange(4)):
            recs = [tuple(r) for r in (record(o) for o in range(rng.randrange(len(log) + 2)))
                    if isinstance(r, list) and len(r) == 4 and isinstance(r[0], int) and isinstance(r[1], int)]
            nodes[name] = NodeData(name, recs, rng.choice([None, len(recs), len(recs) - 1]))
    return ops, nodes


@pytest.mark.parametrize("block", range(8))
def test_random_histories_give_the_reference_results(block):
    for seed in range(block * 100, block * 100 + 100):
        history, nodes = random_history(seed)
        assert_same_everywhere(history, nodes)


@pytest.mark.parametrize("corrupt", ["double-invoke", "orphan-completion", "f-mismatch"])
def test_pairing_errors_are_the_same_history_errors(corrupt):
    history, _ = random_history(7)
    p = 99
    history.append({"index": len(history), "time": 1, "type": "invoke", "process": p, "f": "append",
                    "value": 1})
    bad = {"double-invoke": {"type": "invoke", "f": "read"},
           "orphan-completion": {"type": "ok", "process": p + 1},
           "f-mismatch": {"type": "ok", "f": "read"}}[corrupt]
    history.append({**history[-1], "index": len(history), **bad})
    for name in ("nonmonotonic-read", "stats"):
        r, factory = CHECKERS[name][:2]
        with pytest.raises(HistoryError) as want:
            r(history, None)
        with pytest.raises(HistoryError) as got:
            check_list(factory(), history, None)
        assert str(got.value) == str(want.value) and got.value.op is history[-1]


# -- (c) a synthetic history, streamed from its file ------------------------------------------------

def test_synthetic_history_streamed_from_its_file_gives_the_reference_results(tmp_path):
    run = synth_run(SynthOptions(ops=20_000, seed=5, lost=7, duplicates=6, inconsistent=4, stale_reads=3,
                                 page_size=700), root=tmp_path)
    path = store.history_path(run)
    history = read_history(path)
    names = [n for n in CHECKERS if n != "stats"]
    streamed = check_all_folds(lambda: iter_history(path), names, None, CheckContext(run_dir=run))
    for name in names:
        assert text(streamed["checkers"][name]) == text(CHECKERS[name][0](history, None)), name
    assert text(streamed["stats"]) == text(ref.check_stats(history, None))
    want = read_sidecar(run)["counts"]
    assert {k: streamed["anomaly_counts"][k] for k in want} == want
    assert streamed["valid"] is False and not math.isnan(streamed["stats"]["latency_ms"]["append"]["p99"])
    # without the statistics (the simulator's judge): the same verdict and checkers' results
    bare = check_all_folds(lambda: iter_history(path), names, None, CheckContext(run_dir=run), statistics=False)
    assert bare["stats"] is None and bare["faults"] is None
    assert text(bare["checkers"]) == text(streamed["checkers"]) and bare["valid"] is False
    assert bare["anomaly_counts"] == streamed["anomaly_counts"]


# -- the compact containers ---------------------------------------------------------------------------

def test_record_table_keeps_what_a_dict_keeps():
    from checkers.compact import RecordTable
    rng = random.Random(3)
    table, model, replaced, all_recs = RecordTable(), {}, [], []
    for _ in range(20_000):
        off = rng.choice([rng.randrange(5000), rng.randrange(-50, 0), rng.randrange(10 ** 12), 2 ** 80])
        rec = (off, rng.choice([1, 2, None, 2 ** 70]), rng.choice(["data"] * 5 + ["LeaderChange"]),
               rng.choice([rng.randrange(100)] * 6 + ODD_VALUES))
        prev = table.put(rec)
        assert prev == model.get(off) or text(prev) == text(model.get(off))
        if prev is not None:
            replaced.append(prev)
        model[off] = rec
        all_recs.append(rec)
    assert len(table) == len(model)
    for off in [*model, -51, 10 ** 13, 4999]:
        assert text(table.get(off)) == text(model.get(off))
    wanted = {3, 5.0, True, "x", 2 ** 70, 99}
    where = table.data_offsets_of(wanted)
    for off, _e, t, p in replaced:
        try:
            if t == "data" and p in wanted:
                where.setdefault(p, []).append(off)
        except TypeError:
            pass
    want: dict = {}
    for off, _e, t, p in all_recs:
        if t == "data":
            try:
                want.setdefault(p, []).append(off)
            except TypeError:
                pass
    for w in wanted:
        assert sorted(where.get(w, [])) == sorted(want.get(w, [])), w


def test_record_table_first_or_same():
    from checkers.compact import RecordTable
    t = RecordTable()
    assert t.first_or_same(5, "data", 1) and t.first_or_same(5, "data", 1)
    assert not t.first_or_same(5, "data", 2) and not t.first_or_same(5, "data", True)
    assert not t.first_or_same(5, "LeaderChange", 1) and t.get(5) == (5, 0, "data", 1)
    assert t.first_or_same(2 ** 90, "data", "a") and t.first_or_same(2 ** 90, "data", "a")
    assert not t.first_or_same(2 ** 90, "data", "b")
    lc = {"LeaderId": 1, "Voters": [1, 2]}
    assert t.first_or_same(0, "LeaderChange", lc) and t.first_or_same(0, "LeaderChange", dict(reversed(lc.items())))


def test_int_set_membership():
    from checkers.compact import IntSet
    s = IntSet()
    for x in [5, -3, 5, 2 ** 63 - 1, -2 ** 63, 2 ** 64, 0]:
        s.add(x)
    s.freeze()
    assert [x in s for x in (5, -3, 0, 2 ** 63 - 1, -2 ** 63, 2 ** 64, 1, 2 ** 65)] == [True] * 6 + [False] * 2
    assert s.contains_many([5, 1, -2 ** 63, 7]) == [True, False, True, False]
    empty = IntSet()
    empty.freeze()
    assert 1 not in empty and empty.contains_many([1, 2]) == [False, False]
