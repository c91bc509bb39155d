"""checkers/spark/cache.py without Spark: an entry round-trips; a changed history or code
makes it stale; a damaged one is reported and never used."""
from __future__ import annotations

import os

import pyarrow as pa

from checkers.spark.cache import RunCache, named_tables, run_tables
from checkers.spark.runs import RunInfo

RECORD = {"name": "t/1", "verdict": "invalid", "anomalies": {"lost-write": 2}, "malformed": [], "stats": {"ok": 3}}


def _run(tmp_path):
    d = tmp_path / "store" / "t" / "1"
    d.mkdir(parents=True)
    (d / "history.jsonl").write_text('{"index": 0}\n')
    return RunInfo(0, "t/1", d, d / "history.jsonl")


def _tables():
    lost = pa.table({"run": pa.array([0, 0, 1], pa.int32()), "op": [4, 6, 9], "value": ["2", "3", "7"]})
    dup = pa.table({"run": pa.array([1], pa.int32()), "value": ["5"], "offsets": [[1, 2]]})
    return {"lost-write": lost, "duplicate": dup}


def test_entry_round_trip_stale_and_corrupt(tmp_path):
    run = _run(tmp_path)
    cache = RunCache(tmp_path / "cache", 60.0, code="c1")
    assert cache.load(run) is None and cache.stats["missing"] == 1
    mine = run_tables(_tables(), 0)
    assert mine["lost-write"].column_names == ["op", "value"] and mine["duplicate"].num_rows == 0
    assert cache.store(run, RECORD, mine)
    e = cache.load(run)
    assert e.record == RECORD and e.tables["lost-write"].to_pylist() == [{"op": 4, "value": "2"},
                                                                          {"op": 6, "value": "3"}]
    assert e.tables["duplicate"].num_rows == 0 and e.tables["duplicate"].schema == mine["duplicate"].schema
    assert not (cache.entry_dir(run) / "duplicate.parquet").exists()      # empty tables: schema only
    # another timeout or code, or a history that changed: stale
    assert RunCache(tmp_path / "cache", 30.0, code="c1").load(run) is None
    assert RunCache(tmp_path / "cache", 60.0, code="c2").load(run) is None
    st = run.history.stat()
    os.utime(run.history, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert cache.load(run) is None and cache.stats["stale"] == 1
    assert cache.store(run, RECORD, mine) and cache.load(run) is not None
    # damaged: a Parquet file cut short, a missing one, a garbled manifest
    f = cache.entry_dir(run) / "lost-write.parquet"
    good = f.read_bytes()
    f.write_bytes(good[:40])
    assert cache.load(run) is None and cache.stats["corrupt"] == 1
    f.unlink()
    assert cache.load(run) is None and cache.stats["corrupt"] == 2
    f.write_bytes(good)
    assert cache.load(run) is not None
    (cache.entry_dir(run) / "manifest.json").write_text("{")
    assert cache.load(run) is None and cache.stats["corrupt"] == 3


def test_named_tables_put_the_store_path_first():
    t = _tables()
    merged = named_tables([("a/x", run_tables(t, 0)), ("b/y", run_tables(t, 1))])
    assert merged["lost-write"].column_names == ["run", "op", "value"]
    assert merged["lost-write"].column("run").to_pylist() == ["a/x", "a/x", "b/y"]
    assert merged["duplicate"].to_pylist() == [{"run": "b/y", "value": "5", "offsets": [1, 2]}]
