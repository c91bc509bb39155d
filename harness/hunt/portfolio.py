"""The hunt's portfolio: which simulator configurations and which real-cluster runs a hunt
spends its budget on, in which order, and how long each real run may be.

Pure (no I/O, no clock): the same ``--seed``, target and workloads give the same rotation.

**Simulation** (our quorum only): :data:`SIM_CONFIGS`, swarm testing (each seed draws its own
configuration), or with ``--no-swarm`` :data:`FIXED_CONFIGS`, quorum-only and with brokers, each
at kraft.version 0 and 1; up to :data:`SIM_SEEDS` seeds each, within :data:`SIM_SHARE` of the
budget, interleaved in rounds of growing size (:data:`SIM_ROUNDS`, :func:`sim_targets`): round
``k`` brings every configuration, in order, up to ``sim_targets()[k]`` seeds, so that a bug
only a later configuration shows is found within seconds while each configuration still gets
its seeds.

**Real runs**: :func:`rotation` cycles through :func:`hunt_schedules` (the target's default
schedule first, then the schedules its bug catalogues name, in an order drawn from the seed),
and through the workloads and kraft.version 0 and 1: schedule ``j`` of round ``r`` gets
``k = j + r`` and runs workload ``k mod W`` of those it can run and kraft.version
``(k div W) mod 2``, so over ``2W`` rounds every schedule meets every pair. Run ``n`` of the
rotation has seed ``seed + n``. A schedule written for the target's default workload runs any
of the hunt's workloads (the queue workload gets brokers and faults on them too,
``WorkloadSpec.nemesis_targets``); one written for another workload, or a scenario, runs its
own. At kraft.version 1 a schedule's faults gain :data:`KV1_FAULTS` (voter changes and wipes,
KIP-853's paths) unless it is a scenario, fixes its kraft.version, faults the brokers too, or
its workload records no final committed quorum log (``WorkloadSpec.final_log``).
"""
from __future__ import annotations

import dataclasses
import random
from typing import Any, Iterable, Iterator

from harness.catalogue.bugs import CATALOGUE
from harness.catalogue.kafka_bugs import KAFKA_CANDIDATES, KAFKA_CATALOGUE
from harness.config.schedules import SCHEDULES
from harness.run.scenario_steps import budget_s
from targets.registry import target_spec
from workloads.registry import WORKLOAD_SPECS, workload_spec

#: at most this share of the budget goes to the simulator
SIM_SHARE = 0.25
#: seeds per simulator configuration, at most
SIM_SEEDS = 1000
#: a real run's time limit is at most this (s), so that the rotation covers many schedules
RUN_CAP_S = 90.0
#: ... and never cut below this (s): shorter runs see too few faults
MIN_RUN_S = 30.0
#: faults a kraft.version 1 run adds to its schedule's: KIP-853 voter changes and wipes
KV1_FAULTS = ("membership", "wipe")


@dataclasses.dataclass(frozen=True)
class SimConfig:
    """One simulator configuration: ``brokers`` (0: the quorum only) and ``kraft_version``;
    both None: swarm testing, each seed draws its whole configuration (sim/swarm.py)."""

    brokers: int | None
    kraft_version: int | None

    @property
    def swarm(self) -> bool:
        """Whether each seed draws its configuration."""
        return self.brokers is None

    def label(self) -> str:
        """``swarm``, ``quorum`` or ``quorum+3 brokers``."""
        if self.swarm:
            return "swarm"
        return "quorum" + (f"+{self.brokers} brokers" if self.brokers else "")

    def tag(self) -> str:
        """The label with its kraft.version (``quorum kv1``), or ``swarm``."""
        return self.label() if self.swarm else f"{self.label()} kv{self.kraft_version}"


#: swarm testing: every seed draws its own configuration (the hunt's default)
SWARM = SimConfig(None, None)
#: fixed configurations (``--no-swarm``), in order: the quorum alone and with brokers, each at
#: kraft.version 0 and 1
FIXED_CONFIGS = (SimConfig(0, 0), SimConfig(0, 1), SimConfig(3, 0), SimConfig(3, 1))
#: what the simulation phase runs by default, in order
SIM_CONFIGS = (SWARM,)


def sim_configs(swarm: bool) -> tuple[SimConfig, ...]:
    """The configurations the simulation phase runs: :data:`SIM_CONFIGS` (swarm), else
    :data:`FIXED_CONFIGS`."""
    return SIM_CONFIGS if swarm else FIXED_CONFIGS


