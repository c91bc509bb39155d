"""``kraft-chaos analyze`` on small hand-made stores: exit codes, anomaly tables named by
store path, the divergence table, ``ok`` as ``check`` counts it, and the per-run cache
(only new or changed runs are read again; a corrupt entry is rebuilt)."""
from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from checkers.spark import analyze as A
from harness.cli.main import main
from tests.test_cli import write_node_log, write_store

pytestmark = pytest.mark.spark

STAMP = "append-none/20250101T000000.000Z"


def make_run(root, name, lose=None, truncate=False, diverge=False):
    """``root/name/<STAMP>``: write_store's run; ``diverge``: node n3's log holds another value
    at offset 2 (n1 and n2 agree), so n3 diverges from both."""
    run = write_store(root / name, lose=lose, truncate=truncate)
    (root / name / "latest").unlink()
    if diverge:
        shutil.rmtree(run / "nodes" / "n3" / "data")
        lc = [0, 1, "LeaderChange", {"LeaderId": 1, "Voters": [1, 2, 3], "GrantingVoters": [1, 2]}]
        write_node_log(run / "nodes" / "n3" / "data", [lc] + [[v + 1, 1, "data", 99 if v == 1 else v]
                                                             for v in range(5)])
    return run


@pytest.fixture
def analysed(monkeypatch):
    """The names of the runs each analyze() call was given. The code fingerprint is pinned:
    others editing the analysis code while this runs must not make the entries stale."""
    from checkers.spark import cache
    monkeypatch.setattr(cache, "code_fingerprint", lambda: "pinned")
    calls = []
    real = A.analyze

    def spy(spark, runs, **kw):
        calls.append(sorted(r.name for r in runs))
        return real(spark, runs, **kw)
    monkeypatch.setattr(A, "analyze", spy)
    return calls


def analyze(root, out, *extra):
    code = main(["analyze", str(root), "--master", "local[2]", "--out", str(out), *extra])
    return code, json.loads((out / "analysis.json").read_text())


def test_tables_by_store_path_divergence_detail_and_ok_counts(spark, tmp_path, capsys):
    root = tmp_path / "store"
    make_run(root, "a", lose=3, diverge=True)
    make_run(root, "b")
    code, rec = analyze(root, tmp_path / "out", "--no-cache")
    assert code == 1
    out = tmp_path / "out"
    lost = pd.read_parquet(out / "anomalies" / "lost-write")
    assert list(lost["run"]) == [f"a/{STAMP}"] and list(lost["value"]) == ["2"] and list(lost["offset"]) == [3]
    div = pd.read_parquet(out / "anomalies" / "divergence").sort_values("node_a")
    assert list(div["run"]) == [f"a/{STAMP}"] * 2
    assert list(zip(div["node_a"], div["node_b"])) == [("n1", "n3"), ("n2", "n3")]
    assert list(div["offset"]) == [2, 2] and list(div["count"]) == [1, 1] and list(div["limit"]) == [6, 6]
    assert json.loads(div["record_a"].iloc[0]) == [2, 1, "data", 1]
    assert json.loads(div["record_b"].iloc[0]) == [2, 1, "data", 99]
    runs = pd.read_csv(out / "runs.csv").set_index("run")
    # check counts the 5 ok appends; the 4 ok reads and the ok describe-quorum are not among them
    assert runs.loc[f"a/{STAMP}", "ok"] == 5 and runs.loc[f"b/{STAMP}", "ok"] == 5
    assert runs.loc[f"a/{STAMP}", "divergence"] == 2 and runs.loc[f"b/{STAMP}", "verdict"] == "valid"
    assert rec["cache"] == {"analysed": 2}


