"""Scenario files: a fault schedule as data, that ``kraft-chaos scenario run FILE`` repeats.

A scenario is TOML: a ``[run]`` table of ``kraft-chaos run`` settings
(:class:`harness.runner.RunConfig` fields: ``seed``, ``workload``,
``nodes``, ``unsafe``, ``rate``, ``concurrency``, ...) and ``[[step]]``
tables, run in order on the nemesis thread while the clients run:

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
timeout is a :class:`ScenarioError` naming the file and line (exit 3).
"""
from __future__ import annotations

import logging
import re
import tomllib
from pathlib import Path
from typing import Any

import tomli_w

from generator import Context, Generator, Seq, Sleep, Wait, WaitFor

from .run_config import WORKLOAD_OPTIONS

log = logging.getLogger("kraft_chaos.scenario")

WAITS = ("leader", "lagging", "caught-up", "no-leader")
CLIENT_PHASES = ("pause", "resume")
#: RunConfig fields a scenario's [run] table may set
RUN_FIELDS = ("seed", "workload", "nodes", "unsafe", "fetch_max_records", "rate", "concurrency", "subnet",
              "base_image", "store", "keep_cluster", "segment_bytes", "db", "kraft_version", "kafka_version", "kafka_topology",
              "brokers", "nemesis_targets", *WORKLOAD_OPTIONS)
ROLE = re.compile(r"S[0-9]+")


class ScenarioError(ValueError):
    """A scenario file is malformed; the message names the file and line."""


class ClientGate:
    """Shared between a scenario's steps and the client generator: pause/resume, done, and
    the role names a ``bind`` step gave (``{"S1": "n2", ...}``)."""

    def __init__(self) -> None:
        self.paused = False
        self.done = False
        self.roles: dict[str, str] = {}

    def resolve(self, name):
        """``name`` with a bound role (``S1``...) replaced by its node; ValueError for a
        role no ``bind`` step has named."""
        if isinstance(name, str) and ROLE.fullmatch(name):
            if name not in self.roles:
                raise ValueError(f"scenario role {name} is not bound: add a bind step before it")
            return self.roles[name]
        return name

    def resolve_value(self, value: dict) -> dict:
        """A nemesis step's value with roles replaced in ``targets``, ``to`` and ``grudge``."""
        out = dict(value)
        for key in ("targets", "to"):
            if isinstance(out.get(key), list):
                out[key] = [self.resolve(n) for n in out[key]]
        if isinstance(out.get("grudge"), dict):
            out["grudge"] = {self.resolve(k): [self.resolve(n) for n in v] if isinstance(v, list) else v
                             for k, v in out["grudge"].items()}
        return out


class GatedClients(Generator):
    """The clients' generator while a scenario runs: nothing while paused, done when it is."""

    def __init__(self, gate: ClientGate, gen: Generator):
        self.gate, self.gen = gate, gen

    def op(self, ctx: Context):
        if self.gate.done:
            return None
        if self.gate.paused:
            return Wait(ctx.time + 0.05)
        return self.gen.op(ctx)

    def update(self, ctx, invoke, completion) -> None:
        self.gen.update(ctx, invoke, completion)


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
        from nemesis.faults import Fault
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


def run_table(config) -> dict:
    """The ``[run]`` table that repeats ``config`` (a RunConfig): its :data:`RUN_FIELDS`
    that differ from the defaults, plus the seed and workload."""
    from harness.runner import RunConfig
    defaults = RunConfig(seed=0)
    out = {}
    for name in RUN_FIELDS:
        v = getattr(config, name)
        if name in ("seed", "workload") or v != getattr(defaults, name):
            out[name] = list(v) if isinstance(v, (list, tuple)) else v
    return out


def _wait_cond(step: dict, gate: ClientGate):
    kind = step["wait"]

    def cond(ctx: Context) -> bool:
        view = ctx.view
        if view is None:
            return False
        if kind == "leader":
            return view.leader is not None
        if kind == "no-leader":
            return view.leader is None
        leader_end = view.log_end.get(view.leader) if view.leader else None
        mine = view.log_end.get(gate.resolve(step["node"]))
        if leader_end is None or mine is None:
            return False
        if kind == "lagging":
            return leader_end - mine >= step["records"]
        return mine >= leader_end
    return cond


