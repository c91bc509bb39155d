"""The targets (``--db``), chosen by name: how to build a target's node image, how many
nodes it needs, and its :class:`targets.base.DB` on a cluster.

A target reads what it needs from the run's options: any object with the
attributes it names (``harness.run_config.RunConfig`` has them all):
``seed``, ``nodes``, ``base_image``, ``unsafe``, ``fetch_max_records`` for
``kraft``; those of :mod:`targets.kafka.target` for ``kafka``; both read ``brokers``
when the options have it (None: the target's default, 0 extra broker nodes on kraft, 3 on
kafka's dedicated topology).
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable

from clusters.remote import Cluster

from .base import DB
from .kafka import target as kafka_target
from .kafka.server_config import DISK_DIR as KAFKA_DISK
from .kraft_db import DISK_DIR as KRAFT_DISK

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
    #: True when the target runs no brokers unless asked (``--brokers``): a workload that
    #: needs them (``WorkloadSpec.brokers``) then gets its default count
    optional_brokers: bool = False
    #: ``prepare(options)``: check and complete the run's options before anything is made
    #: (idempotent); raises ``ValueError`` or :class:`targets.errors.TargetError` (exit 3)
    prepare: Callable[[Any], None] = lambda options: None


def _kraft_image(engine, options, log: Log) -> str:
    import kraft
    from clusters.image import ensure_node_image
    return ensure_node_image(engine, Path(kraft.__file__).parent, options.base_image, log=log)


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
               optional_brokers=True),
    TargetSpec("kafka", "Apache Kafka's controllers and brokers (a release's jars from Maven Central, "
               "or --kafka-dist)", kafka_target.node_count, kafka_target.node_image, kafka_target.make_db,
               "metadata", KAFKA_DISK, prepare=kafka_target.prepare),
)}


def target_spec(name: str) -> TargetSpec:
    """The target called ``name``; raises ``ValueError`` naming the choices."""
    try:
        return TARGETS[name]
    except KeyError:
        raise ValueError(f"unknown --db {name!r}: choose from {', '.join(TARGETS)}") from None
