"""The Spark path (checkers/spark) gives the single-process checkers' verdicts and
anomalies, on hand-made histories with each anomaly, synthetic histories with
injected ones, and a stored kv run; malformed lines are reported by file and line."""
from __future__ import annotations

import json

import pytest

from checkers.log_safety import check_all
from history import store
from harness.analysis.synth import SynthOptions, read_sidecar, synth_run
from tests.histories.builder import H, clean_run, data, lc
from tests.spark_helpers import analyze_store, sidecar_keys, single_keys, spark_keys

pytestmark = pytest.mark.spark


def write_run(root, name, ops, workload="append"):
    d = root / "hand" / name
    d.mkdir(parents=True)
    (d / store.HISTORY).write_text("".join(json.dumps(op) + "\n" for op in ops))
    store.write_test_json(d, {"workload": workload, "nemesis": ["partition"]}, 1, "hand-made")
    return d


def lost_and_inconsistent():
    h = H()
    h.append(0, 10, offset=1)
    h.append(1, 11, offset=2)              # overwritten below: lost and inconsistent
    h.append(0, 12, offset=3)              # past the final high watermark: lost
    h.read(0, [lc(0, 1, 1), data(1, 1, 10), data(2, 2, 99)], final=True)
    h.append(2, 99, type="info")
    return h.ops


def duplicates_and_phantoms():
    h = H()
    h.append(0, 10, offset=1)
    h.append(0, 11, type="fail")
    h.read(1, [lc(0, 1, 1), data(1, 1, 10), data(2, 1, 10)])              # duplicate in a read
    h.read(1, [lc(0, 1, 1), data(1, 1, 10), data(2, 1, 10), data(3, 1, 11), data(4, 1, 555)],
           final=True)                                                     # same dup, two phantoms
    return h.ops


def nonmonotonic_and_malformed():
    h = H()
    h.append(0, 10, offset=1)
    h.append(0, 11, offset=2)
    h.read(1, [lc(0, 1, 1), data(1, 1, 10)])                   # hw 2 < 3 seen before: stale
    h.read(1, [lc(0, 1, 1), data(2, 1, 11)], hw=3)             # skips offset 1: malformed
    h.read(1, [lc(0, 1, 1), data(1, 1, 10), data(2, 1, 11)], final=True)
    return h.ops


def two_leaders():
    h = H()
    h.dq(0, "n1", 1, 3)
    h.dq(0, "n2", 2, 3)                                       # epoch 3: leaders 1 and 2
    h.append(0, 10, offset=1)
    h.read(0, [lc(0, 1, 1), data(1, 1, 10)], final=True)
    return h.ops


def paged_final_read_with_lost_tail():
    h = H()
    log = [lc(0, 1, 1)] + [data(i, 1, 100 + i) for i in range(1, 10)]
    for i in range(1, 10):
        h.append(i % 3, 100 + i, offset=i)
    h.append(0, 110, offset=10)                               # acknowledged, then lost
    for start, to in ((0, 4), (4, 8), (8, 10)):
        inv = h.invoke(5, "read", {"from": start, "linearizable": True, "final": True}, node="n1")
        h.complete(inv, "ok", {"from": start, "linearizable": True, "final": True,
                               "high_watermark": 10, "to": to, "records": log[start:to]})
    return h.ops


HAND = {
    "clean": lambda: clean_run(30)[0].ops,
    "clean window+kill": lambda: clean_run(40, read_window=3)[0].ops,
    "lost": lost_and_inconsistent,
    "dup-phantom": duplicates_and_phantoms,
    "nonmonotonic": nonmonotonic_and_malformed,
    "two-leaders": two_leaders,
    "paged": paged_final_read_with_lost_tail,
}


