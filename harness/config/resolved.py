"""A run's configuration resolved once: the frozen, nested value a run reads.

:func:`resolve` takes a :class:`harness.config.run.RunConfig` (what a run was told: the
command line, a scenario's ``[run]`` table, a schedule, a matrix cell, a hunt's or a
catalogue's fields, a pytest marker), checks it against the registries before any cluster is
made, fills in every default, and returns a :class:`ResolvedConfig`:

- ``cluster``: where the nodes run (:class:`ClusterConfig`);
- ``target``: the target (``--db``) and its own typed settings (:class:`TargetConfig`;
  ``targets/settings.py``), filled from the config by name and completed by the target's
  ``prepare``, which runs here and nowhere else;
- ``workload``: the workload and its checked options (:class:`WorkloadConfig`);
- ``nemesis``: the faults, their schedule and whom they may touch (:class:`NemesisConfig`);
- ``flat``: the same run as a ``RunConfig`` with the defaults filled in, which is what
  ``test.json`` records and the repeat command says (so that a stored run reads as before).

Nothing changes it afterwards: a run's layers read the part they need.
"""
from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import Any, Iterable

from clusters.registry import check_name
from faults.registry import named
from harness.config import options
from harness.config.run import RunConfig
from nemesis.membership import check_run_config
from nemesis.schedule import MODES
from targets.registry import TargetSpec, check_supported, target_spec
from targets.settings import TargetSettings
from workloads.registry import WorkloadSpec, workload_spec


@dataclasses.dataclass(frozen=True)
class ClusterConfig:
    """Where the nodes run: ``backend`` (``--cluster``: docker, netns, ssh or auto,
    clusters/registry.py), ``hosts`` (``--cluster ssh``'s hosts file, or None), ``subnet``
    (the nodes' IPv4 subnet) and ``keep`` (leave the cluster running at the end)."""

    backend: str
    hosts: str | None
    subnet: str
    keep: bool


@dataclasses.dataclass(frozen=True)
class TargetConfig:
    """The system under test: ``spec`` (targets/registry.py), ``settings`` (an instance of
    ``spec.settings``, prepared) and ``kraft_version``, the one the run uses (the settings',
    or the target's default when they leave it None)."""

    spec: TargetSpec
    settings: TargetSettings
    kraft_version: int


@dataclasses.dataclass(frozen=True)
class WorkloadConfig:
    """The workload: ``spec`` (workloads/registry.py) and ``options``, an instance of its
    ``options_class`` (concurrency, rate and the workload options given)."""

    spec: WorkloadSpec
    options: Any


@dataclasses.dataclass(frozen=True)
class NemesisConfig:
    """The faults. ``faults``: ``--nemesis`` names (``"partition:bridge"``); ``mode``
    (``serial`` or ``overlap``), ``interval_s`` and ``duration_s`` (s): their schedule;
    ``scenario``: a scenario's steps in place of the schedule (None: none); ``targets``:
    the nodes they may touch (``quorum``, ``clients`` or ``all``); ``families``: every fault
    family the run plays (names without kinds, and scenario steps ``start-<family>``);
    ``voter_changes``: the quorum runs at kraft.version 1 (KIP-853)."""

    faults: tuple[str, ...]
    mode: str
    interval_s: float
    duration_s: float
    scenario: tuple[dict, ...] | None
    targets: str
    families: frozenset[str]
    voter_changes: bool

    @property
    def active(self) -> bool:
        """Whether any fault is played (a scenario, or a fault name)."""
        return self.scenario is not None or bool(self.faults)

    @property
    def needs_disks(self) -> bool:
        """Whether a family the run plays loses what was not fsynced, so that the nodes need
        power-loss disks (a spec's ``needs_disks``, faults/registry.py)."""
        return any(spec.needs_disks for spec in named(self.faults, self.scenario))


