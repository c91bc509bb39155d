"""A test's configuration: what ``kraft-chaos run`` was told, the command that repeats it, and
its form as a scenario's ``[run]`` table. A run reads it resolved (harness/config/resolved.py)."""
from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path
from typing import Any

from harness.config.options import WORKLOAD_OPTIONS
from harness.config.scenario import RUN_FIELDS
from harness.config.schedules import DEFAULT_SCHEDULE as DEFAULT
from history import store
from targets.kafka.releases import DEFAULT_VERSION as KAFKA_DEFAULT_VERSION
from targets.registry import DEFAULT_TARGET, target_spec
from targets.settings import TargetSettings
from kraft.core import unsafe


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """A test's configuration, as given on the ``kraft-chaos run`` command line (frozen: a
    changed one is a new value, ``dataclasses.replace``). A run takes it resolved, its
    defaults filled in and checked, by :func:`harness.config.resolved.resolve`.

    The defaults are the catalogue's default schedule
    (``harness.config.schedules.DEFAULT_SCHEDULE``), what ``make run`` runs.

    Times in seconds, ``rate`` in ops/s. ``nemesis`` lists fault names
    (``nemesis.schedule.FAULT_NAMES``); ``unsafe`` lists ``kraft.core.unsafe``
    switch names. ``segment_bytes``: the kraft log's ``log.segment.bytes`` (None: the
    node's default, 1 MiB). ``fetch_max_records`` bounds a kraft Fetch response (None: the node's
    default). ``db`` names the target (targets/registry.py); ``kafka_version``,
    ``kafka_topology`` (dedicated: ``nodes`` controllers plus brokers; combined:
    ``nodes`` combined nodes) shape the ``kafka`` target (``kafka_dist``: a Kafka
    distribution run in place of a Maven release, with its ``kafka_dist_digest``;
    ``kafka_props``: extra ``server.properties`` of every Kafka node, ``{key: value}``;
    ``client``: the ``txn`` workload's transactional client, ``transaction_version``: the
    cluster's ``transaction.version`` feature; targets/kafka/target.py); ``kraft_version`` (0 static
    voters, 1 KIP-853; None: the target's default, 0 on kraft, on kafka 1 from 3.9, else 0) both. ``cluster``: the backend (docker, netns, ssh, or auto: docker when an engine answers); ``hosts``: the hosts file of ``ssh`` (clusters/ssh_hosts.py). ``nemesis_targets``: quorum, clients or all
    (``targets.base.DB.fault_nodes``; None: the workload's ``WorkloadSpec.nemesis_targets``,
    ``all`` for queue, given by the resolver). ``seed`` drives every random choice.
    ``brokers``: broker nodes (``--brokers``; None: the target's default, or on a target
    whose brokers are optional the workload's ``WorkloadSpec.brokers``). The fields of
    :data:`WORKLOAD_OPTIONS` (``acks`` 0/1/-1, ``min_insync_replicas``,
    ``unclean_leader_election``, ``partitions``, ``replication_factor``, ``idempotence``,
    ``txn_delay_ms``, ``transactions``, ``compression``, ``value_bytes``)
    go to the workload's options when not None (:meth:`workload_options`).
    """

    seed: int
    nodes: int = DEFAULT.nodes
    time_limit: float = DEFAULT.time_limit
    nemesis: list[str] = dataclasses.field(default_factory=lambda: list(DEFAULT.nemesis))
    workload: str = DEFAULT.workload
    concurrency: int = DEFAULT.concurrency
    rate: float = DEFAULT.rate
    cluster: str = "auto"     # docker, netns, ssh or auto (clusters/registry.py)
    db: str = DEFAULT_TARGET
    kafka_version: str = KAFKA_DEFAULT_VERSION
    kafka_dist: str | None = None         # --kafka-dist: a Kafka distribution (its version is kafka_version)
    kafka_dist_digest: str | None = None  # its content digest (targets/kafka/dist.py), for test.json
    kafka_topology: str = "dedicated"
    kafka_props: dict[str, str] | None = None   # --kafka-prop: extra server.properties of every Kafka node
    client: str | None = None            # --client: the txn workload's client on kafka (None: librdkafka)
    transaction_version: int | None = None   # --transaction-version: kafka's transaction.version feature
    kraft_version: int | None = None     # None: the target's default (kraft 0; kafka 1 from 3.9, else 0)
    nemesis_targets: str | None = None   # None: the workload's (quorum; all for queue)
    keep_cluster: bool = False
    store: str = str(store.DEFAULT_ROOT)
    base_image: str | None = None
    subnet: str = "10.77.0.0/24"
    nemesis_interval: float = DEFAULT.interval
    nemesis_duration: float = DEFAULT.duration
    nemesis_mode: str = DEFAULT.mode
    unsafe: list[str] = dataclasses.field(default_factory=list)
    fetch_max_records: int | None = None
    segment_bytes: int | None = None
    scenario: list[dict] | None = None
    scenario_file: str | None = None
    hosts: str | None = None  # --cluster ssh: the hosts file
    brokers: int | None = None
    partitions: int | None = None
    replication_factor: int | None = None
    acks: int | None = None
    min_insync_replicas: int | None = None
    unclean_leader_election: bool | None = None
    idempotence: bool | None = None
    txn_delay_ms: int | None = None
    transactions: bool | None = None
    compression: str | None = None
    value_bytes: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The config as JSON-ready data (for ``test.json``)."""
        return dataclasses.asdict(self)

    def target_settings(self) -> TargetSettings:
        """The settings of this config's target (``TargetSpec.settings``, e.g.
        :class:`targets.settings.KraftSettings`) filled from the fields of the same names, as
        given (the target's ``prepare`` completes them). Raises ``ValueError`` for an unknown
        ``db``."""
        cls = target_spec(self.db).settings
        return cls(**{f.name: getattr(self, f.name) for f in dataclasses.fields(cls)})

    def workload_options(self) -> dict[str, Any]:
        """The :data:`WORKLOAD_OPTIONS` given (not None), by field name."""
        return {k: getattr(self, k) for k in WORKLOAD_OPTIONS if getattr(self, k) is not None}

    def test_name(self) -> str:
        """The store folder of this test, e.g. ``append-partition+kill+pause`` (``append-scenario``)."""
        return store.test_name(self.workload, ["scenario"] if self.scenario is not None else self.nemesis)

    def repeat_command(self) -> str:
        """The ``kraft-chaos run ...`` command line that repeats this run (same seed), or the
        ``kraft-chaos scenario run FILE`` of a scenario run."""
        if self.scenario is not None:
            return shlex.join(["kraft-chaos", "scenario", "run", self.scenario_file or "SCENARIO.toml"])
        def num(x: float) -> str:
            return str(int(x)) if float(x).is_integer() else str(x)
        args = ["kraft-chaos", "run", "--nodes", str(self.nodes), "--time-limit", num(self.time_limit),
                "--nemesis", ",".join(self.nemesis) or "none", "--workload", self.workload,
                "--concurrency", str(self.concurrency), "--rate", num(self.rate),
                "--nemesis-interval", num(self.nemesis_interval),
                "--nemesis-duration", num(self.nemesis_duration), "--nemesis-mode", self.nemesis_mode,
                "--seed", str(self.seed)]
        if self.cluster != RunConfig.cluster:
            args += ["--cluster", self.cluster]
        if self.hosts:
            args += ["--hosts", self.hosts]
        if self.db != RunConfig.db:
            args += ["--db", self.db]
        args += target_spec(self.db).repeat_flags(self.target_settings())
        if self.kraft_version is not None:
            args += ["--kraft-version", str(self.kraft_version)]
        if self.nemesis_targets is not None:
            args += ["--nemesis-targets", self.nemesis_targets]
        if self.subnet != RunConfig.subnet:
            args += ["--subnet", self.subnet]
        if self.base_image:
            args += ["--base-image", self.base_image]
        if self.unsafe:
            args += ["--unsafe", ",".join(self.unsafe)]
        if self.fetch_max_records:
            args += ["--fetch-max-records", str(self.fetch_max_records)]
        if self.segment_bytes:
            args += ["--segment-bytes", str(self.segment_bytes)]
        if self.brokers is not None:
            args += ["--brokers", str(self.brokers)]
        for name, value in self.workload_options().items():
            args += [WORKLOAD_OPTIONS[name], str(value).lower() if isinstance(value, bool) else str(value)]
        if self.store != str(store.DEFAULT_ROOT):
            args += ["--store", self.store]
        if self.keep_cluster:
            args.append("--keep-cluster")
        return shlex.join(args)


def scenario_config(doc: dict, path: Path, overrides: dict | None = None) -> RunConfig:
    """The RunConfig that runs scenario ``doc`` (from :func:`harness.config.scenario.load`) from
    ``path``, with ``overrides`` of its ``[run]`` table (a relative ``kafka_dist`` is taken
    from the file's folder; no ``workload``: the target's default). Raises ``ValueError`` naming a bad
    ``--unsafe`` switch, ``TypeError`` for an unknown field."""
    run = {**doc["run"], **(overrides or {})}
    run.setdefault("seed", 0)
    run.setdefault("workload", target_spec(run.get("db", DEFAULT_TARGET)).default_workload)
    if "unsafe" in run:
        unsafe.parse(",".join(run["unsafe"]))       # ValueError naming a bad switch
    if run.get("kafka_dist"):                        # relative to the scenario file
        run["kafka_dist"] = str(Path(path).parent / Path(run["kafka_dist"]).expanduser())
    return RunConfig(**run, nemesis=[], scenario=doc["steps"], scenario_file=str(path))


def run_table(config) -> dict:
    """The ``[run]`` table that repeats ``config`` (a RunConfig): its ``RUN_FIELDS``
    that differ from the defaults, plus the seed and workload."""
    defaults = RunConfig(seed=0)
    out = {}
    for name in RUN_FIELDS:
        v = getattr(config, name)
        if name in ("seed", "workload") or v != getattr(defaults, name):
            out[name] = list(v) if isinstance(v, (list, tuple)) else v
    return out