@pytest.fixture(scope="module")
def analysed(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("store")
    histories = {}
    for name, make in HAND.items():
        histories[name] = make()
        write_run(root, name, histories[name])
    synth = synth_run(SynthOptions(ops=30_000, seed=11, lost=4, duplicates=6, inconsistent=3,
                                   stale_reads=2, page_size=700), root)
    bad = write_run(root, "garbage", clean_run(10)[0].ops)
    lines = (bad / store.HISTORY).read_text().splitlines()
    lines.insert(3, "{not json")
    lines[7] = lines[7][:25]                                   # truncated op
    lines.insert(12, '{"index": 12, "time": 5, "type": "finished", "process": 0, "f": "read"}')
    (bad / store.HISTORY).write_text("\n".join(lines) + "\n")
    by_name, analysis = analyze_store(spark, root)
    return root, histories, synth, by_name, analysis


@pytest.mark.parametrize("name", sorted(HAND))
def test_same_anomalies_and_verdict_as_the_single_process_checkers(analysed, name):
    _, histories, _, by_name, analysis = analysed
    r = by_name[f"hand/{name}"]
    single = check_all(histories[name], None)
    assert spark_keys(analysis, r["run_id"]) == single_keys(single["checkers"])
    want = {True: "valid", False: "invalid"}.get(single["valid"], "unknown")
    assert r["verdict"] == want
    for checker, result in single["checkers"].items():
        assert r["checkers"][checker] == {True: "valid", False: "invalid"}.get(result["valid"], "unknown"), checker


def test_hand_made_anomalies_are_the_ones_built(analysed):
    _, _, _, by_name, analysis = analysed
    assert spark_keys(analysis, by_name["hand/clean"]["run_id"]) == {k: set() for k in
                                                                     spark_keys(analysis, -1)}
    lost = spark_keys(analysis, by_name["hand/lost"]["run_id"])
    assert {(v, o) for _, v, o in lost["lost-write"]} == {(11, 2), (12, 3)}
    assert lost["inconsistent-offsets"] == {2}
    dup = spark_keys(analysis, by_name["hand/dup-phantom"]["run_id"])
    assert dup["duplicate"] == {(10, (1, 2))}
    assert dup["phantom"] == {(11, "append-failed"), (555, "never-attempted")}
    paged = spark_keys(analysis, by_name["hand/paged"]["run_id"])
    assert {v for _, v, _ in paged["lost-write"]} == {110}
    assert len(paged["nonmonotonic-read"]) == 1               # three pages, one read
    assert spark_keys(analysis, by_name["hand/two-leaders"]["run_id"])["election-safety"] == {3}


def test_synthetic_run_reports_exactly_the_injected_anomalies(analysed):
    root, _, synth, by_name, analysis = analysed
    name = str(synth.relative_to(root))
    r = by_name[name]
    side = read_sidecar(synth)
    keys = spark_keys(analysis, r["run_id"])
    assert keys == sidecar_keys(side)
    assert {k: r["anomalies"][k] for k in side["counts"]} == side["counts"]
    assert r["verdict"] == side["expected_verdict"] == "invalid"
    from history import read_history
    single = check_all(read_history(synth / store.HISTORY), None)
    assert single_keys(single["checkers"]) == keys
    assert r["checkers"]["divergence"] == "unknown"           # no node data in a synthetic run


def test_malformed_lines_are_reported_by_file_and_line_and_the_run_is_kept(analysed):
    root, _, _, by_name, _ = analysed
    r = by_name["hand/garbage"]
    assert r["verdict"] == "unknown"
    path = str((root / "hand" / "garbage" / store.HISTORY).resolve())
    got = [(m["file"], m["line"]) for m in r["malformed"]]
    assert got == [(path, 4), (path, 8), (path, 13)]
    assert "invalid JSON" in r["malformed"][0]["reason"]
    assert "'type' must be one of" in r["malformed"][2]["reason"]
    assert "malformed line" in r["error"]
    # the other runs were analysed all the same
    assert by_name["hand/clean"]["verdict"] == "unknown"       # no node data: divergence unknown
    assert by_name["hand/clean"]["checkers"]["lost-write"] == "valid"


def test_stats_count_ops_and_latency(analysed):
    _, histories, _, by_name, _ = analysed
    st = by_name["hand/clean"]["stats"]
    ops = histories["clean"]
    assert st["ops"] == len(ops)
    # ok, fail and info count appends, as `check` prints them (its stats' counts["append"])
    from checkers.stats import check_stats
    appends = check_stats(ops)["counts"]["append"]
    assert (st["ok"], st["fail"], st["info"]) == (appends["ok"], appends["fail"], appends["info"])
    assert st["ok"] < sum(1 for o in ops if o["type"] == "ok" and o["process"] != "nemesis")   # reads left out
    assert st["unpaired"] == 0
    assert st["latency_p50_ms"] == pytest.approx(1.0)           # the builder's ops take 1 ms
    assert st["nemesis_fs"] == ["partition"]


@pytest.mark.parametrize("broadcast_reads", [True, False])
def test_prefix_before_each_read_equals_a_running_max(spark, monkeypatch, broadcast_reads):
    """The nonmonotonic-read prefix (bucket, sub-bucket and in-sub-bucket maxima) equals a
    plain running max, with buckets small enough that every term is exercised; and the
    earlier op named is the first that showed that prefix."""
    import random

    from checkers.spark import nonmonotonic_read as nm

    monkeypatch.setattr(nm, "BUCKET", 16)
    monkeypatch.setattr(nm, "SUB_BUCKET", 4)
    rng = random.Random(5)
    at = rng.sample(range(400), 220)
    obs = [(run, i, i // 3 + rng.randrange(10)) for run in (0, 1) for i in at[:150] if rng.random() < 0.7]
    reads = [(run, i, 10_000 + i) for run in (0, 1) for i in at[150:]]
    reads += [(run, min(a for r, a, _ in obs if r == run), 20_000 + run) for run in (0, 1)]   # nothing before
    obs_df = spark.createDataFrame(obs, "run int, at long, prefix long")
    reads_df = spark.createDataFrame(reads, "run int, at long, read long")
    got = {(r["run"], r["index"]): r["best"] for r in nm._prefix_before(obs_df, reads_df, broadcast_reads).collect()}
    want, first = {}, {}
    for run, i, read in reads:
        before = [(p, a) for r, a, p in obs if r == run and a < i]
        want[(run, read)] = best = max(p for p, _ in before) if before else None
        if before:
            first[(run, read)] = min(a for p, a in before if p == best)
    assert got == want
    found = spark.createDataFrame([(run, read, i, want[(run, read)]) for run, i, read in reads if want[(run, read)]],
                                  "run int, op long, invoke long, earlier_high_watermark long")
    assert {(r["run"], r["op"]): r["earlier_op"] for r in nm._earliest(obs_df, found, broadcast_reads).collect()} == first
    assert any(v is None for v in want.values()) and sum(v is not None for v in want.values()) > 50
