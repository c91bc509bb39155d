"""Swarm testing (Groce et al., "Swarm Testing", ISSTA 2012; FoundationDB's simulation does the
same): each seed draws, from the seed alone, the configuration it runs, beside its faults and
client ops, so that a run of many seeds with no options covers many configurations, each with
some features left out (a bug that a busy mix of everything hides shows where its feature is
on and the others are off).

The dimensions (:data:`DIMENSIONS`), in the order of the draw; each is drawn for every seed,
whether or not it is pinned, so that pinning one leaves the others' draws as they were:

- ``voters``: 3 or 5;
- ``kraft_version``: 0 (static voters) or 1 (KIP-853: wipes and voter changes);
- ``workload``: one of sim/workloads.py's :data:`WORKLOADS`; ``brokers`` follow it (the queue
  workload runs on three of our brokers, the quorum's workloads on none);
- ``families``: the fault families switched on, each a coin (:data:`FAMILY_ON`) among the
  families the simulator draws (faults/registry.py ``SIMULATED``, those of the drawn
  kraft.version); at least one;
- ``read_fraction``, ``client_rate`` and ``fetch_max_records`` (records per Fetch response:
  small ones make followers catch up over many Fetches);
- ``admin_clients``: how many voter changes the simulated operators request at once (1: one
  at a time, each awaited, as a lone operator; 2 or 3: overlapping changes, as KIP-853's
  auto-join, so that the leader's refusals of overlapping changes are exercised);
- ``fault_max_ms``: how long a fault may last (long ones let a cut-off leader, a lagging
  follower or a shrunk ISR act for many election and replica-lag timeouts).

:func:`configure` turns options whose ``swarm`` names some dimensions into the concrete options
of one seed. Weights (:data:`CHOICES`) lean towards the choices that show more bugs per seed
(measured: README "Swarm testing").
"""
from __future__ import annotations

import dataclasses
import random

from faults import registry

from .workloads import WORKLOADS, workload_of

#: the dimensions a seed draws, in the order of the draw
DIMENSIONS = ("voters", "kraft_version", "workload", "brokers", "families", "read_fraction", "client_rate",
              "fetch_max_records", "admin_clients", "fault_max_ms")

#: the share of seeds that switch each fault family on (Groce et al.'s coin: the fewer
#: families a seed plays, the more often each one hits)
FAMILY_ON = 0.5
#: (value, weight) choices of the plain dimensions. The weights lean to the settings under
#: which more planted bugs show per seed (measured, README "Swarm testing"): reads, Fetches of
#: one record (a follower catches up over many), and long faults.
CHOICES: dict[str, tuple[tuple[object, float], ...]] = {
    "voters": ((3, 3), (5, 1)),
    "kraft_version": ((0, 1), (1, 1)),
    "read_fraction": ((0.1, 1), (0.25, 1), (0.5, 2)),
    "client_rate": ((20.0, 1), (40.0, 2), (80.0, 1)),
    "fetch_max_records": ((2000, 1), (100, 1), (1, 2)),
    "admin_clients": ((1, 2), (2, 1), (3, 1)),
    "fault_max_ms": ((5000.0, 1), (12000.0, 2)),
}


def _choose(rng: random.Random, choices) -> object:
    values = [v for v, _ in choices]
    return rng.choices(values, [w for _, w in choices])[0]


def draw(seed: int) -> dict:
    """Every dimension's draw for ``seed`` (a pure function of it): ``{dimension: value}`` but
    ``brokers`` (they follow the workload, :func:`configure`); ``families`` the tuple of those
    whose coin came up, in faults/registry.py ``SIMULATED`` order, whatever the kraft.version
    (:func:`configure` keeps those it can play), and ``family_fallback`` in [0, 1), which picks
    the one family played when none of those can be."""
    rng = random.Random(f"swarm/{seed}")
    out: dict = {}
    out["voters"] = _choose(rng, CHOICES["voters"])
    out["kraft_version"] = _choose(rng, CHOICES["kraft_version"])
    names = list(WORKLOADS)
    out["workload"] = rng.choices(names, [WORKLOADS[n].weight for n in names])[0]
    out["families"] = tuple(f for f in registry.SIMULATED if rng.random() < FAMILY_ON)
    out["family_fallback"] = rng.random()
    for dim in ("read_fraction", "client_rate", "fetch_max_records", "admin_clients", "fault_max_ms"):
        out[dim] = _choose(rng, CHOICES[dim])
    return out


