"""kraft-chaos synth (harness/analysis/synth.py): exact op counts, a well-formed history, the
injected anomalies found by the single-process checkers, determinism, bad options."""
from __future__ import annotations

import datetime as dt

import pytest

from checkers.log_safety import check_all
from harness.cli.main import main
from history import read_history
from harness.analysis.synth import SynthOptions, read_sidecar, synth_run
from tests.spark_helpers import sidecar_keys, single_keys


@pytest.mark.parametrize("ops,page", [(100, 50_000), (5_001, 64), (40_000, 1_000)])
def test_history_has_exactly_the_ops_asked_for_and_is_well_formed(tmp_path, ops, page):
    d = synth_run(SynthOptions(ops=ops, seed=3, page_size=page), tmp_path)
    history = read_history(d / "history.jsonl")         # raises on any malformed line
    assert len(history) == ops
    r = check_all(history, None)
    assert all(n == 0 for n in r["anomaly_counts"].values()), r["anomaly_counts"]
    assert r["valid"] == "unknown"                        # no node data: divergence unknown
    assert read_sidecar(d)["expected_verdict"] == "unknown"


def test_injected_anomalies_are_exactly_what_the_checkers_find(tmp_path):
    d = synth_run(SynthOptions(ops=60_000, seed=9, lost=7, duplicates=9, inconsistent=4, stale_reads=3,
                               page_size=2_000), tmp_path)
    side = read_sidecar(d)
    assert side["counts"] == {"lost-write": 7, "duplicate": 9, "inconsistent-offsets": 4,
                              "nonmonotonic-read": 4}          # 3 stale reads + the final read
    r = check_all(read_history(d / "history.jsonl"), None)
    assert single_keys(r["checkers"]) == sidecar_keys(side)
    assert r["valid"] is False
    assert r["checkers"]["lost-write"]["final_pages"] > 1


def test_same_seed_same_history_and_date_stamps_the_run(tmp_path):
    opts = SynthOptions(ops=3_000, seed=4, lost=1, date=dt.date(2026, 3, 1))
    a, b = synth_run(opts, tmp_path / "a"), synth_run(opts, tmp_path / "b")
    assert (a / "history.jsonl").read_bytes() == (b / "history.jsonl").read_bytes()
    assert a.name.startswith("20260301T")
    c = synth_run(SynthOptions(ops=3_000, seed=5), tmp_path / "c")
    assert (c / "history.jsonl").read_bytes() != (a / "history.jsonl").read_bytes()


def test_bad_options_exit_3_naming_the_option(tmp_path, capsys):
    assert main(["synth", "--ops", "50", "--seed", "1", "--store", str(tmp_path)]) == 3
    assert "--ops must be >= 100" in capsys.readouterr().err
    assert main(["synth", "--ops", "200", "--seed", "1", "--lost", "500", "--store", str(tmp_path)]) == 3
    assert "too small for 500 lost writes" in capsys.readouterr().err
    assert main(["synth", "--ops", "1000", "--seed", "1", "--date", "2026-13-01"]) == 3
    assert "--date must be YYYY-MM-DD" in capsys.readouterr().err
    assert main(["synth", "--ops", "1000", "--seed", "1", "--lost", "-2"]) == 3
