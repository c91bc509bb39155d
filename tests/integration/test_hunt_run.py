"""One short real hunt (``kraft-chaos hunt``) on Docker: ``--unsafe no-check-quorum`` with the
simulation phase off and ``--stop-at-first``, 3 minutes, the append and kv workloads; seed 2's
rotation runs the default schedule, then ``isolate`` (kv, kraft.version 0), whose cut-off leaders
show the bug within seconds. The real runs must find the bug, shrink the failure into a
scenario file the registries accept, write the report (hunt.json, hunt.txt, the JUnit XML) and
leave nothing of their clusters behind. Slow (about 3 minutes) and not in the default suite:
``make test-slow``. Run it alone under the shared lock: ``flock /work/.cluster.lock pytest tests/integration/test_hunt_run.py``; its subnet comes
from ``KRAFT_CHAOS_HUNT_SUBNET`` (default 10.131.0.0/24).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.config.resolved import resolve
from harness.config.run import scenario_config
from harness.config.scenario import load
from tests.integration.conftest import harness_run_id, run_labelled

pytestmark = [pytest.mark.docker, pytest.mark.slow]

SUBNET = os.environ.get("KRAFT_CHAOS_HUNT_SUBNET", "10.131.0.0/24")


def test_a_short_hunt_finds_a_real_run_only_bug_and_shrinks_it(engine, tmp_path):
    store = tmp_path / "store"
    junit = tmp_path / "hunt-junit.xml"
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "hunt", "--minutes", "3", "--stop-at-first", "--no-sim",
         "--unsafe", "no-check-quorum", "--workload", "append,kv", "--shrink-runs", "1", "--seed", "2",
         "--cluster", "docker", "--subnet", SUBNET, "--store", str(store), "--junit", str(junit)],
        capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    (folder,) = (store / "hunt").iterdir()
    doc = json.loads((folder / "hunt.json").read_text())
    assert doc["exit_code"] == 1 and doc["sim"]["status"] == "off"
    rows = doc["rows"]
    assert rows[-1]["verdict"] == "invalid" and rows[-1]["anomalies"], out
    assert all(r["phase"] == "real" and r["workload"] in ("append", "kv") for r in rows)
    assert [r["seed"] for r in rows] == [2 + i for i in range(len(rows))]
    ff = doc["first_failure"]
    assert ff["row"] == rows[-1]["n"] and ff["elapsed_s"] > 0 and "first failure:" in out
    # the failure's faults are a scenario file the registries accept (shrunk, or as they happened)
    for key in ("scenario_full", "scenario"):
        cfg = scenario_config(load(ff[key]), Path(ff[key]))
        resolve(cfg)
        assert cfg.unsafe == ["no-check-quorum"] and cfg.seed == rows[-1]["seed"]
    assert ff["shrink"]["faults_after"] <= ff["shrink"]["faults_before"]
    # the report: the table printed and saved, the JUnit XML with one failure
    assert (folder / "hunt.txt").read_text().strip() in out
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("failures") == "1" and int(suite.get("tests")) == len(rows)
    # every run, the shrink's replays included, tore its cluster down
    for run_dir in store.glob("*/*/test.json"):
        seed = json.loads(run_dir.read_text())["seed"]
        assert run_labelled(engine, harness_run_id(run_dir.parent, seed)) == ([], []), run_dir.parent
