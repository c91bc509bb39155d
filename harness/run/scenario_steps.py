"""A scenario's steps as the nemesis thread's generator, and the gate they share with the
clients (pause, resume, done, bound roles). The file format: harness/config/scenario.py."""
from __future__ import annotations

import logging

from generator import Context, Generator, Seq, Sleep, Wait, WaitFor
from harness.config.scenario import ROLE

log = logging.getLogger("kraft_chaos.scenario")


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
#: change waits up to 20 s for a catch-up, and on Kafka runs a JVM tool per RPC; a clean stop waits
#: for the node's own shutdown, a Kafka broker's controlled one)
SLOW_OPS = {"start-wipe": 20.0, "stop-wipe": 5.0, "start-membership": 45.0, "stop-membership": 30.0,
            "start-stop": 10.0}


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