def test_malformed_history_exits_3_unless_a_run_is_invalid(spark, tmp_path, capsys):
    root = tmp_path / "store"
    make_run(root, "b")
    make_run(root, "c", truncate=True)
    code, rec = analyze(root, tmp_path / "out", "--no-cache")
    assert code == 3
    err = capsys.readouterr().err
    assert f"bad input: 1 run(s) whose history is not a well-formed history, first c/{STAMP}" in err
    assert {r["name"]: r["verdict"] for r in rec["runs"]} == {f"b/{STAMP}": "valid", f"c/{STAMP}": "unknown"}
    make_run(root, "a", lose=3)
    code, _ = analyze(root, tmp_path / "out2", "--no-cache")
    assert code == 1        # an invalid run is the stronger news


def test_cache_reads_only_new_or_changed_runs_and_rebuilds_a_corrupt_entry(spark, tmp_path, analysed, capsys):
    root = tmp_path / "store"
    make_run(root, "a", lose=3, diverge=True)
    make_run(root, "b")
    code, first = analyze(root, tmp_path / "o1")
    assert code == 1 and analysed == [[f"a/{STAMP}", f"b/{STAMP}"]]
    assert first["cache"]["written"] == 2 and (root / "analysis" / "cache").is_dir()

    def same_as_first(rec):
        keep = ("name", "verdict", "checkers", "anomalies", "stats", "malformed", "error")
        assert [{k: r[k] for k in keep} for r in rec["runs"] if r["name"] != f"d/{STAMP}"] == \
               [{k: r[k] for k in keep} for r in first["runs"]]

    # nothing new: no run is read, no Spark job; the same results and tables
    code, rec = analyze(root, tmp_path / "o2")
    assert code == 1 and len(analysed) == 1 and rec["cache"]["hit"] == 2 and rec["seconds"]["spark_start"] == 0
    same_as_first(rec)
    for t in ("lost-write", "divergence"):
        pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "o1" / "anomalies" / t),
                                      pd.read_parquet(tmp_path / "o2" / "anomalies" / t))

    # one new run: only it is read
    make_run(root, "d")
    code, rec = analyze(root, tmp_path / "o3")
    assert analysed[-1] == [f"d/{STAMP}"] and rec["cache"]["missing"] == 1 and rec["cache"]["hit"] == 2
    same_as_first(rec)

    # a changed history (size and mtime) makes the entry stale: b is read again, and now is unknown
    hist = root / "b" / STAMP / "history.jsonl"
    hist.write_text(hist.read_text() + "not json\n")
    code, rec = analyze(root, tmp_path / "o4")
    assert code == 1 and analysed[-1] == [f"b/{STAMP}"] and rec["cache"]["stale"] == 1
    assert {r["name"]: r["verdict"] for r in rec["runs"]}[f"b/{STAMP}"] == "unknown"

    # a damaged entry is never trusted: a's Parquet file cut short, then its manifest garbled
    from checkers.spark.cache import RunCache
    from checkers.spark.runs import find_runs
    from harness.run.check import run_target
    run_a = next(r for r in find_runs(str(root), run_target) if r.name == f"a/{STAMP}")
    entry = RunCache(root / "analysis" / "cache", 60.0).entry_dir(run_a)
    pq_file = entry / "lost-write.parquet"
    pq_file.write_bytes(pq_file.read_bytes()[:50])
    code, rec = analyze(root, tmp_path / "o5")
    assert analysed[-1] == [f"a/{STAMP}"] and rec["cache"]["corrupt"] == 1
    (entry / "manifest.json").write_text('{"format": 1, "name"')
    code, rec = analyze(root, tmp_path / "o6")
    assert analysed[-1] == [f"a/{STAMP}"] and rec["cache"]["corrupt"] == 1
    a = {r["name"]: r for r in rec["runs"]}[f"a/{STAMP}"]
    assert a["verdict"] == "invalid" and a["anomalies"]["lost-write"] == 1 and a["anomalies"]["divergence"] == 2
    code, rec = analyze(root, tmp_path / "o7")            # rebuilt: used again
    assert len(analysed) == 5 and rec["cache"]["hit"] == 3
    assert list(pd.read_parquet(tmp_path / "o7" / "anomalies" / "lost-write")["run"]) == [f"a/{STAMP}"]