def _families(drawn: tuple[str, ...], kraft_version: int, fallback: float) -> tuple[str, ...]:
    """The drawn families a schedule at ``kraft_version`` can play; one of those it can (picked
    by ``fallback``, in [0, 1)) when none of the drawn can."""
    able = [f for f in registry.SIMULATED if kraft_version == 1 or not registry.FAULTS[f].sim.kraft_v1_only]
    on = tuple(f for f in drawn if f in able)
    return on or (able[int(fallback * len(able))],)


def configure(opts, seed: int):
    """The concrete options of ``seed``: ``opts`` (a :class:`sim.api.SimOptions`) with each
    dimension its ``swarm`` names drawn from the seed (:func:`draw`) and ``swarm`` emptied;
    ``opts`` itself when it names none. A drawn workload that cannot run on pinned ``brokers``
    gives way to :func:`workload_of` them; pinned ``brokers`` stay as given."""
    if not opts.swarm:
        return opts
    d = draw(seed)
    free = set(opts.swarm)
    changes: dict = {"swarm": ()}
    for dim in ("voters", "kraft_version", "read_fraction", "client_rate", "fetch_max_records", "admin_clients",
                "fault_max_ms"):
        if dim in free:
            changes[dim] = d[dim]
    kv = changes.get("kraft_version", opts.kraft_version)
    workload = opts.workload
    if "workload" in free:
        workload = d["workload"]
        if "brokers" not in free and (WORKLOADS[workload].brokers > 0) != (opts.brokers > 0):
            workload = workload_of(opts.brokers)
        changes["workload"] = workload
    if "brokers" in free:
        changes["brokers"] = WORKLOADS[workload or workload_of(0)].brokers
    if "families" in free:
        changes["families"] = _families(d["families"], kv, d["family_fallback"])
    return dataclasses.replace(opts, **changes)


def describe(opts) -> str:
    """One line naming a concrete configuration's every dimension (what a failing seed drew)."""
    fams = ",".join(opts.families) if opts.families is not None else "all"
    return (f"voters {opts.voters}, kraft.version {opts.kraft_version}, workload {opts.workload_name}, "
            f"brokers {opts.brokers}, faults {fams}, read fraction {opts.read_fraction:g}, "
            f"client rate {opts.client_rate:g}/s, fetch max records {opts.fetch_max_records}, "
            f"admin clients {opts.admin_clients}, faults up to {opts.fault_max_ms / 1000:g} s")


def command_flags(opts) -> str:
    """The ``kraft-chaos simulate`` flags that give ``opts`` (all but the seeds): each dimension
    not in ``opts.swarm`` pinned (so the flags of a seed's concrete options repeat it with no
    draw), ``--sim-seconds`` and ``--unsafe``."""
    free = set(opts.swarm)
    out = [f"--sim-seconds {opts.sim_seconds:g}"]
    if "voters" not in free:
        out.append(f"--voters {opts.voters}")
    if "kraft_version" not in free:
        out.append(f"--kraft-version {opts.kraft_version}")
    if "workload" not in free:
        out.append(f"--workload {opts.workload_name}")
    if "brokers" not in free:
        out.append(f"--brokers {opts.brokers}")
    if "families" not in free:
        fams = 'all' if opts.families is None else ','.join(opts.families) or 'none'
        out.append(f"--faults {fams}")
    for dim in ("read_fraction", "client_rate", "fetch_max_records", "admin_clients", "fault_max_ms"):
        if dim not in free:
            out.append(f"--{dim.replace('_', '-')} {getattr(opts, dim):g}")
    if opts.unsafe:
        out.append(f"--unsafe {','.join(opts.unsafe)}")
    return " ".join(out)
