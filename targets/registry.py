"""The targets (``--db``), chosen by name: every fact that differs by target, in one table.

A :class:`TargetSpec` says how to build a target's node image, what its nodes run as host
processes (``--cluster netns`` and ``ssh``), which backends it runs on, how many nodes it
needs, its :class:`targets.base.DB` on a cluster, how a stored run's node data is read
(the checkers know no target's disk), its default workload and kraft.version,
the ``kraft-chaos run`` flags that repeat a run of it, and the run settings that mean
something on it alone. The target (``--db``) and the backend (``--cluster``,
clusters/registry.py) are independent choices; :func:`node_software` is where they meet.

A target reads what it needs from the run's options: any object with the
attributes it names (``harness.config.run.RunConfig`` has them all):
``seed``, ``nodes``, ``base_image``, ``unsafe``, ``fetch_max_records`` for
``kraft``; those of :mod:`targets.kafka.target` for ``kafka``; both read ``brokers``
when the options have it (None: the target's default, 0 extra broker nodes on kraft, 3 on
kafka's dedicated topology).
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
from .kraft_db import DISK_DIR as KRAFT_DISK
from .kraft_node_data import KRAFT_NODE_DATA

#: ``log(line)`` receives progress lines while an image is built
Log = Callable[[str], None]


@dataclasses.dataclass(frozen=True)
class TargetSpec:
    """One target. ``node_count(options)``: how many nodes (containers) it needs.
    ``image(engine, options, log)``: the tag of its node image, built if missing (raises
    ``clusters.errors.ClusterError`` or :class:`targets.errors.TargetError`).
    ``make_db(cluster, cluster_id, options)``: its DB on ``cluster`` (raises
    ``ValueError`` for bad options). ``default_workload``: the workload a run on it
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
    #: ``(options, log) -> clusters.registry.Software`` (deployed files, environment, Java)
    host_software: Callable[[Any, Log], Software]
    #: how a stored run's ``nodes/<node>/`` (what its ``DB.collect`` copied) is read into
    #: ``history.node_data.NodeData`` for the checkers (``kraft-chaos check``, ``analyze``)
    node_data: NodeDataReader
    #: the kraft.version a run gets when ``--kraft-version`` is not given (0 static voters,
    #: 1 KIP-853 dynamic quorum)
    default_kraft_version: int = 0
    #: True when the target runs no brokers unless asked (``--brokers``): a workload that
    #: needs them (``WorkloadSpec.brokers``) then gets its default count
    optional_brokers: bool = False
    #: the backends (``--cluster``) it runs on
    backends: tuple[str, ...] = tuple(BACKENDS)
    #: ``options -> [flag, value, ...]``: the ``kraft-chaos run`` flags of its own that repeat a run
    repeat_flags: Callable[[Any], list[str]] = lambda options: []
    #: RunConfig fields that mean something on this target alone (a scenario written for it
    #: drops them when it runs on another target)
    own_fields: tuple[str, ...] = ()
    #: ``prepare(options)``: check and complete the run's options before anything is made
    #: (idempotent; e.g. a Kafka release that cannot do an option, or the release's default
    #: kraft.version); raises ``ValueError`` or :class:`targets.errors.TargetError` (exit 3)
    prepare: Callable[[Any], None] = lambda options: None
    #: True when it runs numbered releases (``kafka_version``): ``kraft-chaos bisect`` steps
    #: through them, and its bug catalogue pairs an affected with a fixed release
    versioned: bool = False


def kraft_dir() -> Path:
    """This checkout's ``kraft/`` package directory."""
    return Path(kraft.__file__).resolve().parent


def _kraft_image(engine, options, log: Log) -> str:
    from clusters.image import ensure_node_image      # deferred: the docker SDK
    return ensure_node_image(engine, kraft_dir(), options.base_image, log=log)


