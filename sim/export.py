"""A shrunk simulated trace's faults as a scenario file (harness/config/scenario.py's TOML) that
``kraft-chaos scenario run FILE`` replays on a real cluster of our quorum.

The faults are written as they landed in the simulator, with explicit targets (kind
``nodes``; a partition as its ``grudge``) named by role: a ``bind`` step names the real
cluster's leader ``S1`` and the other nodes ``S2``, ``S3``, ... in id order, as the
simulator's leader at the first fault and its other nodes were; a fault aimed at the leader
of its moment keeps its real kind (``kill`` ``leader``, ``isolate-leader``, ...: its family's
leader kinds); then ``sleep`` steps between the starts and stops. How each family is written
is its spec's (``faults.spec.SimHooks``: ``export_nodes``, ``export_params``). The simulator
runs the real quorum timeouts (sim/quorum_nodes.py), so the timing carries over, though a
real cluster's scheduling jitter may shift it. A family no real nemesis plays (a clock jump)
is left out, and named in the file's comment (its spec's ``left_out``).
"""
from __future__ import annotations

from pathlib import Path

import tomli_w

from faults.registry import fault_spec

from .shrink import ShrinkResult
from .swarm import command_flags

#: how long the replay waits for the first leader (s)
LEADER_TIMEOUT_S = 60


def roles(applied: list[dict], ids: list[int]) -> dict[int, str]:
    """Node id -> role: the simulator's leader when the first fault started is ``S1``, the
    others ``S2``, ``S3``, ... in id order; plain ``n<id>`` names when no leader was known."""
    lead = applied[0].get("leader") if applied else None
    if lead is None:
        return {i: f"n{i}" for i in ids}
    order = [lead] + [i for i in ids if i != lead]
    return {i: f"S{k + 1}" for k, i in enumerate(order)}


def fault_steps(applied: list[dict], names: dict[int, str] | None = None) -> tuple[list[dict], list[str]]:
    """``(steps, left out)``: scenario steps for the faults ``applied`` (sim/nemesis.py's record),
    times relative to the first fault's start; nodes named by ``names`` (default ``n<id>``)."""
    names = names or {}

    def _names(ids) -> list[str]:
        return [names.get(i, f"n{i}") for i in ids]
    events: list[tuple[float, int, dict]] = []
    left_out: list[str] = []
    for k, a in enumerate(applied):
        fam, targets, params = a["family"], a["targets"], dict(a.get("params") or {})
        params.pop("kind", None)
        spec = fault_spec(fam)
        if spec.sim.left_out is not None:
            left_out.append(spec.sim.left_out(a, _names(targets), params))
            continue
        if not targets:
            continue
        if spec.aims_at_leader(a["kind"]) and a.get("leader") in targets:
            value = {"kind": a["kind"]}        # aimed at the leader then: the real nemesis finds it
        else:
            value = spec.sim.export_nodes(a, _names)
        value.update(spec.sim.export_params(params))
        events.append((a["at_ms"], 2 * k, {"nemesis": f"start-{fam}", "value": value}))
        events.append((a["at_ms"] + a["duration_ms"], 2 * k + 1, {"nemesis": f"stop-{fam}", "value": value}))
    events.sort(key=lambda e: (e[0], e[1]))
    steps: list[dict] = []
    t = events[0][0] if events else 0.0
    for at, _, step in events:
        if at - t >= 1:
            steps.append({"sleep": round((at - t) / 1000.0, 3)})
            t = at
        steps.append(step)
    return steps, left_out


def write_scenario(opts, seed: int, shrunk: ShrinkResult, out_dir: Path, subnet: str | None = None) -> Path:
    """Write ``out_dir/sim-seed-<seed>.toml`` for the shrunk trace of ``seed``; returns its path."""
    applied = shrunk.result.applied
    names = roles(applied, list(range(1, opts.voters + 1)))
    steps, left_out = fault_steps(applied, names)
    run: dict = {"seed": seed, "workload": opts.workload_name, "nodes": opts.voters}
    if opts.brokers:
        run["brokers"] = opts.brokers
    if opts.unsafe:
        run["unsafe"] = list(opts.unsafe)
    if opts.kraft_version:
        run["kraft_version"] = opts.kraft_version
    if subnet:
        run["subnet"] = subnet
    if any(n.startswith("S") for n in names.values()):
        first_leader = [{"sleep": 2.0}, {"bind": [names[i] for i in sorted(names, key=names.get)],
                                         "timeout": LEADER_TIMEOUT_S}]
    else:
        first_leader = [{"wait": "leader", "timeout": LEADER_TIMEOUT_S}, {"sleep": 2.0}]
    doc = {"run": run, "step": first_leader + steps}
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"sim-seed-{seed}.toml"
    o = shrunk.original
    comment = [f"kraft-chaos simulate --seed {seed} {command_flags(opts)} --shrink: "
               f"{len(o.faults)} fault(s) -> {len(shrunk.plan.faults)}, {len(o.client_ops)} client op(s) -> "
               f"{len(shrunk.plan.client_ops)}, in {shrunk.runs} simulated run(s)",
               f"violated in the simulator: {shrunk.target}: {shrunk.result.first[1]}"]
    comment += [f"left out: {x}" for x in left_out]
    comment.append(f"repeat with: kraft-chaos scenario run {path}")
    text = "".join(f"# {line}\n" for line in comment) + "\n" + tomli_w.dumps(doc)
    path.write_text(text, encoding="utf-8")
    return path
