"""``kraft-chaos check`` of history files and several inputs (harness/cli/check_file.py,
harness/cli/check.py): a file's results go under the store (never beside the file) and the
output says where; several files and run directories are checked in one process, each in its
own output folder, with a line per input and the worst verdict as the exit code."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.cli import main as cli
from harness.cli.check import worst_exit
from tests.test_cli import write_store

STALE = Path(__file__).parent.parent / "docs" / "stale-read-history.jsonl"


def _ops(*pairs) -> str:
    """A history.jsonl of register ops: ``pairs`` of (f, value, returned value)."""
    lines, t = [], 0
    for i, (f, value) in enumerate(pairs):
        for typ in ("invoke", "ok"):
            lines.append({"index": len(lines), "time": t, "type": typ, "process": 0, "f": f,
                          "value": ["x", value] if f == "write" or typ == "ok" else ["x", None]})
            t += 1_000_000
    return "".join(json.dumps(op) + "\n" for op in lines)


@pytest.fixture
def inputs(tmp_path):
    """A folder of history files: good.jsonl (linearizable), stale.jsonl (not), broken.jsonl."""
    d = tmp_path / "incoming"
    d.mkdir()
    (d / "good.jsonl").write_text(_ops(("write", 1), ("read", 1)))
    shutil.copy(STALE, d / "stale.jsonl")
    (d / "broken.jsonl").write_text('{"index": 0, "time": 0, "type": "invoke"\n')
    return d


def _listing(d: Path) -> list[str]:
    return sorted(p.relative_to(d).as_posix() for p in d.rglob("*"))


def test_a_file_s_results_go_under_the_store_and_the_output_says_where(inputs, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    before = _listing(inputs)
    assert cli.main(["check", "--model", "kv", str(inputs / "stale.jsonl")]) == 1
    out = capsys.readouterr().out
    assert _listing(inputs) == before                     # nothing beside the input
    [folder] = (tmp_path / "store" / "checks" / "stale.jsonl").iterdir()
    assert sorted(p.name for p in folder.iterdir()) == ["linearizability.html", "results.json"]
    assert f"results: store/checks/stale.jsonl/{folder.name}/results.json" in out
    assert f"explained in store/checks/stale.jsonl/{folder.name}/linearizability.html" in out
    assert json.loads((folder / "results.json").read_text())["valid"] is False


def test_store_and_out_choose_the_folder(inputs, tmp_path, capsys):
    assert cli.main(["check", str(inputs / "good.jsonl"), "--store", str(tmp_path / "s")]) == 0
    [folder] = (tmp_path / "s" / "checks" / "good.jsonl").iterdir()
    assert (folder / "results.json").is_file()
    assert cli.main(["check", str(inputs / "good.jsonl"), "--store", str(tmp_path / "s")]) == 0
    assert len(list((tmp_path / "s" / "checks" / "good.jsonl").iterdir())) == 2   # a new folder each time
    assert cli.main(["check", str(inputs / "good.jsonl"), "--out", str(tmp_path / "o")]) == 0
    assert (tmp_path / "o" / "results.json").is_file()
    assert f"results: {tmp_path / 'o' / 'results.json'}" in capsys.readouterr().out


def test_a_store_that_cannot_be_written_exits_3_naming_the_way_out(inputs, tmp_path, capsys):
    (tmp_path / "blocker").write_text("a file, not a folder")
    assert cli.main(["check", str(inputs / "good.jsonl"), "--store", str(tmp_path / "blocker")]) == 3
    assert "pass --out DIR or --store DIR" in capsys.readouterr().err


def test_a_malformed_file_leaves_no_empty_folder(inputs, tmp_path, capsys):
    assert cli.main(["check", str(inputs / "broken.jsonl"), "--store", str(tmp_path / "s")]) == 3
    assert "malformed history" in capsys.readouterr().err
    assert list((tmp_path / "s" / "checks" / "broken.jsonl").iterdir()) == []


def test_several_files_in_one_process_with_a_line_each_and_the_worst_exit(inputs, tmp_path, capsys):
    files = [str(inputs / n) for n in ("good.jsonl", "stale.jsonl", "broken.jsonl")]
    assert cli.main(["check", "--model", "kv", *files, "--store", str(tmp_path / "s")]) == 1
    out = capsys.readouterr().out
    for f in files:
        assert f"== {f}\n" in out
    summary = out[out.index("valid      "):].splitlines()
    assert summary[0].startswith(f"valid      {files[0]}") and "-> " + str(tmp_path / "s" / "checks" / "good.jsonl") in summary[0]
    assert summary[1].startswith(f"invalid    {files[1]}") and "/checks/stale.jsonl/" in summary[1]
    assert summary[2] == f"bad input  {files[2]}"
    assert summary[3] == "3 inputs: 1 valid, 1 invalid, 1 bad input"
    assert (tmp_path / "s" / "checks" / "good.jsonl").is_dir() and (tmp_path / "s" / "checks" / "stale.jsonl").is_dir()


def test_bad_input_outranks_unknown_and_valid_but_not_invalid(inputs, tmp_path):
    good, broken = str(inputs / "good.jsonl"), str(inputs / "broken.jsonl")
    assert cli.main(["check", good, good, "--store", str(tmp_path / "s")]) == 0
    assert cli.main(["check", good, broken, "--store", str(tmp_path / "s")]) == 3
    assert worst_exit([0, 2]) == 2 and worst_exit([2, 3]) == 3 and worst_exit([3, 1, 0]) == 1
    assert worst_exit([]) == 0


def test_out_with_several_inputs_gives_each_its_folder(inputs, tmp_path, capsys):
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(inputs / "good.jsonl", other / "good.jsonl")            # the same name twice
    files = [str(inputs / "good.jsonl"), str(other / "good.jsonl"), str(inputs / "stale.jsonl")]
    assert cli.main(["check", "--model", "kv", *files, "--out", str(tmp_path / "o")]) == 1
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["good.jsonl", "good.jsonl-1", "stale.jsonl"]
    assert (tmp_path / "o" / "stale.jsonl" / "linearizability.html").is_file()
    assert f"-> {tmp_path / 'o' / 'good.jsonl-1'}" in capsys.readouterr().out


def test_run_directories_and_files_together(inputs, tmp_path, capsys):
    run = write_store(tmp_path / "runs", lose=3)
    good = str(inputs / "good.jsonl")
    assert cli.main(["check", str(run), good, "--store", str(tmp_path / "s")]) == 1
    out = capsys.readouterr().out
    assert "verdict: INVALID" in out and "lost-write: 1" in out
    assert f"invalid    {run}" in out and f"-> {run}" in out          # a run's results stay in the run
    assert json.loads((run / "results.json").read_text())["valid"] is False
    assert "2 inputs: 1 valid, 1 invalid" in out


def test_one_process_checks_many_small_files_quickly(tmp_path, capsys):
    """Issue 15: 102 small logs cost about 0.25 s of start-up each as separate processes."""
    import time
    files = []
    for i in range(102):
        p = tmp_path / f"h{i}.jsonl"
        p.write_text(_ops(("write", i), ("read", i)))
        files.append(str(p))
    t = time.monotonic()
    assert cli.main(["check", "--model", "kv", *files, "--store", str(tmp_path / "s")]) == 0
    assert time.monotonic() - t < 0.25 * 102 / 4
    assert "102 inputs: 102 valid" in capsys.readouterr().out
