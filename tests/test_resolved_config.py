"""A run's configuration resolved once (harness/config/resolved.py): the frozen nested value,
the target's typed settings and its ``prepare`` called once, the flat record test.json keeps."""
from __future__ import annotations

import dataclasses
import json

import pytest

from harness.cli.main import main
from harness.config.resolved import ResolvedConfig, fault_families, resolve
from harness.config.run import RunConfig
from harness.run import runner
from targets import registry
from targets.kafka.settings import KafkaSettings
from targets.settings import KraftSettings


def test_a_kraft_run_resolves_into_its_parts_with_the_defaults_filled_in():
    given = RunConfig(seed=3, nemesis=["kill", "partition:bridge"], unsafe=["no-fsync"], subnet="10.132.0.0/24")
    run = resolve(given)
    assert isinstance(run.target.settings, KraftSettings) and run.target.spec.name == "kraft"
    assert run.target.settings.unsafe == ("no-fsync",) and run.target.kraft_version == 0
    assert (run.cluster.backend, run.cluster.subnet, run.cluster.keep) == ("auto", "10.132.0.0/24", False)
    assert run.workload.spec.name == "append" and run.workload.options.concurrency == given.concurrency
    assert run.nemesis.faults == ("kill", "partition:bridge") and run.nemesis.families == {"kill", "partition"}
    assert run.nemesis.targets == "quorum" and not run.nemesis.voter_changes and run.nemesis.active
    # the flat record: the given config with what was filled in; kraft's kraft.version stays unsaid
    assert run.flat == dataclasses.replace(given, nemesis_targets="quorum")
    assert given.nemesis_targets is None and run.flat.kraft_version is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.nemesis.targets = "all"                  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        given.seed = 4                               # type: ignore[misc]


def test_a_kafka_run_gets_its_releases_kraft_version_in_settings_and_record():
    run = resolve(RunConfig(seed=1, db="kafka", workload="metadata", kafka_version="3.8.1",
                            kafka_props={"a.b": 5}))
    s = run.target.settings
    assert isinstance(s, KafkaSettings) and (s.kafka_version, s.kraft_version) == ("3.8.1", 0)
    assert run.flat.kraft_version == 0 and run.target.kraft_version == 0
    assert run.flat.kafka_props == {"a.b": "5"} and dict(s.kafka_props) == {"a.b": "5"}
    with pytest.raises(TypeError):
        s.kafka_props["a.b"] = "6"                   # type: ignore[index]
    assert "--kraft-version 0" in run.flat.repeat_command()
    assert resolve(RunConfig(seed=1, db="kafka", workload="metadata")).nemesis.voter_changes    # 1 from 3.9


def test_the_queue_workload_gets_brokers_in_both_the_record_and_the_settings():
    run = resolve(RunConfig(seed=1, workload="queue"))
    assert run.flat.brokers == run.target.settings.brokers == 3 and run.nemesis.targets == "all"
    assert run.target.spec.node_count(run.target.settings) == run.flat.nodes + 3


def test_fault_families_read_names_and_scenario_steps():
    assert fault_families(["kill", "membership:remove+add"], None) == {"kill", "membership"}
    steps = [{"sleep": 1}, {"nemesis": "start-power-loss"}, {"nemesis": "stop-power-loss"}, "junk"]
    assert fault_families([], steps) == {"power-loss"}
    assert fault_families(None, None) == frozenset()


def test_a_scenario_run_is_stored_with_its_copy(tmp_path):
    steps = [{"nemesis": "start-kill", "value": {"kind": "one"}}, {"sleep": 1}]
    run = resolve(RunConfig(seed=2, nemesis=[], scenario=steps, scenario_file="mine.toml", store=str(tmp_path)))
    assert run.nemesis.scenario == tuple(steps) and run.nemesis.families == {"kill"}
    stored, run_dir = runner.prepare_run(run)
    assert stored.flat.scenario_file == str(run_dir / "scenario.toml") and run.flat.scenario_file == "mine.toml"
    test = json.loads((run_dir / "test.json").read_text())
    assert test["config"]["scenario_file"] == stored.flat.scenario_file
    assert test["command"] == f"kraft-chaos scenario run {run_dir / 'scenario.toml'}"


def test_the_target_is_prepared_once_per_run(tmp_path, monkeypatch, capsys):
    """``kraft-chaos run`` resolves its config once: the target's prepare runs once, and the
    run and its record get what it returned."""
    calls = []
    spec = registry.TARGETS["kafka"]

    def prepare(settings, faults):
        calls.append(faults)
        return spec.prepare(settings, faults)

    monkeypatch.setitem(registry.TARGETS, "kafka", dataclasses.replace(spec, prepare=prepare))
    seen: list[ResolvedConfig] = []

    def fake_run_test(config, run_dir=None, progress=None):
        seen.append(config)
        return {"valid": True, "anomalies": {}}, run_dir

    monkeypatch.setattr(runner, "run_test", fake_run_test)
    assert main(["run", "--db", "kafka", "--kafka-version", "3.9.2", "--nemesis", "kill", "--time-limit", "5",
                 "--store", str(tmp_path), "--no-progress"]) == 0
    assert calls == [frozenset({"kill"})]
    (config,) = seen
    assert config.target.settings.kraft_version == 1
    (test_json,) = tmp_path.glob("metadata-kill/*/test.json")
    assert json.loads(test_json.read_text())["config"]["kraft_version"] == 1
    assert "--kraft-version 1" in capsys.readouterr().out


@pytest.mark.parametrize("argv, needle", [
    (["--kraft-version", "1", "--db", "kafka", "--kafka-version", "3.8.1"], "Kafka 3.8.1 cannot run --kraft-version 1"),
    (["--nemesis", "membership"], "not supported at kraft.version 0"),
    (["--workload", "queue", "--brokers", "0"], "the queue workload needs brokers"),
    (["--db", "kafka", "--workload", "append"], "workload 'append' does not run on --db kafka"),
])
def test_bad_flags_are_refused_before_anything_is_stored(tmp_path, capsys, argv, needle):
    """Exit 3 with the resolver's message; no run folder (none of these reaches a cluster)."""
    assert main(["run", *argv, "--time-limit", "5", "--store", str(tmp_path), "--no-progress"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("kraft-chaos: error: ") and needle in err
    assert list(tmp_path.iterdir()) == []
