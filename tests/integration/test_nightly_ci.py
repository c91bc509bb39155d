"""Nightly CI for real: one short run through the pytest plugin (a pytester subprocess with
``--junitxml``) and a one-cell ``kraft-chaos matrix``; both end valid, their JUnit
reports carry the verdict and the store, and nothing is left on the engine."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.cli import main as cli
from tests.integration.conftest import harness_run_id, run_labelled

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.docker

SUBNET = "10.86.0.0/24"


def test_chaos_run_in_a_pytest_subprocess_reports_to_junit(engine, pytester, tmp_path):
    pytester.makepyfile(test_inner="""
        def test_quorum(chaos_run):
            assert chaos_run.results["stats"]["counts"]["append"]["ok"] > 50
    """)
    xml = tmp_path / "r.xml"
    store = tmp_path / "store"
    result = pytester.runpytest_subprocess(
        "--kraft-chaos-time-limit", "20", "--kraft-chaos-nodes", "3", "--kraft-chaos-nemesis", "kill",
        "--kraft-chaos-seed", "3", "--kraft-chaos-subnet", SUBNET, "--kraft-chaos-store", str(store),
        "--junitxml", str(xml), "-p", "no:cacheprovider", timeout=240)
    result.assert_outcomes(passed=1)
    (tc,) = ET.parse(xml).getroot().iter("testcase")
    assert tc.get("name") == "test_quorum[kraft-append-kill-s3]"
    props = {p.get("name"): p.get("value") for p in tc.iter("property")}
    assert props["kraft_chaos.verdict"] == "VALID" and props["kraft_chaos.anomalies"] == "none"
    run_dir = Path(props["kraft_chaos.store"])
    assert store in run_dir.parents
    assert json.loads((run_dir / "results.json").read_text())["valid"] is True
    assert "--seed 3" in props["kraft_chaos.repeat"] and "--subnet 10.86.0.0/24" in props["kraft_chaos.repeat"]
    assert run_labelled(engine, harness_run_id(run_dir, 3)) == ([], [])


def test_a_one_cell_matrix(engine, tmp_path, capsys):
    f = tmp_path / "tiny.toml"
    f.write_text('name = "tiny"\nnemeses = ["pause"]\nseeds = [5]\ntime_limit = 15\nnodes = 3\nrate = 50\n')
    out = tmp_path / "out"
    assert cli.main(["matrix", str(f), "--out", str(out), "--store", str(tmp_path / "store"),
                     "--subnet", SUBNET]) == 0
    printed = capsys.readouterr().out
    assert "VALID" in printed and "1 cell(s): 1 valid" in printed
    doc = json.loads((out / "matrix.json").read_text())
    (cell,) = doc["cells"]
    assert (cell["id"], cell["verdict"], cell["anomalies"], cell["error"]) == \
        ("kraft/append/pause/seed5", "valid", {}, None)
    assert cell["wall_s"] > 15 and (Path(cell["store"]) / "history.jsonl").is_file()
    suite = ET.parse(out / "matrix.xml").getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("1", "0", "0")
    props = {p.get("name"): p.get("value") for p in suite.find("testcase").iter("property")}
    assert props["kraft_chaos.store"] == cell["store"] and props["kraft_chaos.verdict"] == "VALID"
    assert run_labelled(engine, harness_run_id(Path(cell["store"]), 5)) == ([], [])