#: seeds each configuration gets in each round of the simulation phase (sum: :data:`SIM_SEEDS`).
#: The first round is small so that the last configuration starts a few seconds into the hunt
#: (30 seeds of the others first, ~0.2 s each on two cores); the rounds then grow ~2.5x so that a
#: phase is 5 batches per configuration (each costs a worker pool, the wait for its last seeds
#: and the lock), and a configuration is never more than one round ahead of another.
SIM_ROUNDS = (10, 40, 100, 250, 600)


def sim_targets(seeds: int = SIM_SEEDS, rounds: tuple[int, ...] = SIM_ROUNDS) -> list[int]:
    """The seeds each configuration has run by the end of each round: the running sums of
    ``rounds`` cut at ``seeds``, the last one ``seeds`` (a last round added when ``rounds`` fall
    short), e.g. ``[10, 50, 150, 400, 1000]``."""
    out: list[int] = []
    total = 0
    for n in rounds:
        total = min(seeds, total + n)
        if total > (out[-1] if out else 0):
            out.append(total)
    if seeds > 0 and (not out or out[-1] < seeds):
        out.append(seeds)
    return out


@dataclasses.dataclass(frozen=True)
class Play:
    """One real-cluster run of the rotation: ``n`` (its place, from 0), ``schedule`` (a
    :data:`SCHEDULES` name), ``workload``, ``kraft_version`` (0 or 1) and ``seed``."""

    n: int
    schedule: str
    workload: str
    kraft_version: int
    seed: int


def default_workloads(db: str) -> tuple[str, ...]:
    """Every workload that runs on target ``db`` (workloads/registry.py), in registry order."""
    return tuple(name for name, spec in WORKLOAD_SPECS.items() if db in spec.dbs)


def check_workloads(db: str, workloads: Iterable[str]) -> tuple[str, ...]:
    """``workloads`` (each once, in order) after checking each runs on ``db``; raises
    ``ValueError`` naming one that does not (or an unknown one)."""
    out = tuple(dict.fromkeys(workloads))
    for name in out:
        spec = workload_spec(name)
        if db not in spec.dbs:
            raise ValueError(f"workload {name!r} does not run on --db {db}: it supports {', '.join(spec.dbs)}")
    return out


def default_schedule(db: str) -> str:
    """Target ``db``'s default schedule: the first :data:`SCHEDULES` entry written for it
    (``default``, what ``make run`` runs; ``kafka-default``, ``make run DB=kafka``'s).
    Raises ``ValueError`` when there is none."""
    for name, sched in SCHEDULES.items():
        if sched.db == db:
            return name
    raise ValueError(f"no schedule is written for --db {db}")


def hunt_schedules(db: str, seed: int) -> list[str]:
    """The schedules a hunt on ``db`` rotates through: the default first, then every schedule
    a bug catalogue names for ``db`` (harness/catalogue/bugs.py, kafka_bugs.py: its entries and
    its candidates), each once, in an order drawn from ``seed``."""
    first = default_schedule(db)
    named = dict.fromkeys([*(b.schedule for b in (*CATALOGUE, *KAFKA_CATALOGUE)),
                           *(s for c in KAFKA_CANDIDATES for s in c.schedules)])
    rest = [s for s in named if SCHEDULES[s].db == db and s != first]
    random.Random(f"{seed}:hunt:schedules").shuffle(rest)
    return [first, *rest]


def schedule_workloads(name: str, workloads: tuple[str, ...]) -> list[str]:
    """The hunt's ``workloads`` that schedule ``name`` runs: any of them when it is written for
    its target's default workload and is no scenario, else only its own (possibly none)."""
    sched = SCHEDULES[name]
    own = sched.run_config().get("workload") or target_spec(sched.db).default_workload
    if sched.scenario is None and own == target_spec(sched.db).default_workload:
        return list(workloads)
    return [own] if own in workloads else []


def fixed_kraft_version(name: str) -> int | None:
    """The kraft.version schedule ``name`` fixes (a scenario's ``[run]`` table), or None."""
    return SCHEDULES[name].run_config().get("kraft_version")


def rotation_order(db: str, workloads: tuple[str, ...], seed: int) -> list[tuple[str, list[str]]]:
    """One round of the rotation: ``[(schedule, the workloads it runs)]``, the schedules that
    run any of ``workloads`` in :func:`hunt_schedules` order. Raises ``ValueError`` when none
    does."""
    order = [(s, schedule_workloads(s, workloads)) for s in hunt_schedules(db, seed)]
    order = [(s, wls) for s, wls in order if wls]
    if not order:
        raise ValueError(f"no schedule of --db {db} runs the workloads {', '.join(workloads)}")
    return order


