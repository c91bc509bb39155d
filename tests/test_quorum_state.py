"""The quorum core's shape: its role modules share state only through QuorumState, import
one another without a circle, and name timers only through TimerKey."""
from __future__ import annotations

import ast
import dataclasses
import random
from pathlib import Path

from kraft.core.events import TimerFired
from kraft.core.record_log import RecordLog
import kraft.quorum
from kraft.quorum import QuorumConfig, QuorumCore, QuorumState, TimerKey
from kraft.quorum import core as core_module
from kraft.rules.voter_set import VoterHistory, VoterNode, VoterSet

QUORUM = Path(kraft.quorum.__file__).parent
#: Modules that hold data, not a role: records, messages, settings, the state, the keys.
DATA = {"__init__.py", "client_messages.py", "config.py", "messages.py", "pending.py", "state.py", "timer_keys.py"}
ROLES = sorted(p for p in QUORUM.glob("*.py") if p.name not in DATA | {"core.py"})


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def _attributes_of(tree: ast.Module, name: str) -> set[str]:
    return {n.attr for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == name}


def test_role_modules_reach_nothing_of_each_other_but_the_state_fields():
    fields = {f.name for f in dataclasses.fields(QuorumState)}
    methods = {n for n in dir(QuorumState) if not n.startswith("_") and callable(getattr(QuorumState, n))}
    assert len(ROLES) >= 10
    for path in ROLES + [QUORUM / "core.py"]:
        tree = _tree(path)
        assert _attributes_of(tree, "s") - fields - methods == set(), path.name
        if path.name != "core.py":
            assert not _attributes_of(tree, "self"), f"{path.name} is a role module: functions over the state"
            assert not any(isinstance(n, ast.ClassDef) for n in tree.body), path.name


def test_the_quorum_modules_import_one_another_without_a_circle():
    graph = {}
    for path in QUORUM.glob("*.py"):
        deps = set()
        for n in ast.walk(_tree(path)):
            if isinstance(n, ast.ImportFrom) and n.level == 1:
                deps.add(f"{n.module}.py")
        graph[path.name] = deps
    assert "transitions.py" in graph["leader.py"] and "leader.py" in graph["elections.py"]
    done: list[str] = []
    while len(done) < len(graph):
        ready = [m for m in graph if m not in done and graph[m] <= set(done)]
        assert ready, f"an import circle among {sorted(set(graph) - set(done))}"
        done += ready


def test_every_timer_key_has_a_handler_and_no_module_spells_one_as_a_string():
    assert set(core_module._TIMER_HANDLERS) == set(TimerKey)
    values = {k.value for k in TimerKey}
    for path in QUORUM.glob("*.py"):
        if path.name == "timer_keys.py":
            continue
        spelled = {n.value for n in ast.walk(_tree(path)) if isinstance(n, ast.Constant) and n.value in values}
        assert not spelled, f"{path.name} names timers {spelled} as strings: use TimerKey"


def test_a_timer_key_compares_hashes_and_prints_as_its_string():
    assert TimerKey.ELECTION == "election" and {"election": 1}[TimerKey.ELECTION] == 1
    assert {TimerKey.LEADER_CHECK: 2}["leader"] == 2
    assert (str(TimerKey.FETCH), f"{TimerKey.FETCH}", repr(TimerKey.FETCH)) == ("fetch", "fetch", "'fetch'")
    assert repr(TimerFired(TimerKey.PARKED, 5.0)) == repr(TimerFired("parked", 5.0))    # traces are unchanged


def test_the_core_keeps_its_state_in_one_slotted_object_and_fires_string_keyed_timers():
    voters = VoterSet(tuple(VoterNode(i, None, "localhost", 9000 + i) for i in (1, 2, 3)))
    now = [0.0]
    core = QuorumCore(QuorumConfig(1, election_timeout_ms=100), RecordLog(), VoterHistory(voters),
                      clock=lambda: now[0], rng=random.Random(1))
    core.start(core.state.election)
    assert not hasattr(core.state, "__dict__")
    at = core.deadline(TimerKey.ELECTION)
    assert 100 <= at < 200
    now[0] = at
    effects = core.step(TimerFired("election", at))      # a runtime that keeps plain strings
    assert core.state.kind.value == "Prospective" and effects
    core.reconfigure(dataclasses.replace(core.cfg, fetch_timeout_ms=3000))
    assert core.state.cfg.fetch_timeout_ms == 3000 and core.state.policy is core.cfg.unsafe
