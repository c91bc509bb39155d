"""Scenario files: a fault schedule as data, that ``kraft-chaos scenario run FILE`` repeats.

A scenario is TOML: a ``[run]`` table of ``kraft-chaos run`` settings
(:class:`harness.config.run.RunConfig` fields: ``seed``, ``workload``,
``nodes``, ``unsafe``, ``rate``, ``concurrency``, ...; for Apache Kafka ``db = "kafka"``,
``kafka_version`` or ``kafka_dist`` (a distribution's path, relative to the file),
``kraft_version``, and ``kafka_props``, a table of extra ``server.properties``) and
``[[step]]`` tables, run in order on the nemesis thread while the clients run:

```toml
[[step]]                      # a nemesis op, as the history records it
nemesis = "start-partition"
value = { kind = "isolate-leader" }   # or kind "nodes" with targets, or a grudge

[[step]]
sleep = 2.5                   # seconds

[[step]]
wait = "leader"               # leader | lagging | caught-up | no-leader
timeout = 10                  # seconds; required for every wait
# lagging: node = "n3", records = 100 (behind the leader's log end by at least that)
# caught-up: node = "n3" (its log end reached the leader's)

[[step]]
clients = "pause"             # pause | resume: stop or restart issuing client ops

[[step]]                      # name the nodes by role, once a leader is known
bind = ["S1", "S2", "S3"]     # S1: the leader then; S2, S3, ...: the other quorum nodes in order
timeout = 30                  # seconds; later steps may name S1.. in targets, grudges and node
```

Disk faults are nemesis steps too: ``start-wipe`` (SIGKILL, delete the data,
format again with a fresh directory id; the node stays down) and
``stop-wipe`` (restart it); voter changes (KIP-853, kraft.version 1) are ``start-membership``
steps, e.g. ``value = { kind = "nodes", targets = ["S3"], action = "replace" }`` (action
``remove``, ``add`` or ``replace``; nemesis/membership.py). A bad step, a missing field, or a wait with no
timeout is a :class:`ScenarioError` naming the file and line (exit 3). The steps run as a
generator of harness/run/scenario_steps.py.
"""
from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import tomli_w

from harness.config.options import WORKLOAD_OPTIONS
from nemesis.faults import Fault
from targets.registry import DEFAULT_TARGET, target_spec

WAITS = ("leader", "lagging", "caught-up", "no-leader")
CLIENT_PHASES = ("pause", "resume")
#: RunConfig fields a scenario's [run] table may set
RUN_FIELDS = ("seed", "workload", "nodes", "unsafe", "fetch_max_records", "rate", "concurrency", "subnet",
              "base_image", "store", "keep_cluster", "segment_bytes", "db", "kraft_version", "kafka_version", "kafka_topology",
              "kafka_dist", "kafka_props", "client", "transaction_version", "brokers", "nemesis_targets",
              *WORKLOAD_OPTIONS)
ROLE = re.compile(r"S[0-9]+")

#: the built-in scenarios shipped with the package (``kraft-chaos scenario list``)
SCENARIOS_DIR = Path(__file__).parent / "scenarios"
#: the repository's example scenarios (one per ``--unsafe`` switch they show), when present
EXAMPLES_DIR = Path(__file__).parents[2] / "examples" / "scenarios"


def builtin_scenarios() -> dict[str, Path]:
    """The built-in scenario files by name: ``harness/config/scenarios`` (``disk-loss-timeline-a``
    ...) and, in a checkout, ``examples/scenarios``."""
    paths = sorted(SCENARIOS_DIR.glob("*.toml")) + sorted(EXAMPLES_DIR.glob("*.toml"))
    return {p.stem: p for p in paths}


class ScenarioError(ValueError):
    """A scenario file is malformed; the message names the file and line."""


def _step_lines(text: str) -> list[int]:
    """The 1-based line of each ``[[step]]`` header, in order."""
    return [i for i, line in enumerate(text.splitlines(), start=1) if re.match(r"\s*\[\[\s*step\s*\]\]", line)]


def check_step(step: Any) -> str | None:
    """What is wrong with one step (a dict), or None."""
    if not isinstance(step, dict):
        return "a step must be a table"
    kinds = [k for k in ("nemesis", "sleep", "wait", "clients", "bind") if k in step]
    if len(kinds) != 1:
        return "a step needs exactly one of nemesis, sleep, wait, clients, bind"
    kind = kinds[0]
    if kind == "nemesis":
        f = step["nemesis"]
        if not isinstance(f, str) or not re.fullmatch(r"(start|stop)-[a-z-]+", f):
            return f"nemesis must be start-<family> or stop-<family>, got {f!r}"
        value = step.get("value")
        if not isinstance(value, dict) or "kind" not in value:
            return "a nemesis step needs value = { kind = ... }"
        try:
            Fault.from_value(f.partition("-")[2], value)
        except ValueError as e:
            return str(e)
    elif kind == "sleep":
        if not isinstance(step["sleep"], (int, float)) or isinstance(step["sleep"], bool) or step["sleep"] < 0:
            return f"sleep must be a number of seconds >= 0, got {step['sleep']!r}"
    elif kind == "wait":
        if step["wait"] not in WAITS:
            return f"wait must be one of {', '.join(WAITS)}, got {step['wait']!r}"
        t = step.get("timeout")
        if not isinstance(t, (int, float)) or isinstance(t, bool) or t <= 0:
            return "a wait needs timeout = seconds (> 0)"
        if step["wait"] in ("lagging", "caught-up") and not isinstance(step.get("node"), str):
            return f"wait {step['wait']} needs node = \"nX\""
        if step["wait"] == "lagging" and not (isinstance(step.get("records"), int) and step["records"] > 0):
            return "wait lagging needs records = N (> 0)"
    elif kind == "bind":
        roles = step["bind"]
        if not (isinstance(roles, list) and roles and all(isinstance(r, str) and ROLE.fullmatch(r) for r in roles)
                and len(set(roles)) == len(roles)):
            return f"bind must be a list of distinct role names S1, S2, ..., got {roles!r}"
        t = step.get("timeout")
        if not isinstance(t, (int, float)) or isinstance(t, bool) or t <= 0:
            return "a bind needs timeout = seconds (> 0): it waits for a leader"
    elif step["clients"] not in CLIENT_PHASES:
        return f"clients must be one of {', '.join(CLIENT_PHASES)}, got {step['clients']!r}"
    return None


