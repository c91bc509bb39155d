"""``kraft-chaos check RUN_DIR --out DIR``: the reports go to DIR and the run is only read."""
from __future__ import annotations

import json

from harness.cli import main as cli
from tests.test_cli import write_store


def test_check_run_dir_writes_into_out_and_leaves_the_run_alone(tmp_path, capsys):
    run = write_store(tmp_path / "store", lose=3)
    before = sorted(p.relative_to(run) for p in run.rglob("*"))
    out = tmp_path / "elsewhere" / "check"
    assert cli.main(["check", str(run), "--out", str(out)]) == 1
    text = capsys.readouterr().out
    assert f"results: {out / 'results.json'}" in text and "lost-write: 1" in text
    results = json.loads((out / "results.json").read_text())
    assert results["valid"] is False and results["anomalies"]["lost-write"] == 1
    assert (out / "latency-raw.png").is_file() and (out / "rate.png").is_file()
    assert sorted(p.relative_to(run) for p in run.rglob("*")) == before      # nothing written there
    assert not (run / "results.json").exists()


def test_check_run_dir_out_that_cannot_be_made_exits_3(tmp_path, capsys):
    run = write_store(tmp_path / "store")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert cli.main(["check", str(run), "--out", str(blocker / "sub")]) == 3
    assert "file/sub" in capsys.readouterr().err
