"""What a hunt is told (``kraft-chaos hunt``'s flags), checked against the registries, and the
command that repeats it."""
from __future__ import annotations

import dataclasses
import shlex

from harness.config import values
from harness.config.run import RunConfig
from harness.hunt import portfolio
from harness.hunt.shrink_real import SHRINK_MAX_RUNS
from kraft.core import unsafe as unsafe_switches
from targets.registry import target_spec


@dataclasses.dataclass
class HuntOptions:
    """A hunt: target ``db``, budget ``minutes``, ``workloads`` (empty: every workload the
    target runs), ``unsafe`` switches (a target whose runs take them, ``TargetSpec.own_fields``),
    ``kafka_version`` (likewise; None: the run's default), ``stop_at_first``, ``seed`` (the
    rotation's and every run's), ``sim`` (False: no simulation phase, ``--no-sim``), ``swarm``
    (False: the simulation phase's fixed configurations, ``--no-swarm``; portfolio ``sim_configs``),
    ``junit`` (an extra path for the JUnit XML), ``cluster``, ``hosts``, ``subnet`` (None: the
    run's default), ``lock`` (a file to ``flock`` per real run and per simulation batch; None:
    no lock; ``kraft-chaos hunt`` gives :data:`harness.config.values.DEFAULT_LOCK` unless told) and
    ``store`` (the store root; the report goes to ``STORE/hunt/<timestamp>/``); ``shrink_runs``:
    most replays spent shrinking a failed real run (0: its faults are written as they happened,
    unshrunk)."""

    seed: int
    db: str = "kraft"
    minutes: float = 20.0
    workloads: tuple[str, ...] = ()
    unsafe: tuple[str, ...] = ()
    kafka_version: str | None = None
    stop_at_first: bool = False
    sim: bool = True
    swarm: bool = True
    junit: str | None = None
    cluster: str = RunConfig.cluster
    hosts: str | None = None
    subnet: str | None = None
    lock: str | None = None
    store: str = "store"
    shrink_runs: int = SHRINK_MAX_RUNS

    def check(self) -> None:
        """Check against the registries and fill in ``workloads``: the target is known, each
        workload runs on it, ``--unsafe`` and ``--kafka-version`` are fields of its runs, the
        switches are known, the budget is positive. Raises ``ValueError`` naming what was
        wrong."""
        spec = target_spec(self.db)                 # ValueError naming the choices
        if not self.minutes > 0:
            raise ValueError(f"--minutes must be > 0, got {self.minutes!r}")
        if self.shrink_runs < 0:
            raise ValueError(f"--shrink-runs must be >= 0, got {self.shrink_runs!r}")
        self.workloads = portfolio.check_workloads(self.db, self.workloads or portfolio.default_workloads(self.db))
        for flag, field, value in (("--unsafe", "unsafe", self.unsafe), ("--kafka-version", "kafka_version",
                                                                         self.kafka_version)):
            if value and field not in spec.own_fields:
                raise ValueError(f"{flag} does not apply to --db {self.db}")
        unsafe_switches.parse(",".join(self.unsafe))      # ValueError naming an unknown switch

    def overrides(self) -> dict:
        """The RunConfig fields every real run of this hunt gets: ``unsafe`` and
        ``kafka_version`` when given."""
        return {**({"unsafe": list(self.unsafe)} if self.unsafe else {}),
                **({"kafka_version": self.kafka_version} if self.kafka_version else {})}

    def placement(self) -> dict:
        """The RunConfig fields of where the runs go: ``store``, ``cluster``, ``hosts``,
        ``subnet`` (those given)."""
        return {"store": self.store, "cluster": self.cluster,
                **({"hosts": self.hosts} if self.hosts else {}), **({"subnet": self.subnet} if self.subnet else {})}

    def repeat_command(self) -> str:
        """The ``kraft-chaos hunt ...`` command line that repeats this hunt's rotation and seeds
        (what the runs find depends on timing as any run's does)."""
        args = ["kraft-chaos", "hunt", "--db", self.db, "--minutes", f"{self.minutes:g}", "--seed", str(self.seed)]
        for w in self.workloads:
            args += ["--workload", w]
        if self.unsafe:
            args += ["--unsafe", ",".join(self.unsafe)]
        if self.kafka_version:
            args += ["--kafka-version", self.kafka_version]
        if self.stop_at_first:
            args.append("--stop-at-first")
        if not self.sim:
            args.append("--no-sim")
        if not self.swarm:
            args.append("--no-swarm")
        if self.shrink_runs != SHRINK_MAX_RUNS:
            args += ["--shrink-runs", str(self.shrink_runs)]
        if self.cluster != RunConfig.cluster:
            args += ["--cluster", self.cluster]
        lock = None if self.lock == values.DEFAULT_LOCK else self.lock or values.NO_LOCK   # the default: no flag
        for flag, value in (("--hosts", self.hosts), ("--subnet", self.subnet), ("--lock", lock),
                            ("--junit", self.junit)):
            if value:
                args += [flag, value]
        if self.store != "store":
            args += ["--store", self.store]
        return shlex.join(args)
