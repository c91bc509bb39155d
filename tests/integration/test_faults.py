"""The new fault families and targeted faults on a real 3-node quorum, overlapping, and a
scenario file replayed through the CLI; the correct build stays valid and nothing is left."""
from __future__ import annotations

import json

import pytest

from harness.cli import main as cli
from history import NEMESIS, read_history
from tests.integration.conftest import harness_run_id, run_labelled

pytestmark = pytest.mark.docker

SUBNET = "10.74.0.0/24"
NAMES = ["partition:one-way-leader+leader-diamond+leader-minority", "flap", "rolling", "packet",
         "elect", "lag", "crash"]


def nemesis_infos(history):
    return [op for op in history if op["process"] == NEMESIS and op["type"] == "info"]


@pytest.mark.slow      # about 50 s; test_a_scenario_file_replays_through_the_cli below runs faults on a real cluster
def test_every_new_fault_runs_overlapping_on_a_real_cluster(engine, kraft_chaos_run):
    results, run_dir = kraft_chaos_run(nodes=3, time_limit=40, nemesis=NAMES, nemesis_mode="overlap",
                                       nemesis_interval=2, nemesis_duration=2.5, concurrency=5, rate=60,
                                       subnet=SUBNET, seed=13)
    history = read_history(run_dir / "history.jsonl")
    infos = nemesis_infos(history)
    started = {op["f"][len("start-"):] for op in infos if op["f"].startswith("start-") and "error" not in op}
    assert {"partition", "flap", "rolling", "packet", "kill", "crash"} <= started, started
    assert not [op for op in infos if op.get("error")], [op for op in infos if op.get("error")]
    # faults overlapped: some start came while another slot was active
    active, overlapped = set(), False
    for op in infos:
        slot = (op["f"].partition("-")[2], (op["value"] or {}).get("slot"))
        if op["f"].startswith("start-"):
            overlapped |= bool(active)
            active.add(slot)
        else:
            active.discard(slot)
    assert overlapped
    # the elect fault aimed: it killed a node and restarted it cut off
    elect = [op for op in infos if (op["value"] or {}).get("slot") in ("elect", "elect-cut")]
    assert {op["f"] for op in elect} >= {"start-kill", "start-partition", "stop-kill", "stop-partition"}
    assert results["valid"] is True, json.dumps(results["anomalies"])
    assert run_labelled(engine, harness_run_id(run_dir, 13)) == ([], [])


def test_a_scenario_file_replays_through_the_cli(engine, tmp_path, capsys):
    scenario = tmp_path / "s.toml"
    scenario.write_text(f"""
[run]
seed = 4
nodes = 3
subnet = "{SUBNET}"
rate = 50
concurrency = 4

[[step]]
wait = "leader"
timeout = 20

[[step]]
nemesis = "start-partition"
value = {{ kind = "isolate-leader" }}

[[step]]
sleep = 4

[[step]]
nemesis = "stop-partition"
value = {{ kind = "isolate-leader" }}

[[step]]
wait = "leader"
timeout = 20
""")
    code = cli.main(["scenario", "run", str(scenario), "--store", str(tmp_path / "store"), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0, out
    (run_dir,) = (tmp_path / "store").glob("append-scenario/*")
    assert f"repeat with: kraft-chaos scenario run {run_dir / 'scenario.toml'}" in out
    history = read_history(run_dir / "history.jsonl")
    fs = [op["f"] for op in nemesis_infos(history)]
    # the scenario's two steps, then the runner's final heal of every fault
    assert fs == ["start-partition", "stop-partition", "heal"]
    heal = nemesis_infos(history)[-1]["value"]
    assert heal["kind"] == "all" and heal["errors"] == {} and heal["restarted"] == [], heal
    cut = nemesis_infos(history)[0]["value"]
    assert cut["kind"] == "isolate-leader" and len(cut["targets"]) == 1 and "error" not in cut
    assert (run_dir / "scenario.toml").is_file()
    assert run_labelled(engine, harness_run_id(run_dir, 4)) == ([], [])


def test_a_bad_scenario_exits_3_naming_the_line(tmp_path, capsys):
    scenario = tmp_path / "bad.toml"
    scenario.write_text("[run]\nseed = 1\n\n[[step]]\nwait = \"leader\"\n")
    assert cli.main(["scenario", "run", str(scenario)]) == 3
    assert "bad.toml:4: step 1: a wait needs timeout" in capsys.readouterr().err