def rotation(db: str, workloads: tuple[str, ...], seed: int) -> Iterator[Play]:
    """The real runs of a hunt on ``db`` over ``workloads``, forever (module docstring).
    Raises ``ValueError`` when no schedule runs any of ``workloads``."""
    order = rotation_order(db, workloads, seed)
    n = r = 0
    while True:
        for j, (name, wls) in enumerate(order):
            k = j + r
            fixed = fixed_kraft_version(name)
            kv = fixed if fixed is not None else (k // len(wls)) % 2
            yield Play(n, name, wls[k % len(wls)], kv, (seed + n) % 2 ** 63)
            n += 1
        r += 1


def time_cap(real_budget_s: float, schedules: int, overhead_s: float) -> float:
    """A real run's time limit (s) so that one round of ``schedules`` fits ``real_budget_s``
    with ``overhead_s`` each: between :data:`MIN_RUN_S` and :data:`RUN_CAP_S`."""
    share = real_budget_s / max(1, schedules) - overhead_s
    return max(MIN_RUN_S, min(RUN_CAP_S, share))


def run_fields(play: Play, cap_s: float, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The :class:`harness.config.run.RunConfig` fields (no seed, store, subnet or cluster) of
    ``play``: its schedule's, with its workload and kraft.version, :data:`KV1_FAULTS` added at
    kraft.version 1 when its faults touch the quorum alone and its workload records the final
    committed quorum log (``WorkloadSpec.final_log``: append; the membership checker judges
    voter changes by it, so a kv or queue run with them ends UNKNOWN, "membership ops but no
    final committed log", as a real hunt's kv run did), the time limit cut to ``cap_s`` (not a scenario's), and ``overrides``
    (e.g. ``unsafe``, ``kafka_version``) over all. Raises ``ScenarioError`` for a malformed
    built-in scenario."""
    sched = SCHEDULES[play.schedule]
    fields = sched.run_config()
    fields.update(workload=play.workload, kraft_version=play.kraft_version)
    if sched.scenario is None:
        fields["time_limit"] = min(float(fields["time_limit"]), cap_s)
        spec = workload_spec(play.workload)
        targets = fields.get("nemesis_targets") or spec.nemesis_targets
        if (play.kraft_version == 1 and fixed_kraft_version(play.schedule) is None and targets == "quorum"
                and spec.final_log):
            fields["nemesis"] = [*fields["nemesis"], *(f for f in KV1_FAULTS if f not in fields["nemesis"])]
    fields.update(overrides or {})
    return fields


def limit_s(fields: dict[str, Any]) -> float:
    """How long a run of ``fields`` runs its clients and faults (s): a scenario's budget
    (harness/run/scenario_steps.py), else its time limit."""
    if fields.get("scenario") is not None:
        return budget_s(fields["scenario"])
    return float(fields["time_limit"])


def run_kind(fields: dict[str, Any]) -> str:
    """``brokers`` when a run of ``fields`` has broker nodes (given, or its workload's
    default), else ``quorum``: the :class:`harness.hunt.budget.Overheads` kind."""
    brokers = fields.get("brokers")
    if brokers is None:
        brokers = workload_spec(fields["workload"]).brokers
    return "brokers" if brokers else "quorum"


def describe(play: Play, fields: dict[str, Any]) -> str:
    """A play's schedule for tables: ``default``, ``isolate +membership,wipe`` (faults added)."""
    added = [f for f in KV1_FAULTS if f in fields.get("nemesis", ()) and f not in SCHEDULES[play.schedule].nemesis]
    return play.schedule + (f" +{','.join(added)}" if added else "")


def shortest_s(fields: dict[str, Any]) -> float:
    """The shortest a run of ``fields`` may be cut to (s): :data:`MIN_RUN_S` (or its own time
    limit, when shorter), or a scenario's whole budget (a scenario is never cut)."""
    if fields.get("scenario") is not None:
        return limit_s(fields)
    return min(MIN_RUN_S, limit_s(fields))


def fit(fields: dict[str, Any], remaining_s: float, overhead_s: float) -> dict[str, Any] | None:
    """``fields`` as they fit in ``remaining_s`` with ``overhead_s`` (s): unchanged when they
    fit, with the time limit cut (to whole seconds, not below :func:`shortest_s`) when that
    makes them fit, else None (a run that would not finish in time is never started)."""
    if limit_s(fields) + overhead_s <= remaining_s:
        return fields
    cut = float(int(remaining_s - overhead_s))
    if fields.get("scenario") is not None or cut < shortest_s(fields):
        return None
    return {**fields, "time_limit": cut}