class _Op(Generator):
    """One nemesis op, its role names resolved when it is issued."""

    def __init__(self, op: dict, gate: ClientGate):
        self._op: dict | None = op
        self.gate = gate

    def op(self, ctx: Context):
        op, self._op = self._op, None
        if op is not None:
            op = {**op, "value": self.gate.resolve_value(op["value"])}
        return op


def bind_roles(roles: list[str], leader: str, nodes: list[str]) -> dict[str, str]:
    """``{roles[0]: leader, roles[1]: the first other node of nodes, ...}``; ValueError when
    there are more roles than nodes."""
    order = [leader] + [n for n in nodes if n != leader]
    if len(roles) > len(order):
        raise ValueError(f"bind names {len(roles)} roles but the quorum has {len(order)} nodes")
    return dict(zip(roles, order))


class _Bind(Generator):
    """Waits (up to ``timeout_s``) for the monitor to see a leader, then binds the roles."""

    def __init__(self, roles: list[str], timeout_s: float, gate: ClientGate, nodes: list[str]):
        self.roles, self.gate, self.nodes = roles, gate, nodes
        self.wait = WaitFor(lambda ctx: ctx.view is not None and ctx.view.leader is not None, timeout_s,
                            poll_s=0.05)
        self.done = False

    def op(self, ctx: Context):
        if self.done:
            return None
        nxt = self.wait.op(ctx)
        if nxt is not None:
            return nxt
        self.done = True
        leader = ctx.view.leader if ctx.view is not None else None
        if leader is None:
            raise ValueError(f"scenario bind {self.roles}: no leader seen")
        self.gate.roles.update(bind_roles(self.roles, leader, self.nodes))
        log.info("scenario roles: %s", ", ".join(f"{r}={n}" for r, n in self.gate.roles.items()))
        return None


class _Call(Generator):
    """Runs ``fn()`` once when asked, then done (no op)."""

    def __init__(self, fn):
        self.fn, self.done = fn, False

    def op(self, ctx: Context):
        if not self.done:
            self.done = True
            self.fn()
        return None


#: seconds of clients after the last step
TAIL_S = 3.0


def budget_s(steps: list[dict]) -> float:
    """The most a scenario can take (s): its sleeps, every wait's and bind's timeout, a
    second per nemesis op (:data:`SLOW_OPS` more), the tail."""
    return (sum(float(s.get("sleep", 0)) + float(s.get("timeout", 0)) for s in steps)
            + sum(1.0 + SLOW_OPS.get(s["nemesis"], 0.0) for s in steps if "nemesis" in s) + TAIL_S)


#: extra seconds a nemesis op may take (a wipe formats storage: a JVM start on Kafka; a voter
#: change waits up to 20 s for a catch-up, and on Kafka runs a JVM tool per RPC)
SLOW_OPS = {"start-wipe": 20.0, "stop-wipe": 5.0, "start-membership": 45.0, "stop-membership": 30.0}


def steps_generator(steps: list[dict], gate: ClientGate, tail_s: float = TAIL_S,
                    nodes: list[str] | None = None) -> Generator:
    """The nemesis thread's generator for ``steps``; when they are over (and ``tail_s``
    more seconds of clients), the gate closes and the clients stop. ``nodes``: the quorum
    nodes a ``bind`` step names roles from, in order."""
    items: list[Generator] = []
    for step in steps:
        if "nemesis" in step:
            items.append(_Op({"f": step["nemesis"], "value": dict(step["value"])}, gate))
        elif "sleep" in step:
            items.append(Sleep(float(step["sleep"])))
        elif "bind" in step:
            items.append(_Bind(list(step["bind"]), float(step["timeout"]), gate, list(nodes or [])))
        elif "wait" in step:
            items.append(WaitFor(_wait_cond(step, gate), float(step["timeout"]), poll_s=0.05))
        else:
            paused = step["clients"] == "pause"
            items.append(_Call(lambda p=paused: setattr(gate, "paused", p)))
    items.append(Sleep(tail_s))
    items.append(_Call(lambda: setattr(gate, "done", True)))
    return Seq(items)
