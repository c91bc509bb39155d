"""The Kafka bugs found here and not (yet) in Kafka's JIRA (docs/new-bugs/): each report's scenario is a
built-in scenario that loads, resolves for the releases its report bisected, and lands the fault the
report describes; the checker that the report says detects it does so on the run's own nemesis ops.
The real runs are the report's (they need Docker or netns and the cluster lock)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from checkers.crashes import CrashedNode
from harness.bisect.search import check_release, subject
from harness.config import scenario
from harness.config.run import scenario_config
from targets.errors import TargetError

ROOT = Path(__file__).resolve().parents[1]
REPORTS = sorted((ROOT / "docs" / "new-bugs").glob("*.md"))
OBSERVER = "kafka-observer-lost-metadata-log"


def test_every_report_names_a_built_in_scenario_and_the_catalogue_doc_points_at_it():
    assert REPORTS, "docs/new-bugs/ holds the reports"
    bugs_doc = (ROOT / "docs" / "kafka-bugs.md").read_text()
    for report in REPORTS:
        names = set(re.findall(r"kraft-chaos scenario run ([\w.-]+)", report.read_text()))
        assert names and names <= set(scenario.builtin_scenarios()), report.name
        assert f"new-bugs/{report.name}" in bugs_doc, report.name


def test_the_observer_scenario_power_loses_one_broker_of_a_kraft_version_1_quorum_then_restarts_it():
    path = scenario.builtin_scenarios()[OBSERVER]
    doc = scenario.load(path)
    run, steps = doc["run"], doc["steps"]
    assert run["db"] == "kafka" and run["kraft_version"] == 1
    # one controller: the first Fetch of the restarted broker always reaches the leader
    assert run["nodes"] == 1 and run["kafka_topology"] == "dedicated" and run["nemesis_targets"] == "all"
    faults = [(i, s["nemesis"], s["value"]) for i, s in enumerate(steps) if "nemesis" in s]
    assert [f for _i, f, _v in faults] == ["start-power-loss", "stop-power-loss"]
    (at, _f, lost), (back, _g, _w) = faults
    brokers = {f"n{i}" for i in range(run["nodes"] + 1, run["nodes"] + run["brokers"] + 1)}
    assert len(lost["targets"]) == 1 and set(lost["targets"]) <= brokers      # an observer, not a voter
    assert lost["torn"] is False and lost["lost_renames"] is False              # quorum-state's rename kept
    assert steps[0].get("wait") == "leader"
    # the broker has fetched and followed before the power loss; its JVM restarts before the heal
    assert sum(s.get("sleep", 0) for s in steps[:at]) >= 5
    assert sum(s.get("sleep", 0) for s in steps[back:]) >= 20
    cfg = scenario_config(doc, path)
    assert cfg.brokers >= 2 and cfg.replication_factor == cfg.brokers   # the partition outlives the broker


def test_the_observer_scenario_bisects_over_the_kraft_version_1_releases_only():
    subj = subject(OBSERVER, ("crashed-node",))
    assert subj.what == "scenario" and subj.kinds == ("crashed-node",) and subj.fields["kraft_version"] == 1
    for version in ("3.9.1", "4.0.2", "4.1.2", "4.2.2", "4.3.1", "4.4.0"):
        check_release(subj, version)
    with pytest.raises((ValueError, TargetError), match="3.9"):
        check_release(subj, "3.8.1")


def test_crashed_node_reports_the_broker_the_heal_had_to_start_again():
    # the nemesis ops of the 4.4.0 run in docs/new-bugs/observer-unattached-with-leader.md
    ops = [
        {"index": 1089, "type": "invoke", "process": "nemesis", "f": "start-power-loss",
         "value": {"kind": "nodes", "targets": ["n2"], "torn": False, "lost_renames": False}},
        {"index": 1124, "type": "invoke", "process": "nemesis", "f": "stop-power-loss", "value": {"kind": "nodes"}},
        {"index": 1125, "type": "info", "process": "nemesis", "f": "stop-power-loss",
         "value": {"kind": "nodes", "targets": ["n2"]}},
        {"index": 3538, "type": "invoke", "process": "nemesis", "f": "heal", "value": {"kind": "all"}},
        {"index": 3539, "type": "info", "process": "nemesis", "f": "heal",
         "value": {"kind": "all", "held": [], "restarted": ["n2"], "errors": {}}},
    ]
    checker = CrashedNode()
    for op in ops:
        checker.feed(op)
    out = checker.result(["n1", "n2", "n3"])
    assert out["valid"] is False and out["anomalies"] == [{"node": "n2", "op": 3539}]
    # a broker that rejoined (kraft.version 0: the voters come from controller.quorum.voters) is no crash
    healthy = CrashedNode()
    for op in ops[:-1] + [{**ops[-1], "value": {"kind": "all", "held": [], "restarted": [], "errors": {}}}]:
        healthy.feed(op)
    assert healthy.result(["n1", "n2", "n3"])["valid"] is True
