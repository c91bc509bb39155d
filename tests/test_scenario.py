"""Scenario files (harness/config/scenario.py): loading, the errors that name the line, the steps as a
generator, and the round trip through dumps."""
from __future__ import annotations

import random

import pytest

from generator import Context
from harness.config.scenario import ScenarioError, dumps, load
from harness.run.scenario_steps import ClientGate, GatedClients, budget_s, steps_generator
from generator import Fn
from workloads.monitor import NodeSeen, QuorumView

GOOD = """\
# a scenario
[run]
seed = 7
unsafe = ["commit-minority"]

[[step]]
nemesis = "start-partition"
value = { kind = "isolate-leader" }

[[step]]
sleep = 2.5

[[step]]
wait = "lagging"
node = "n3"
records = 10
timeout = 5

[[step]]
clients = "pause"

[[step]]
nemesis = "stop-partition"
value = { kind = "isolate-leader" }
"""


def test_load_a_good_scenario(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(GOOD)
    doc = load(p)
    assert doc["run"] == {"seed": 7, "unsafe": ["commit-minority"]}
    assert [next(iter(s)) for s in doc["steps"]] == ["nemesis", "sleep", "wait", "clients", "nemesis"]
    assert budget_s(doc["steps"]) == pytest.approx(2.5 + 5 + 2 + 3.0)


@pytest.mark.parametrize("step, line, needle", [
    ('wait = "leader"', 19, "needs timeout"),
    ('nemesis = "start-partition"\nvalue = { kind = "sideways" }', 19, "unknown partition kind 'sideways'"),
    ('sleep = -1', 19, "sleep must be a number"),
    ('clients = "stop"', 19, "clients must be one of pause, resume"),
    ('wait = "lagging"\ntimeout = 3', 19, "needs node"),
    ('sleep = 1\nwait = "leader"', 19, "exactly one of"),
    ('nemesis = "explode"\nvalue = { kind = "x" }', 19, "start-<family>"),
])
def test_a_bad_step_names_the_file_and_line(tmp_path, step, line, needle):
    p = tmp_path / "bad.toml"
    p.write_text(GOOD.split("[[step]]\nclients")[0] + "[[step]]\n" + step + "\n")
    text = p.read_text().splitlines()
    assert text[line - 1] == "[[step]]"
    with pytest.raises(ScenarioError) as info:
        load(p)
    assert f"bad.toml:{line}: step 4: " in str(info.value) and needle in str(info.value)


def test_not_toml_and_unknown_tables_are_errors(tmp_path):
    p = tmp_path / "x.toml"
    p.write_text("[[step]\n")
    with pytest.raises(ScenarioError, match="not TOML"):
        load(p)
    p.write_text("[runn]\nseed = 1\n[[step]]\nsleep = 1\n")
    with pytest.raises(ScenarioError, match="unknown table"):
        load(p)
    p.write_text("[run]\nsead = 1\n[[step]]\nsleep = 1\n")
    with pytest.raises(ScenarioError, match="unknown setting"):
        load(p)


def test_dumps_round_trips(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(GOOD)
    doc = load(p)
    q = tmp_path / "again.toml"
    q.write_text(dumps(doc["run"], doc["steps"], comment="made by a test"))
    assert load(q) == doc
    assert q.read_text().startswith("# made by a test\n")


def test_steps_run_in_order_with_waits_and_the_gate():
    steps = [{"nemesis": "start-kill", "value": {"kind": "leader"}}, {"sleep": 1.0},
             {"wait": "lagging", "node": "n3", "records": 10, "timeout": 5},
             {"clients": "pause"}, {"nemesis": "stop-kill", "value": {"kind": "leader"}}]
    gate = ClientGate()
    gen = steps_generator(steps, gate, tail_s=0.5)
    clients = GatedClients(gate, Fn(lambda ctx: {"f": "read", "value": None}))
    view = QuorumView(leader="n1", epoch=1, nodes={"n1": NodeSeen(1, 1, True, 0.0)}, log_end={"n1": 50, "n3": 45})
    rng = random.Random(1)

    def ask(t):
        return gen.op(Context(t, "nemesis", "nemesis", rng, view))

    assert ask(0.0) == {"f": "start-kill", "value": {"kind": "leader"}}
    assert ask(0.1).until == pytest.approx(1.1)                 # sleeping, from the first ask
    assert clients.op(Context(0.1, 0, 0, rng)) == {"f": "read", "value": None}
    w = ask(1.1)                                                 # the wait starts: n3 is 5 behind
    assert w.until == pytest.approx(1.15)
    view.log_end["n3"] = 40                                      # now 10 behind
    assert ask(1.2) == {"f": "stop-kill", "value": {"kind": "leader"}}
    assert gate.paused and clients.op(Context(1.2, 0, 0, rng)).until == pytest.approx(1.25)
    assert ask(1.3).until == pytest.approx(1.8)                  # the tail
    assert ask(1.9) is None and gate.done
    assert clients.op(Context(2.0, 0, 0, rng)) is None


def test_a_wait_that_times_out_moves_on():
    gate = ClientGate()
    gen = steps_generator([{"wait": "leader", "timeout": 1}, {"sleep": 0}], gate, tail_s=0)
    rng = random.Random(1)
    assert gen.op(Context(0.0, "nemesis", "nemesis", rng, QuorumView())).until == pytest.approx(0.05)
    assert gen.op(Context(1.5, "nemesis", "nemesis", rng, QuorumView())) is None and gate.done


def test_the_shipped_example_scenarios_load():
    from pathlib import Path
    examples = sorted((Path(__file__).parent.parent / "examples" / "scenarios").glob("*.toml"))
    assert {p.stem for p in examples} >= {"ack-before-commit", "no-check-quorum"}
    for p in examples:
        doc = load(p)
        assert doc["run"]["unsafe"] == [p.stem] and any("nemesis" in s for s in doc["steps"])


def test_bind_names_roles_from_the_leader_and_later_steps_use_them():
    steps = [{"bind": ["S1", "S2", "S3"], "timeout": 5},
             {"nemesis": "start-partition", "value": {"kind": "nodes", "targets": ["S2"]}},
             {"nemesis": "start-partition", "value": {"kind": "nodes", "slot": "p2",
                                                      "grudge": {"S1": ["S3"], "S3": ["S1"]}}},
             {"wait": "caught-up", "node": "S3", "timeout": 5}]
    gate = ClientGate()
    gen = steps_generator(steps, gate, tail_s=0, nodes=["n1", "n2", "n3"])
    view = QuorumView()
    rng = random.Random(1)

    def ask(t):
        return gen.op(Context(t, "nemesis", "nemesis", rng, view))

    assert ask(0.0).until == pytest.approx(0.05)                 # no leader yet: the bind waits
    view.leader, view.log_end = "n2", {"n2": 10, "n3": 4}
    assert ask(0.1) == {"f": "start-partition", "value": {"kind": "nodes", "targets": ["n1"]}}
    assert gate.roles == {"S1": "n2", "S2": "n1", "S3": "n3"}
    assert ask(0.2)["value"]["grudge"] == {"n2": ["n3"], "n3": ["n2"]}
    assert ask(0.3).until == pytest.approx(0.35)                # S3 (n3) is behind n2
    view.log_end["n3"] = 10
    assert ask(0.4) is None and gate.done


def test_bind_steps_are_checked_and_an_unbound_role_is_an_error(tmp_path):
    p = tmp_path / "b.toml"
    for step, needle in (('bind = ["S1", "S1"]\ntimeout = 3', "distinct role names"),
                         ('bind = ["leader"]\ntimeout = 3', "distinct role names"),
                         ('bind = ["S1"]', "a bind needs timeout")):
        p.write_text("[run]\nseed = 1\n\n[[step]]\n" + step + "\n")
        with pytest.raises(ScenarioError, match=f"b.toml:4: step 1: .*{needle}"):
            load(p)
    with pytest.raises(ValueError, match="role S2 is not bound"):
        ClientGate().resolve_value({"kind": "nodes", "targets": ["S2"]})


def test_a_wipe_step_is_a_nemesis_step_and_budgets_a_format():
    from harness.config.scenario import check_step
    assert check_step({"nemesis": "start-wipe", "value": {"kind": "nodes", "targets": ["n1"]}}) is None
    assert "unknown wipe kind" in check_step({"nemesis": "start-wipe", "value": {"kind": "everything"}})
    assert budget_s([{"nemesis": "start-wipe", "value": {"kind": "one"}}]) > budget_s(
        [{"nemesis": "start-kill", "value": {"kind": "one"}}])


def test_a_kafka_scenario_names_its_release_distribution_and_server_properties(tmp_path):
    """Issue 25: a scenario file can say what a Kafka run needs: db, kafka_version or
    kafka_dist (a path relative to the file), kraft_version and extra server properties."""
    from harness.config.resolved import resolve
    from harness.config.run import scenario_config
    p = tmp_path / "sub" / "s.toml"
    p.parent.mkdir()
    p.write_text('[run]\ndb = "kafka"\nkafka_dist = "../kafka_2.13-3.9.2.tgz"\nkraft_version = 0\n'
                 'kafka_props = { "metadata.log.max.snapshot.interval.ms" = 2000, "x.enable" = true }\n\n'
                 '[[step]]\nsleep = 1\n')
    cfg = scenario_config(load(p), p)
    assert (cfg.db, cfg.kraft_version) == ("kafka", 0)
    assert cfg.kafka_dist == str(tmp_path / "sub" / ".." / "kafka_2.13-3.9.2.tgz")
    assert cfg.kafka_props == {"metadata.log.max.snapshot.interval.ms": 2000, "x.enable": True}
    cfg = scenario_config({"run": {"db": "kafka", "kafka_version": "3.9.2",
                                   "kafka_props": {"a.b": 5, "x.enable": True}}, "steps": [{"sleep": 1}]}, p)
    resolved = resolve(cfg)
    assert resolved.flat.kafka_props == {"a.b": "5", "x.enable": "true"}   # checked into server.properties text
    assert "--kafka-prop a.b=5 --kafka-prop x.enable=true" in " ".join(
        __import__("targets.kafka.target", fromlist=["repeat_flags"]).repeat_flags(resolved.target.settings))


@pytest.mark.parametrize("run, line, needle", [
    ('kafka_props = "a=b"', 2, "must be a table of server properties"),
    ('kafka_props = { a = [1] }', 2, "property 'a' must be a string, number or boolean"),
    ('kafka_dist = 3', 2, "must be a non-empty string"),
    ('kafka_version = ""', 2, "must be a non-empty string"),
])
def test_bad_kafka_settings_name_the_line(tmp_path, run, line, needle):
    p = tmp_path / "s.toml"
    p.write_text(f'[run]\n{run}\n\n[[step]]\nsleep = 1\n')
    with pytest.raises(ScenarioError) as e:
        load(p)
    assert f"s.toml:{line}:" in str(e.value) and needle in str(e.value)


def test_kafka_prop_on_the_command_line_reaches_every_server_properties(capsys):
    from harness.cli.run import add_parser
    from harness.cli.args import Parser
    from targets.kafka import server_config as sc
    parser = Parser(prog="x")
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["run", "--db", "kafka", "--kafka-prop", "controller.quorum.election.backoff.max.ms=0",
                              "--kafka-prop", "a.b = c"])
    assert args.kafka_prop == [("controller.quorum.election.backoff.max.ms", "0"), ("a.b", "c")]
    with pytest.raises(Exception):
        parser.parse_args(["run", "--kafka-prop", "novalue"])
    assert sc.check_extra_properties({"a.b": True, "c": 2}) == {"a.b": "true", "c": "2"}
    with pytest.raises(ValueError, match="bad property name"):
        sc.check_extra_properties({"a b": "1"})
    with pytest.raises(ValueError, match="has whitespace"):
        sc.check_extra_properties({"a": "1 2"})