@dataclasses.dataclass(frozen=True)
class ResolvedConfig:
    """One run's configuration, resolved (module docstring). ``seed`` drives every random
    choice; ``time_limit`` (s): how long clients and faults run (a scenario: its own
    budget); ``store``: the store's root folder."""

    seed: int
    time_limit: float
    store: str
    cluster: ClusterConfig
    target: TargetConfig
    workload: WorkloadConfig
    nemesis: NemesisConfig
    flat: RunConfig

    def stored_as(self, scenario_file: str) -> "ResolvedConfig":
        """This run with its scenario kept at ``scenario_file`` (the run folder's copy), which
        its record and repeat command then name."""
        return dataclasses.replace(self, flat=dataclasses.replace(self.flat, scenario_file=scenario_file))


def fault_families(faults: Iterable[str] | None, steps: Iterable[Any] | None) -> frozenset[str]:
    """The fault families of ``faults`` (``--nemesis`` names; ``"partition:bridge"`` ->
    ``"partition"``) and of a scenario's ``steps`` (``start-<family>``)."""
    names = {str(n).partition(":")[0] for n in faults or ()}
    for step in steps or ():
        if isinstance(step, dict) and str(step.get("nemesis", "")).startswith("start-"):
            names.add(str(step["nemesis"])[len("start-"):])
    return frozenset(names)


def _plain(value: Any) -> Any:
    """A settings value as a ``RunConfig`` field holds it (a list, a dict)."""
    if isinstance(value, tuple):
        return list(value)
    return dict(value) if isinstance(value, MappingProxyType) else value


def resolve(config: RunConfig) -> ResolvedConfig:
    """``config`` checked and completed, before any cluster is made (module docstring):
    the workload runs on the target (workloads/registry.py), the target's ``prepare``
    accepts it (e.g. a Kafka release that can do what is asked) and fills in its defaults
    (the release's kraft.version), ``--brokers`` gets the workload's default where the
    target's brokers are optional, ``--nemesis-targets`` the workload's, the workload's
    options apply (harness/config/options.py), the nemesis mode is known, membership faults
    have kraft.version 1, and the backend is known and runs the target.

    Raises ``ValueError`` naming what was wrong (``targets.registry.UnsupportedBackend`` for
    the pair), ``targets.errors.TargetError`` for what the target refuses (exit 3 both)."""
    workload = workload_spec(config.workload)          # ValueError naming the choices
    target = target_spec(config.db)
    families = fault_families(config.nemesis, config.scenario)
    if config.db not in workload.dbs:
        why = f" ({workload.dbs_why})" if workload.dbs_why else ""
        raise ValueError(f"workload {config.workload!r} does not run on --db {config.db}{why}: "
                         f"it supports {', '.join(workload.dbs)}")
    options.check_client_fields(config, workload)     # --client without the txn workload
    given = config.target_settings()
    settings = target.prepare(given, families)          # the target's own checks and defaults
    brokers = options.resolve_brokers(config, workload, target)                   # --brokers
    nemesis_targets = options.resolve_nemesis_targets(config, workload)           # --nemesis-targets
    workload_options = options.workload_options(config, workload.workload.options_class, config.workload)
    if config.nemesis_mode not in MODES:
        raise ValueError(f"unknown nemesis mode {config.nemesis_mode!r}: choose from {', '.join(MODES)}")
    completed = {f.name: _plain(getattr(settings, f.name)) for f in dataclasses.fields(settings)
                 if getattr(settings, f.name) != getattr(given, f.name)}
    flat = dataclasses.replace(config, brokers=brokers, nemesis_targets=nemesis_targets, **completed)
    check_run_config(flat)          # membership needs kraft.version 1
    if check_name(config.cluster) != "auto":       # ValueError naming the choices
        check_supported(config.db, config.cluster)
    settings = dataclasses.replace(settings, brokers=brokers)
    kraft_version = target.default_kraft_version if settings.kraft_version is None else settings.kraft_version
    return ResolvedConfig(
        seed=config.seed, time_limit=config.time_limit, store=config.store,
        cluster=ClusterConfig(config.cluster, config.hosts, config.subnet, config.keep_cluster),
        target=TargetConfig(target, settings, kraft_version),
        workload=WorkloadConfig(workload, workload_options),
        nemesis=NemesisConfig(tuple(config.nemesis), config.nemesis_mode, config.nemesis_interval,
                              config.nemesis_duration,
                              tuple(config.scenario) if config.scenario is not None else None,
                              nemesis_targets, families, kraft_version == 1),
        flat=flat)
