"""harness/bench/analyze.py: the store it builds from real runs, and (slow) the whole bench
at a tiny N printing every figure it promises."""
from __future__ import annotations

import json
import os

import pytest

from harness.bench import analyze as B
from history import store
from tests.test_cli import write_store


def _real_store(root):
    run = write_store(root)                       # append-none/<stamp>, with nodes/ and test.json
    (run / "results.json").write_text("{}")
    synth = store.create_run_dir(root, "synth-append", "20250101T000000.000Z")
    (synth / "history.jsonl").write_text("")
    return run


def test_replicate_links_histories_and_node_data_under_new_stamps(tmp_path):
    src = _real_store(tmp_path / "src")
    unfinished = store.create_run_dir(tmp_path / "src", "append-none", "20250102T000000.000Z")
    (unfinished / "history.jsonl").write_text("")
    assert B.real_runs(tmp_path / "src") == [src]          # no synth, no run without results.json
    runs = B.replicate([src], tmp_path / "dst", 25)
    assert [r.relative_to(tmp_path / "dst").as_posix() for r in runs[:2]] == [
        "append-none/20260101T000000.000Z", "append-none/20260101T000100.000Z"]
    assert runs[20].name == "20260102T000000.000Z"             # 20 runs a day
    for r in (runs[0], runs[24]):
        assert os.path.samefile(r / "history.jsonl", src / "history.jsonl")
        assert json.loads((r / "test.json").read_text()) == json.loads((src / "test.json").read_text())
        assert sorted(p.relative_to(r) for p in (r / "nodes").rglob("*") if p.is_file()) == \
               sorted(p.relative_to(src) for p in (src / "nodes").rglob("*") if p.is_file())
        assert not (r / "results.json").exists()
    with pytest.raises(ValueError):
        B.replicate([], tmp_path / "none", 1)


@pytest.mark.slow
@pytest.mark.spark
def test_bench_prints_every_figure_side_by_side(tmp_path, capsys):
    _real_store(tmp_path / "src")
    assert B.main(["--runs", "2", "--master", "local[2]", "--source", str(tmp_path / "src")]) == 0
    out = capsys.readouterr().out
    assert "store: 2 runs replicated (hard links) from the 1 real runs in" in out
    assert "fixed cost: analyze of a 1-run store" in out and "(exit 0); again, from its cache" in out
    assert "full analysis, 2 runs, 40 ops:" in out and "(exit 0;" in out
    assert "after one new run:" in out and "2 run(s) from the cache, 1 read)" in out
    assert "check on each run in turn:" in out and "ratio check-in-turn / full analysis:" in out
    assert "verdicts: analyze and check agree on 2 of 2 runs" in out