def _kraft_software(options, log: Log) -> Software:
    """Our quorum on host processes: this checkout's ``kraft/`` at ``/opt/kraft/kraft`` (where
    the node image has it) with ``PYTHONPATH=/opt/kraft``, run by the hosts' python3."""
    return Software(files={"/opt/kraft/kraft": kraft_dir()}, env={"PYTHONPATH": "/opt/kraft"})


def _brokers(options) -> int | None:
    """``options.brokers`` (None when absent or not given); ``ValueError`` unless an int >= 0."""
    b = getattr(options, "brokers", None)
    if b is not None and (isinstance(b, bool) or not isinstance(b, int) or b < 0):
        raise ValueError(f"--brokers must be an int >= 0, got {b!r}")
    return b


def _kraft_count(options) -> int:
    return options.nodes + (_brokers(options) or 0)


def _kraft_db(cluster: Cluster, cluster_id: str, options) -> DB:
    from .kraft_db import KraftDB
    return KraftDB(cluster, cluster_id, options.seed, unsafe=list(options.unsafe),
                   fetch_max_records=options.fetch_max_records,
                   segment_bytes=getattr(options, "segment_bytes", None),
                   kraft_version=getattr(options, "kraft_version", None) or 0,
                   brokers=_brokers(options) or 0)


TARGETS: dict[str, TargetSpec] = {t.name: t for t in (
    TargetSpec("kraft", "our Python KRaft quorum (kraft/): --nodes voters, and --brokers broker nodes "
               "(the data plane) after them", _kraft_count, _kraft_image, _kraft_db, "append", KRAFT_DISK,
               _kraft_software, KRAFT_NODE_DATA, default_kraft_version=0, optional_brokers=True,
               own_fields=("unsafe", "fetch_max_records")),
    TargetSpec("kafka", "Apache Kafka's controllers and brokers (a release's jars from Maven Central, "
               "or --kafka-dist)", kafka_target.node_count, kafka_target.node_image, kafka_target.make_db,
               "metadata", KAFKA_DISK, kafka_target.host_software, KAFKA_NODE_DATA,
               # a run's own comes from its release (prepare): 1 from 3.9, else 0
               default_kraft_version=1, repeat_flags=kafka_target.repeat_flags,
               own_fields=("kafka_version", "kafka_dist", "kafka_topology", "kafka_props"),
               prepare=kafka_target.prepare, versioned=True),
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
    :attr:`TargetSpec.default_kraft_version` when that is None (``options.db``, default
    :data:`DEFAULT_TARGET`)."""
    v = getattr(options, "kraft_version", None)
    if v is None:
        return target_spec(getattr(options, "db", None) or DEFAULT_TARGET).default_kraft_version
    return v


def check_supported(db: str, backend: str, why: str = "") -> None:
    """Raise :class:`UnsupportedBackend` unless target ``db`` runs on ``backend`` (a
    clusters/registry.py name). ``why``: how ``--cluster auto`` chose ``backend``, quoted in the
    message. ``ValueError`` for an unknown target."""
    ok = target_spec(db).backends
    if backend not in ok:
        chose = f" (--cluster auto chose {backend}: {why})" if why else ""
        raise UnsupportedBackend(f"--db {db} cannot run on --cluster {backend}{chose}; "
                                 f"it runs on --cluster {', '.join(ok)}")


def node_software(target: TargetSpec, backend: Resolved, options: Any, log: Log) -> Software:
    """What the nodes of ``target`` run on ``backend``: the node image where the backend runs
    images (built if missing: raises ``ClusterError``/``TargetError``), else the target's
    :attr:`TargetSpec.host_software` (deployed files; Kafka's jars resolved if missing: raises
    ``TargetError``). Raises :class:`UnsupportedBackend` for a pair that does not go together."""
    check_supported(target.name, backend.name, backend.why)
    if backend_spec(backend.name).runs_image:
        return Software(image=target.image(backend.engine, options, log))
    return target.host_software(options, log)
