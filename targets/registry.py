"""The targets (``--db``), chosen by name: every fact that differs by target, in one table.

A :class:`TargetSpec` says how to build a target's node image, what its nodes run as host
processes (``--cluster netns`` and ``ssh``), which backends it runs on, how many nodes it
needs, its :class:`targets.base.DB` on a cluster, how a stored run's node data is read
(the checkers know no target's disk), its default workload and kraft.version,
the ``kraft-chaos run`` flags that repeat a run of it, and the run settings that mean
something on it alone. The target (``--db``) and the backend (``--cluster``,
clusters/registry.py) are independent choices; :func:`node_software` is where they meet.

A target reads what it needs of a run from its own settings (``TargetSpec.settings``, a frozen
value of :mod:`targets.settings`, filled by the harness from the run's configuration and
completed by the target's ``prepare``): :class:`targets.settings.KraftSettings` for ``kraft``,
:class:`targets.kafka.settings.KafkaSettings` for ``kafka``; ``brokers`` None is the
target's default (0 extra broker nodes on kraft, 3 on kafka's dedicated topology).
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable

import kraft
from clusters.registry import BACKENDS, Resolved, Software, backend_spec
from clusters.remote import Cluster
from history.node_data import NodeDataReader

from .base import DB
from .kafka import target as kafka_target
from .kafka.node_data import KAFKA_NODE_DATA
from .kafka.server_config import DISK_DIR as KAFKA_DISK
from .kafka.server_config import SYNCED_FILES as KAFKA_SYNCED_FILES
from .kafka.settings import KafkaSettings
from .kraft_db import DISK_DIR as KRAFT_DISK
from .kraft_node_data import KRAFT_NODE_DATA
from .settings import KraftSettings, TargetSettings

#: ``log(line)`` receives progress lines while an image is built
Log = Callable[[str], None]


@dataclasses.dataclass(frozen=True)
class TargetSpec:
    """One target. Every function below takes the run's settings, an instance of
    :attr:`settings`. ``node_count(settings)``: how many nodes (containers) it needs.
    ``image(engine, settings, log)``: the tag of its node image, built if missing (raises
    ``clusters.errors.ClusterError`` or :class:`targets.errors.TargetError`).
    ``make_db(cluster, cluster_id, settings)``: its DB on ``cluster`` (raises
    ``ValueError`` for bad settings). ``default_workload``: the workload a run on it
    gets when none is named. ``disk_dir``: the node directory that holds all its durable
    state (data and metadata dirs) and nothing else, where a power-loss disk is mounted."""

    name: str
    summary: str
    node_count: Callable[[Any], int]
    image: Callable[[Any, Any, Log], str]
    make_db: Callable[[Cluster, str, Any], DB]
    default_workload: str
    disk_dir: str
    #: what its nodes run as host processes on a backend without images (netns, ssh):
    #: ``(settings, log) -> clusters.registry.Software`` (deployed files, environment, Java)
    host_software: Callable[[Any, Log], Software]
    #: how a stored run's ``nodes/<node>/`` (what its ``DB.collect`` copied) is read into
    #: ``history.node_data.NodeData`` for the checkers (``kraft-chaos check``, ``analyze``)
    node_data: NodeDataReader
    #: what it reads of a run: a frozen :class:`targets.settings.TargetSettings` class whose
    #: fields are named as the run configuration's (the harness fills it by name)
    settings: type[TargetSettings] = TargetSettings
    #: the kraft.version a run gets when ``--kraft-version`` is not given (0 static voters,
    #: 1 KIP-853 dynamic quorum)
    default_kraft_version: int = 0
    #: True when the target runs no brokers unless asked (``--brokers``): a workload that
    #: needs them (``WorkloadSpec.brokers``) then gets its default count
    optional_brokers: bool = False
    #: the backends (``--cluster``) it runs on
    backends: tuple[str, ...] = tuple(BACKENDS)
    #: ``settings -> [flag, value, ...]``: the ``kraft-chaos run`` flags of its own that repeat a run
    repeat_flags: Callable[[Any], list[str]] = lambda settings: []
    #: RunConfig fields that mean something on this target alone (a scenario written for it
    #: drops them when it runs on another target)
    own_fields: tuple[str, ...] = ()
    #: ``prepare(settings, faults) -> settings``: the run's settings checked and completed
    #: before anything is made (``faults``: the fault families the run plays, a frozenset;
    #: idempotent; e.g. a Kafka release that cannot do an option, or the release's default
    #: kraft.version); raises ``ValueError`` or :class:`targets.errors.TargetError` (exit 3)
    prepare: Callable[[Any, frozenset[str]], Any] = lambda settings, faults: settings
    #: True when it runs numbered releases (``kafka_version``): ``kraft-chaos bisect`` steps
    #: through them, and its bug catalogue pairs an affected with a fixed release
    versioned: bool = False
    #: the file names its nodes write by atomic replace with an fsync before the rename, which a
    #: power loss must never revert (checkers/unsynced_checkpoint.py)
    synced_files: tuple[str, ...] = ()


def kraft_dir() -> Path:
    """This checkout's ``kraft/`` package directory."""
    return Path(kraft.__file__).resolve().parent


