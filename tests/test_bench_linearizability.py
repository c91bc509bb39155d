"""The linearizability bench's plumbing: porcupine's output parsed, verdicts compared, no-Go fallback.

No timing is asserted here (``make bench`` prints the times).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.bench import linearizability as bench
from harness.bench.linearizability import Corpus, Timing


def go_output(corpora: list[dict]) -> str:
    return json.dumps({"porcupine": "v1.3.1", "go": "go1.26.8", "corpora": corpora})


def test_parse_go_output():
    text = go_output([{"name": "c01-ok, by key", "check_s": 1.25e-4, "iterations": [2000],
                       "verdicts": [True]},
                      {"name": "etcd (2 logs)", "check_s": 0.5, "iterations": [3, 4],
                       "verdicts": [False, True]}])
    timings, version = bench.parse_go_output(text)
    assert version == "v1.3.1"
    assert timings["c01-ok, by key"] == Timing(1.25e-4, [True])
    assert timings["etcd (2 logs)"].verdicts == [False, True]


@pytest.mark.parametrize("text", ["", "not json", '{"corpora": [{"name": "x"}]}', "[]"])
def test_unreadable_go_output_is_a_value_error(text):
    with pytest.raises(ValueError, match="unreadable porcupine-bench output"):
        bench.parse_go_output(text)


def test_verdicts_compared_per_file():
    c = Corpus("etcd (2 logs)", "jepsen-log", "register", True, [Path("a.log"), Path("b.log")], "register")
    assert bench.mismatches(c, Timing(1.0, [False, True]), Timing(2.0, [False, True])) == []
    assert bench.mismatches(c, Timing(1.0, [False, True]), None) == []
    (m,) = bench.mismatches(c, Timing(1.0, [False, True]), Timing(2.0, [True, True]))
    assert m == "etcd (2 logs): a.log: ours False, porcupine True"
    (m,) = bench.mismatches(c, Timing(1.0, [False, "unknown"]), Timing(2.0, [False, True]))
    assert "b.log: ours unknown, porcupine True" in m
    assert "2 verdicts here, 1 from porcupine" in bench.mismatches(c, Timing(1.0, [1, 1]),
                                                                   Timing(1.0, [True]))[0]


def test_table_ratio_and_missing_column():
    table = bench.format_table([("c01-ok, by key", Timing(0.0001, [True]), Timing(0.0002, [True])),
                                ("our kv, 9 ops", Timing(0.001, [True]), None)], "porcupine v1.3.1")
    lines = table.splitlines()
    assert "2.00x" in lines[1] and "0.100" in lines[1] and "0.200" in lines[1]
    assert lines[2].split()[5:7] == ["-", "-"]


def test_go_spec_names_the_files_and_models():
    rows = bench.corpora(Path("/nonexistent"))  # no etcd logs there: an empty etcd row
    spec = bench.go_spec(rows)
    by_name = {s["name"]: s for s in spec}
    assert by_name["c10-ok, no partitioning"]["model"] == "kv-whole"
    assert by_name["c01-bad, by key"]["model"] == "kv"
    assert by_name["c01-bad, by key"]["files"] == ["/nonexistent/kv/c01-bad.txt"]
    assert by_name["etcd (0 logs)"]["model"] == "register"


def test_without_go_the_column_is_skipped(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no go here
    monkeypatch.delenv("GO", raising=False)
    exe, why = bench.build_porcupine(cache=tmp_path / "cache")
    assert exe is None and "go is not installed" in why
    ours, theirs, note = bench.time_both([])
    assert ours == theirs == {} and "go is not installed" in note


def test_a_failing_porcupine_bench_is_a_runtime_error(tmp_path):
    exe = tmp_path / "porcupine-bench"
    exe.write_text("#!/bin/sh\necho 'panic: boom' >&2\nexit 2\n")
    exe.chmod(0o755)
    with pytest.raises(RuntimeError, match="porcupine-bench failed: panic: boom"):
        bench.run_porcupine(exe, [])
    exe.write_text("#!/bin/sh\necho 'not json'\n")
    with pytest.raises(RuntimeError, match="unreadable porcupine-bench output"):
        bench.run_porcupine(exe, [])


def test_a_failing_build_gives_the_reason(monkeypatch, tmp_path):
    fake_go = tmp_path / "go"
    fake_go.write_text("#!/bin/sh\necho 'dial tcp: lookup proxy.golang.org: no such host' >&2\nexit 1\n")
    fake_go.chmod(0o755)
    monkeypatch.setenv("GO", str(fake_go))
    exe, why = bench.build_porcupine(cache=tmp_path / "cache")
    assert exe is None and why == "go build failed: dial tcp: lookup proxy.golang.org: no such host"


@pytest.mark.skipif(not (bench.DATA / "kv" / "c01-ok.txt").is_file(), reason="no porcupine test data")
def test_bench_runs_without_go(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("GO", raising=False)
    monkeypatch.setattr(bench, "MIN_TIME_S", 0.0)
    assert bench.main(["--no-cluster", "--only", "c01-ok"]) == 0
    out = capsys.readouterr().out
    assert out.count("go is not installed") == 1
    (row,) = [ln for ln in out.splitlines() if ln.startswith("c01-ok, by key")]
    assert row.split()[4:6] == ["-", "-"] and row.split()[6] == "True"
