"""``kraft-chaos hunt``'s report (harness/hunt/report.py) and command line (harness/cli/hunt.py):
the table, the JUnit XML through the matrix's writer, the exit codes, bad input, and the
command end to end with a stand-in for real runs."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from harness.cli import main as cli
from harness.hunt import loop, real_phase
from harness.hunt.report import HuntReport, exit_code, format_table, junit_doc
from tests.test_hunt_loop import Clock, FakeCluster, kill_fails


def row(phase="real", verdict="valid", **kw) -> dict:
    return {"phase": phase, "schedule": "isolate", "workload": "append", "kraft_version": 0, "seed": 4,
            "verdict": verdict, "anomalies": {}, "wall_s": 81.2, "store": "store/x/1", "repeat": "kraft-chaos run ...",
            "error": None, "error_kind": None, **kw}


def doc_of(rows, **kw) -> dict:
    return {"command": "kraft-chaos hunt --seed 4", "db": "kraft", "seed": 4, "minutes": 20, "started": "T0",
            "wall_s": 1190.0, "rows": [{**r, "n": i + 1} for i, r in enumerate(rows)], "notes": [],
            "first_failure": None, "interrupted": False, "sim": {"status": "ran", "reason": None}, **kw}


def test_the_table_names_each_row_the_first_failure_and_its_scenario():
    doc = doc_of([row("sim", "valid", schedule="quorum+3 brokers", workload="sim", kraft_version=1, seed="4..903",
                      store=None),
                  row(verdict="invalid", anomalies={"lost-write": 2, "phantom": 1}, detect_s=12.3),
                  row(verdict="skipped", reason="kraft.version 1 needs Kafka 3.9")],
                 first_failure={"row": 2, "elapsed_s": 312.4, "detect_s": 12.3, "scenario": "h/failure-2.toml",
                                "what": "real run 2: isolate, append, kraft.version 0, seed 4: lost-write 2",
                                "shrink": {"faults_before": 6, "faults_after": 1, "attempts": 5}},
                 counts={"valid": 1, "invalid": 1, "skipped": 1})
    text = format_table(doc)
    lines = text.splitlines()
    assert lines[0].split() == ["#", "phase", "schedule", "/", "config", "workload", "kv", "seed", "verdict",
                                "anomalies", "s", "store", "/", "error"]
    assert "sim" in lines[1] and "quorum+3 brokers" in lines[1] and "4..903" in lines[1] and "VALID" in lines[1]
    assert "INVALID" in lines[2] and "lost-write 2, phantom 1" in lines[2] and "store/x/1" in lines[2]
    assert "SKIPPED" in lines[3] and "kraft.version 1 needs Kafka 3.9" in lines[3]
    assert ("first failure: 312 s into the hunt: real run 2: isolate, append, kraft.version 0, seed 4: lost-write 2; "
            "its first anomalous op 12.3 s into the run") in text
    assert "shrunk: 6 fault(s) -> 1 in 5 run(s)" in text and "replay with: kraft-chaos scenario run h/failure-2.toml" in text
    assert "3 row(s): 1 valid, 1 invalid, 1 skipped; 1190 s of 1200" in text
    assert lines[-1] == "repeat with: kraft-chaos hunt --seed 4"


def test_junit_is_the_matrix_writers_with_a_testcase_per_row(tmp_path):
    rep = HuntReport(tmp_path / "h", doc_of([]), junit=str(tmp_path / "ci" / "out.xml"))
    rep.add(row("sim", "invalid", schedule="quorum", workload="sim", seed="4..9", anomalies={"at-most-one-leader": 1},
                detail="seed 7: at-most-one-leader: two leaders in epoch 3"))
    rep.add(row(verdict="error", error="ClusterError: no engine", error_kind="cluster"))
    rep.add(row(verdict="valid"))
    rep.add(row("replay", "skipped", reason="no time left"))
    suite = ET.parse(tmp_path / "ci" / "out.xml").getroot().find("testsuite")
    assert suite.get("name") == "kraft-chaos matrix hunt kraft seed 4"
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("4", "1", "1", "1")
    cases = suite.findall("testcase")
    assert [c.get("classname") for c in cases] == ["kraft-chaos.matrix.hunt-sim.sim", "kraft-chaos.matrix.hunt-real.append",
                                                   "kraft-chaos.matrix.hunt-real.append",
                                                   "kraft-chaos.matrix.hunt-replay.append"]
    assert cases[0].get("name") == "quorum kv0 seed 4..9"
    fail = cases[0].find("failure")
    assert "at-most-one-leader 1" in fail.get("message") and "two leaders in epoch 3" in fail.text
    assert cases[1].find("error").get("type") == "cluster" and cases[3].find("skipped").get("message") == "no time left"
    assert json.loads((tmp_path / "h" / "hunt.json").read_text())["counts"]["invalid"] == 1
    assert (tmp_path / "h" / "hunt.xml").read_bytes() == (tmp_path / "ci" / "out.xml").read_bytes()
    assert len(junit_doc(rep.doc)["cells"]) == 3


@pytest.mark.parametrize("verdicts, interrupted, code", [
    (["valid", "valid"], False, 0),
    (["valid", "invalid", "unknown", "error"], False, 1),
    (["valid", "unknown"], False, 2),
    (["valid", "error"], False, 5),
    (["skipped"], False, 5),          # nothing ran: no "nothing found"
    ([], False, 5),
    (["valid", "invalid"], True, 130),
])
def test_exit_codes(verdicts, interrupted, code):
    rows = [row(verdict=v, error_kind="harness" if v == "error" else None) for v in verdicts]
    assert exit_code(doc_of(rows, interrupted=interrupted)) == code


@pytest.mark.parametrize("argv, needle", [
    (["--db", "kafka", "--unsafe", "no-fsync"], "--unsafe does not apply to --db kafka"),
    (["--kafka-version", "3.9.2"], "--kafka-version does not apply to --db kraft"),
    (["--workload", "metadata"], "workload 'metadata' does not run on --db kraft"),
    (["--workload", "append,bank"], "unknown workload 'bank'"),
    (["--minutes", "0"], "--minutes must be > 0"),
    (["--unsafe", "no-such"], "unknown unsafe switch no-such"),
    (["--cluster", "ssh"], "--cluster ssh needs --hosts FILE"),
])
def test_bad_input_exits_3_naming_it(tmp_path, capsys, argv, needle):
    assert cli.main(["hunt", "--store", str(tmp_path), *argv]) == 3
    assert needle in capsys.readouterr().err
    assert not (tmp_path / "hunt").exists()


@pytest.fixture
def stand_in(monkeypatch):
    """Real runs replaced by a :class:`FakeCluster` whose runs with a kill fail; no simulator."""
    cluster = FakeCluster(Clock(), fails=kill_fails)
    monkeypatch.setattr(real_phase, "_run_test", cluster)
    monkeypatch.setattr(loop, "SIMULATOR", None)
    return cluster


def test_the_command_finds_shrinks_reports_and_exits_1(tmp_path, capsys, stand_in):
    junit = tmp_path / "report.xml"
    code = cli.main(["hunt", "--stop-at-first", "--seed", "9", "--workload", "kv", "--store", str(tmp_path / "s"),
                     "--subnet", "10.131.0.0/24", "--junit", str(junit), "--lock", str(tmp_path / "lock")])
    out = capsys.readouterr().out
    assert code == 1
    assert "repeat with: kraft-chaos hunt --db kraft --minutes 20 --seed 9 --workload kv --stop-at-first" in out
    assert "simulation: unavailable: no simulator given" in out
    assert "first failure:" in out and "shrunk: 5 fault(s) -> 1" in out
    (folder,) = (tmp_path / "s" / "hunt").iterdir()
    doc = json.loads((folder / "hunt.json").read_text())
    assert doc["exit_code"] == 1 and doc["rows"][0]["workload"] == "kv" and doc["rows"][0]["seed"] == 9
    assert (folder / "hunt.txt").read_text().strip() in out and junit.is_file()
    assert all(c.subnet == "10.131.0.0/24" for c in stand_in.calls)


def test_the_command_on_ctrl_c_writes_what_ran_and_exits_130(tmp_path, capsys, stand_in):
    stand_in.fails = lambda families: False
    stand_in.raises = {2: KeyboardInterrupt()}
    assert cli.main(["hunt", "--seed", "9", "--store", str(tmp_path)]) == 130
    (folder,) = (tmp_path / "hunt").iterdir()
    doc = json.loads((folder / "hunt.json").read_text())
    assert doc["interrupted"] and [r["verdict"] for r in doc["rows"]] == ["valid", "interrupted"]
    assert "(interrupted)" in capsys.readouterr().out