def _check_kafka_fields(run: dict) -> tuple[str, str] | None:
    """``(key, problem)`` for a malformed Kafka setting of a ``[run]`` table: ``kafka_version``
    and ``kafka_dist`` must be strings, ``kafka_props`` a table of property names to strings,
    numbers or booleans (what a Kafka node's ``server.properties`` takes); None when fine."""
    for key in ("kafka_version", "kafka_dist"):
        if key in run and (not isinstance(run[key], str) or not run[key]):
            return key, f"must be a non-empty string, got {run[key]!r}"
    props = run.get("kafka_props")
    if props is not None:
        if not isinstance(props, dict):
            return "kafka_props", f"must be a table of server properties, got {props!r}"
        for k, v in props.items():
            if not isinstance(v, (str, int, float, bool)):
                return "kafka_props", f"property {k!r} must be a string, number or boolean, got {v!r}"
    return None


def _line_of_key(text: str, key: str) -> int:
    """The 1-based line that sets ``key`` (1 when none does)."""
    for i, line in enumerate(text.splitlines(), start=1):
        if re.match(rf"\s*{re.escape(key)}\s*=", line):
            return i
    return 1


def load(path: Path | str) -> dict:
    """Parse and check the scenario at ``path``: ``{"run": {...}, "steps": [...]}``.

    Raises :class:`ScenarioError` naming the file and line, ``FileNotFoundError``.
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{path}: not TOML: {e}") from None
    unknown = set(doc) - {"run", "step"}
    if unknown:
        raise ScenarioError(f"{path}:1: unknown table(s) {sorted(unknown)}: a scenario has [run] and [[step]]")
    run = doc.get("run", {})
    if not isinstance(run, dict):
        raise ScenarioError(f"{path}:1: [run] must be a table")
    bad = set(run) - set(RUN_FIELDS)
    if bad:
        raise ScenarioError(f"{path}: [run] has unknown setting(s) {sorted(bad)}: choose from {', '.join(RUN_FIELDS)}")
    problem = _check_kafka_fields(run)
    if problem:
        raise ScenarioError(f"{path}:{_line_of_key(text, problem[0])}: [run] {problem[0]}: {problem[1]}")
    steps = doc.get("step", [])
    if not isinstance(steps, list) or not steps:
        raise ScenarioError(f"{path}: no [[step]]")
    lines = _step_lines(text)
    for i, step in enumerate(steps):
        problem = check_step(step)
        if problem:
            line = lines[i] if i < len(lines) else 1
            raise ScenarioError(f"{path}:{line}: step {i + 1}: {problem}")
    return {"run": run, "steps": steps}


def _inline(v: Any) -> str:
    """``v`` as a TOML value on one line (tables inline)."""
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_inline(x)}" for k, x in v.items()) + " }" if v else "{}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_inline(x) for x in v) + "]"
    return tomli_w.dumps({"v": v}).strip()[len("v = "):]


def _key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else tomli_w.dumps({k: 0}).split(" = ")[0]


def dumps(run: dict, steps: list[dict], comment: str = "") -> str:
    """A scenario as TOML text (``[run]`` then one ``[[step]]`` per step, values inline)."""
    out = [f"# {line}" for line in comment.splitlines()] + ([""] if comment else [])
    out.append("[run]")
    out += [f"{_key(k)} = {_inline(v)}" for k, v in run.items() if v is not None]
    for step in steps:
        out += ["", "[[step]]"]
        out += [f"{_key(k)} = {_inline(v)}" for k, v in step.items()]
    return "\n".join(out) + "\n"


def retarget(run: dict, db: str) -> dict:
    """A scenario's ``[run]`` table for target ``db``: unchanged when the file is written for
    ``db`` (its ``db``, default kraft); else without the settings only the file's target has
    (``TargetSpec.own_fields``, e.g. kraft's ``unsafe``), and with ``db``. Raises
    ``ValueError`` for an unknown target."""
    written_for = target_spec(run.get("db", DEFAULT_TARGET))
    if db == written_for.name:
        return dict(run)
    out = {k: v for k, v in run.items() if k not in written_for.own_fields}
    out["db"] = target_spec(db).name
    return out
