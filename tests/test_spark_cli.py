"""``kraft-chaos analyze`` and ``export`` as a user runs them: outputs, exit codes, bad input."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from harness.cli.main import main
from harness.analysis.synth import SynthOptions, synth_run

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def synth_store(tmp_path_factory):
    root = tmp_path_factory.mktemp("store")
    import datetime as dt
    synth_run(SynthOptions(ops=4_000, seed=1, lost=2, date=dt.date(2026, 10, 1)), root)
    synth_run(SynthOptions(ops=4_000, seed=2, date=dt.date(2026, 10, 2)), root)
    return root


def test_analyze_writes_summary_plots_and_exits_with_the_worst_verdict(spark, synth_store, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["analyze", str(synth_store), "--master", "local[2]", "--out", str(out)]) == 1
    text = capsys.readouterr().out
    assert "2 run(s): 0 valid, 1 invalid, 1 unknown" in text
    for name in ("runs.parquet", "runs.csv", "anomaly-types.parquet", "anomaly-types.csv", "index.html",
                 "anomalies-per-day.png", "availability-per-day.png", "latency-by-nemesis.png",
                 "analysis.json"):
        assert (out / name).is_file(), name
    runs = pd.read_parquet(out / "runs.parquet")
    assert list(runs["date"]) == ["2026-10-01", "2026-10-02"]
    assert list(runs["verdict"]) == ["invalid", "unknown"]
    assert list(runs["lost_write"]) == [2, 0] and list(runs["ops"]) == [4_000, 4_000]
    assert list(runs["seed"]) == [1, 2] and set(runs["nemesis"]) == {"partition+kill+pause"}
    assert runs["latency_p50_ms"].notna().all() and runs["availability"].between(0, 1).all()
    csv = pd.read_csv(out / "runs.csv")
    assert list(csv["verdict"]) == list(runs["verdict"])
    types = pd.read_csv(out / "anomaly-types.csv").set_index("anomaly")
    assert types.loc["lost-write", "runs"] == 1 and types.loc["lost-write", "total"] == 2
    lost = pd.read_parquet(out / "anomalies" / "lost-write")
    assert len(lost) == 2
    rec = json.loads((out / "analysis.json").read_text())
    assert {r["verdict"] for r in rec["runs"]} == {"invalid", "unknown"}


def test_a_history_glob_is_analysed_too(spark, synth_store, tmp_path, capsys):
    pattern = str(synth_store / "synth-append" / "*" / "history.jsonl")
    assert main(["analyze", pattern, "--master", "local[2]", "--out", str(tmp_path), "--no-cache"]) == 1
    assert "2 run(s)" in capsys.readouterr().out


def test_bad_input_exits_3_naming_it(tmp_path, capsys):
    assert main(["analyze", str(tmp_path / "nowhere"), "--out", str(tmp_path)]) == 3
    assert "nowhere: no runs" in capsys.readouterr().err
    assert main(["analyze", str(tmp_path), "--master", "local[two]"]) == 3
    assert "bad --master 'local[two]'" in capsys.readouterr().err


def test_export_parquet_keeps_every_line(spark, synth_store, tmp_path, capsys):
    run = next((synth_store / "synth-append").iterdir())
    bad = tmp_path / "bad" / "run1"
    bad.mkdir(parents=True)
    lines = (run / "history.jsonl").read_text().splitlines()[:100]
    lines[10] = "garbage"
    (bad / "history.jsonl").write_text("\n".join(lines) + "\n")
    out = tmp_path / "pq"
    assert main(["export", "--parquet", str(tmp_path / "bad"), "--out", str(out), "--master", "local[2]"]) == 0
    assert "exported 100 ops" in capsys.readouterr().out
    df = pd.read_parquet(out)
    assert len(df) == 100 and df["_corrupt"].notna().sum() == 1
    assert df["index"].dropna().astype(int).max() == 99
