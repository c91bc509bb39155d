"""The ``kafka`` target as the harness sees it (``targets/registry.py``'s ``TargetSpec``):
six functions of a run's :class:`targets.kafka.settings.KafkaSettings`, so that all of
Kafka's choices stay in ``targets/kafka``.

* :func:`prepare`: before anything is made, read ``--kafka-dist`` (its version and digest
  into the settings), find the release, refuse what it cannot do (exit 3), and fill in the
  release's default kraft.version, so that ``test.json`` and the repeat command say what ran;
  check the extra server properties (``kafka_props``).
* :func:`node_count`, :func:`node_image`, :func:`make_db`, :func:`host_software`: the
  target's nodes, docker image, DB, and files for host JVMs (netns, ssh);
  :func:`repeat_flags`: the run flags that repeat a run.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable

from clusters.registry import Software
from clusters.remote import Cluster
from targets.kafka.releases import (Release, check_run_options, check_transaction_version, release,
                                   run_kraft_version)
from targets.kafka.settings import KafkaSettings

Log = Callable[[str], None]

_DISTS: dict[tuple, Any] = {}


def _stamp(path: Path) -> tuple:
    """What must stay the same for a read distribution to be reused: the path's and (for a
    folder) every ``libs/*.jar``'s size and mtime (ns)."""
    st = path.stat()
    if not path.is_dir():
        return (str(path), st.st_size, st.st_mtime_ns)
    libs = path / "libs"
    jars = sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in libs.glob("*.jar")) if libs.is_dir() else []
    return (str(path), tuple(jars))


def dist_of(settings: KafkaSettings):
    """The :class:`targets.kafka.dist.KafkaDist` of ``settings.kafka_dist``, or None without
    one; read once per unchanged path in this process (:func:`targets.kafka.dist.read_dist`).
    Raises ``DistError`` as it does, and when the digest differs from
    ``settings.kafka_dist_digest`` (the distribution changed since the run was prepared)."""
    path = settings.kafka_dist
    if not path:
        return None
    from targets.kafka.dist import DistError, read_dist
    p = Path(path).expanduser().absolute()
    try:
        key = _stamp(p)
    except OSError:
        key = None
    dist = _DISTS.get(key) if key else None
    if dist is None:
        dist = read_dist(p)
        if key:
            _DISTS[key] = dist
    want = settings.kafka_dist_digest
    if want and want != dist.digest:
        raise DistError(f"--kafka-dist {p}: its content changed since the run was prepared "
                        f"(digest {dist.digest[:16]}, expected {want[:16]})")
    return dist


def run_release(settings: KafkaSettings) -> Release:
    """The releases table's row for the run (a distribution past the newest line gets the
    newest line's). Raises ``TargetError`` for an unsupported or malformed version."""
    return release(settings.kafka_version, newer=bool(settings.kafka_dist))


def prepare(settings: KafkaSettings, faults: frozenset[str] = frozenset()) -> KafkaSettings:
    """``settings`` checked and completed before anything is made (idempotent: the result
    prepared again is itself). ``faults``: the fault families the run plays (``"kill"``,
    ``"membership"``, ...).

    With ``kafka_dist``: reads the distribution and sets ``kafka_dist`` (absolute path),
    ``kafka_dist_digest`` and ``kafka_version`` (the distribution's). Then refuses what the
    release cannot do (:func:`targets.kafka.releases.check_run_options`) and sets a None
    ``kraft_version`` to the release's default (1 from 3.9, else 0).

    ``client`` (``--client``): refused when unknown or when it cannot run against the
    release (the Java client: its kafka-clients jar must resolve; it is built here, cached);
    ``transaction_version``: refused before the release that has the feature.

    ``kafka_props`` (extra server properties) are checked and turned into text
    (:func:`targets.kafka.server_config.check_extra_properties`).

    Raises ``TargetError`` (exit 3): an unsupported or malformed version, a path that is
    not a Kafka distribution (``DistError``), an option the release cannot do
    (``UnsupportedOption``, naming the version and the feature); ``ValueError`` for a bad
    extra property.
    """
    dist = dist_of(settings)
    if dist is not None:
        settings = dataclasses.replace(settings, kafka_dist=str(dist.path), kafka_dist_digest=dist.digest,
                                       kafka_version=dist.version)
    rel = run_release(settings)
    check_run_options(rel, settings.kafka_version, settings.kraft_version, faults)
    settings = dataclasses.replace(settings, kraft_version=run_kraft_version(rel, settings.kraft_version))
    check_transaction_version(rel, settings.kafka_version, settings.transaction_version)
    if settings.client is not None:
        from targets.kafka.txn_clients import check_client
        check_client(settings.client, settings.kafka_version)      # ValueError of one line
    if settings.kafka_props:
        from targets.kafka.server_config import check_extra_properties
        settings = dataclasses.replace(settings, kafka_props=check_extra_properties(settings.kafka_props))
    return settings


def repeat_flags(settings: KafkaSettings) -> list[str]:
    """The ``kraft-chaos run`` flags that repeat a run of this target: ``--kafka-dist PATH``
    (a distribution) or ``--kafka-version V``, ``--kafka-topology``, and ``--kafka-prop
    KEY=VALUE`` per extra server property, ``--client`` and ``--transaction-version`` when set."""
    s = settings
    which = ["--kafka-dist", s.kafka_dist] if s.kafka_dist else ["--kafka-version", s.kafka_version]
    props = [x for k, v in (s.kafka_props or {}).items() for x in ("--kafka-prop", f"{k}={v}")]
    txn = (["--client", s.client] if s.client else []) + \
        (["--transaction-version", str(s.transaction_version)] if s.transaction_version is not None else [])
    return which + ["--kafka-topology", s.kafka_topology] + props + txn


def node_count(settings: KafkaSettings) -> int:
    """Controllers plus brokers (dedicated), or the combined servers
    (:func:`targets.kafka.db.node_count`). Raises ``ValueError``."""
    from targets.kafka.db import node_count as count
    return count(settings.kafka_topology, settings.nodes, settings.brokers)


def node_image(engine, settings: KafkaSettings, log: Log) -> str:
    """The docker node image of the run's Kafka (Maven's jars, or the distribution's libs),
    built if missing (:func:`targets.kafka.image.ensure_kafka_image`). Raises
    ``TargetError``/``ClusterError``."""
    from targets.kafka.image import ensure_kafka_image
    return ensure_kafka_image(engine, settings.kafka_version, log=log, dist=dist_of(settings))


def make_db(cluster: Cluster, cluster_id: str, settings: KafkaSettings):
    """The run's :class:`targets.kafka.db.KafkaDB` on ``cluster``. Raises ``ValueError``/``TargetError``."""
    from targets.kafka.db import KafkaDB
    return KafkaDB.for_run(cluster, cluster_id, settings)


def host_software(settings: KafkaSettings, log: Log) -> Software:
    """The run's Kafka on host JVMs (netns, ssh): its jars (Maven's, resolved if not cached,
    or the distribution's) and log configs under ``/opt/kafka``
    (:func:`targets.kafka.host_files.host_files`), ``KAFKA_HOME``/``KAFKA_VERSION``, and Java
    >= :data:`targets.kafka.host_files.MIN_JAVA` on the hosts. Raises ``TargetError``."""
    from targets.kafka.host_files import MIN_JAVA, host_env, host_files
    files = host_files(settings.kafka_version, log, dist=dist_of(settings))
    return Software(files=files, env=host_env(settings.kafka_version), min_java=MIN_JAVA)