def _kraft_image(engine, settings: KraftSettings, log: Log) -> str:
    from clusters.image import ensure_node_image      # deferred: the docker SDK
    return ensure_node_image(engine, kraft_dir(), settings.base_image, log=log)


def _kraft_software(settings: KraftSettings, log: Log) -> Software:
    """Our quorum on host processes: this checkout's ``kraft/`` at ``/opt/kraft/kraft`` (where
    the node image has it) with ``PYTHONPATH=/opt/kraft``, run by the hosts' python3."""
    return Software(files={"/opt/kraft/kraft": kraft_dir()}, env={"PYTHONPATH": "/opt/kraft"})


def _brokers(settings: TargetSettings) -> int | None:
    """``settings.brokers`` (None when not given); ``ValueError`` unless an int >= 0."""
    b = settings.brokers
    if b is not None and (isinstance(b, bool) or not isinstance(b, int) or b < 0):
        raise ValueError(f"--brokers must be an int >= 0, got {b!r}")
    return b


def _kraft_count(settings: KraftSettings) -> int:
    return settings.nodes + (_brokers(settings) or 0)


def _kraft_db(cluster: Cluster, cluster_id: str, settings: KraftSettings) -> DB:
    from .kraft_db import KraftDB
    s = settings
    return KraftDB(cluster, cluster_id, s.seed, unsafe=list(s.unsafe), fetch_max_records=s.fetch_max_records,
                   segment_bytes=s.segment_bytes, kraft_version=s.kraft_version or 0, brokers=_brokers(s) or 0)


TARGETS: dict[str, TargetSpec] = {t.name: t for t in (
    TargetSpec("kraft", "our Python KRaft quorum (kraft/): --nodes voters, and --brokers broker nodes "
               "(the data plane) after them", _kraft_count, _kraft_image, _kraft_db, "append", KRAFT_DISK,
               _kraft_software, KRAFT_NODE_DATA, settings=KraftSettings, default_kraft_version=0, optional_brokers=True,
               own_fields=("unsafe", "fetch_max_records")),
    TargetSpec("kafka", "Apache Kafka's controllers and brokers (a release's jars from Maven Central, "
               "or --kafka-dist)", kafka_target.node_count, kafka_target.node_image, kafka_target.make_db,
               "metadata", KAFKA_DISK, kafka_target.host_software, KAFKA_NODE_DATA, settings=KafkaSettings,
               # a run's own comes from its release (prepare): 1 from 3.9, else 0
               default_kraft_version=1, repeat_flags=kafka_target.repeat_flags,
               own_fields=("kafka_version", "kafka_dist", "kafka_topology", "kafka_props", "client",
                           "transaction_version"),
               prepare=kafka_target.prepare, versioned=True, synced_files=KAFKA_SYNCED_FILES),
)}
#: the target a run gets when ``--db`` is not given
DEFAULT_TARGET = "kraft"


class UnsupportedBackend(ValueError):
    """A target that cannot run on a backend (exit 3); the message names both."""


def target_spec(name: str) -> TargetSpec:
    """The target called ``name``; raises ``ValueError`` naming the choices."""
    try:
        return TARGETS[name]
    except KeyError:
        raise ValueError(f"unknown --db {name!r}: choose from {', '.join(TARGETS)}") from None


def effective_kraft_version(options) -> int:
    """The kraft.version a run uses: ``options.kraft_version``, or its target's
    :attr:`TargetSpec.default_kraft_version` when that is None (target ``options.db``).
    ``options``: anything with those two attributes (a run's configuration). Raises
    ``ValueError`` for an unknown target."""
    v = options.kraft_version
    return target_spec(options.db).default_kraft_version if v is None else v


def check_supported(db: str, backend: str, why: str = "") -> None:
    """Raise :class:`UnsupportedBackend` unless target ``db`` runs on ``backend`` (a
    clusters/registry.py name). ``why``: how ``--cluster auto`` chose ``backend``, quoted in the
    message. ``ValueError`` for an unknown target."""
    ok = target_spec(db).backends
    if backend not in ok:
        chose = f" (--cluster auto chose {backend}: {why})" if why else ""
        raise UnsupportedBackend(f"--db {db} cannot run on --cluster {backend}{chose}; "
                                 f"it runs on --cluster {', '.join(ok)}")


def node_software(target: TargetSpec, backend: Resolved, settings: Any, log: Log) -> Software:
    """What the nodes of ``target`` run on ``backend``: the node image where the backend runs
    images (built if missing: raises ``ClusterError``/``TargetError``), else the target's
    :attr:`TargetSpec.host_software` (deployed files; Kafka's jars resolved if missing: raises
    ``TargetError``). Raises :class:`UnsupportedBackend` for a pair that does not go together."""
    check_supported(target.name, backend.name, backend.why)
    if backend_spec(backend.name).runs_image:
        return Software(image=target.image(backend.engine, settings, log))
    return target.host_software(settings, log)
