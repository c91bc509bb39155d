"""Apache Kafka node configuration as pure functions: ``server.properties``, the
``StorageTool format`` command line, the JVM options, and the ids Kafka wants
as base64url UUIDs.

Quorum styles (``kraft_version``):

* ``1``, the dynamic quorum of KIP-853 (default). Every server finds the
  controllers through ``controller.quorum.bootstrap.servers=ip:9093,...``; the
  voter set lives in the metadata log, written at format time from
  ``--initial-controllers id@host:port:directory-id,...`` (the same value on
  every controller; brokers are formatted with ``--no-initial-controllers``).
  This is how Kafka 4.x's operations guide provisions a new cluster (KRaft >
  Provisioning Nodes > "Bootstrap with Multiple Controllers"; its other way
  is one ``--standalone`` controller plus AddVoter). Its "Static versus
  Dynamic KRaft Quorums" calls the static style the old way: it cannot add
  or remove controllers nor replace a lost disk. Caveat (Kafka dev list): a
  controller re-formatted after the quorum formed (a wiped disk) must use
  ``--no-initial-controllers`` and be added back with AddVoter; formatting it
  with ``--initial-controllers`` again risks a second quorum (split brain).
* ``0``, the static quorum: ``controller.quorum.voters=1@ip:9093,...`` in
  every node's properties, formatted without any quorum flag.

The settings are Kafka's names (``KafkaConfig``, ``QuorumConfig``); the
timeouts are small so that a chaos run sees elections within seconds. What a release
allows (kraft.version 1, controllers' ``advertised.listeners``, the format flags, the tool
classes, the logging stack's JVM option) comes from its row of
:data:`targets.kafka.releases.RELEASES` (the ``rel`` arguments; default: the newest line).

Also here: :class:`KafkaPaths` and the server's command line (the ``sh`` snippets that
start, signal and stop it are :mod:`targets.kafka.process_scripts`).
"""
from __future__ import annotations

import base64
import dataclasses
import hashlib
import posixpath
import re
from typing import Mapping, Sequence

from targets.errors import TargetError
from targets.kafka.logging_stacks import CONFIG_DIR
from targets.kafka.releases import NEWEST, Release

KAFKA_HOME = "/opt/kafka"
LIBS_DIR = f"{KAFKA_HOME}/libs"

ROLE_CONTROLLER = "controller"
ROLE_BROKER = "broker"
ROLE_COMBINED = "broker,controller"
ROLES = (ROLE_CONTROLLER, ROLE_BROKER, ROLE_COMBINED)

CONTROLLER_PORT = 9093
BROKER_PORT = 9092
CONTROLLER_LISTENER = "CONTROLLER"
BROKER_LISTENER = "PLAINTEXT"
KRAFT_VERSIONS = (0, 1)
#: what Kafka 4.x's docs recommend for a new cluster (dynamic quorum, KIP-853)
DEFAULT_KRAFT_VERSION = 1

#: JVM options per role: heap, a serial collector and C1 only (2 small cores, fast start)
COMMON_JVM_OPTS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:+ExitOnOutOfMemoryError",
                   "-Djava.awt.headless=true")
HEAPS = {ROLE_CONTROLLER: ("-Xmx256m", "-Xms256m"), ROLE_BROKER: ("-Xmx512m",),
         ROLE_COMBINED: ("-Xmx512m",)}
#: the command-line tools (StorageTool, MetadataQuorumCommand) are short-lived JVMs
TOOL_HEAP_OPTS = ("-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")

_UUID_TEXT = re.compile(r"[A-Za-z0-9_-]{22}")
_SAFE_VALUE = re.compile(r"[^\s\\]*")
_SAFE_KEY = re.compile(r"[^\s\\#!=:]+")


@dataclasses.dataclass(frozen=True)
class Controller:
    """One voter: KRaft node id, the host its controller listener binds, and (for
    kraft.version 1) its metadata log directory id (22-char base64url UUID)."""

    node_id: int
    host: str
    directory_id: str = ""


@dataclasses.dataclass(frozen=True)
class Timeouts:
    """Small timeouts for chaos (ms). Kafka's defaults in brackets.

    ``election_ms`` controller.quorum.election.timeout.ms [1000];
    ``fetch_ms`` controller.quorum.fetch.timeout.ms [2000];
    ``request_ms`` controller.quorum.request.timeout.ms [2000];
    ``heartbeat_ms`` broker.heartbeat.interval.ms [2000];
    ``session_ms`` broker.session.timeout.ms [9000];
    ``replica_lag_ms`` replica.lag.time.max.ms [30000]: how long a follower may lag
    before its leader shrinks it out of the ISR (the data plane's ISR, seed 003).
    """

    election_ms: int = 1000
    fetch_ms: int = 2000
    request_ms: int = 2000
    heartbeat_ms: int = 500
    session_ms: int = 4000
    replica_lag_ms: int = 5000

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError(f"{f.name} must be a positive int (ms), got {v!r}")
        if self.heartbeat_ms >= self.session_ms:
            raise ValueError("heartbeat_ms must be below session_ms")


def kafka_uuid(material: str) -> str:
    """A Kafka ``Uuid`` in its text form (22 chars, base64url, no padding) derived
    from SHA-256 of ``material``. Deterministic across processes.

    Like ``Uuid.randomUuid()``, never one that starts with ``-`` (command
    lines would take it for a flag) nor one of the reserved ids (all-zero
    high 64 bits: ZERO, ONE, the metadata topic's and the directory markers).
    """
    counter = 0
    while True:
        raw = hashlib.sha256(f"{material}#{counter}".encode()).digest()[:16]
        text = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        if not text.startswith("-") and raw[:8] != bytes(8):
            return text
        counter += 1


def is_kafka_uuid(text: str) -> bool:
    """True if ``text`` is the canonical text of a Kafka ``Uuid`` (16 bytes, 22 chars)."""
    if not isinstance(text, str) or not _UUID_TEXT.fullmatch(text):
        return False
    raw = base64.urlsafe_b64decode(text + "==")
    return len(raw) == 16 and base64.urlsafe_b64encode(raw).decode().rstrip("=") == text


def cluster_uuid(cluster_id: str, seed: int) -> str:
    """The Kafka cluster id for a run: ``cluster_id`` itself if it already is a
    canonical Kafka ``Uuid`` text (see :func:`is_kafka_uuid`), else one derived
    from ``cluster_id`` and ``seed`` (:func:`kafka_uuid`)."""
    if is_kafka_uuid(cluster_id) and not cluster_id.startswith("-"):
        return cluster_id
    return kafka_uuid(f"kraft-chaos/cluster-id/{cluster_id}/{seed}")


def directory_id(seed: int, node_id: int) -> str:
    """The metadata log directory id of controller ``node_id`` in the run with ``seed``."""
    return kafka_uuid(f"kraft-chaos/directory-id/{seed}/{node_id}")


def quorum_voters(controllers: Sequence[Controller], port: int = CONTROLLER_PORT) -> str:
    """``controller.quorum.voters`` (kraft.version 0): ``1@ip:9093,2@ip:9093,...``."""
    return ",".join(f"{c.node_id}@{c.host}:{port}" for c in controllers)


def quorum_bootstrap_servers(controllers: Sequence[Controller], port: int = CONTROLLER_PORT) -> str:
    """``controller.quorum.bootstrap.servers`` (kraft.version 1): ``ip:9093,...``."""
    return ",".join(f"{c.host}:{port}" for c in controllers)


def initial_controllers(controllers: Sequence[Controller], port: int = CONTROLLER_PORT) -> str:
    """StorageTool's ``--initial-controllers`` value: ``id@host:port:directory-id,...``.

    Raises ``ValueError`` when a controller has no valid directory id.
    """
    for c in controllers:
        if not is_kafka_uuid(c.directory_id):
            raise ValueError(f"controller {c.node_id} needs a 22-char base64url directory id, "
                             f"got {c.directory_id!r}")
    return ",".join(f"{c.node_id}@{c.host}:{port}:{c.directory_id}" for c in controllers)


def tool_jvm_opts(rel: Release = NEWEST) -> tuple[str, ...]:
    """The command-line tools' JVM options: a small heap and the release's logging stack's
    tools config (warnings to stderr)."""
    return (*TOOL_HEAP_OPTS, rel.logging.tools_option(CONFIG_DIR))


def _check_common(role: str, node_id: int, controllers: Sequence[Controller], kraft_version: int,
                  rel: Release) -> None:
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, got {role!r}")
    if isinstance(node_id, bool) or not isinstance(node_id, int) or node_id < 0:
        raise ValueError(f"node_id must be an int >= 0, got {node_id!r}")
    if kraft_version not in KRAFT_VERSIONS or isinstance(kraft_version, bool):
        raise ValueError(f"kraft_version must be 0 or 1, got {kraft_version!r}")
    if kraft_version not in rel.kraft_versions:
        raise TargetError(f"Kafka {rel.name} has no kraft.version {kraft_version} "
                          f"(it formats kraft.version {', '.join(map(str, rel.kraft_versions))})")
    if not controllers:
        raise ValueError("the controller set is empty")
    ids = [c.node_id for c in controllers]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate controller ids in {ids}")
    if (role != ROLE_BROKER) != (node_id in ids):
        raise ValueError(f"node {node_id} with role {role!r} must {'' if role != ROLE_BROKER else 'not '}"
                         f"be in the controller set {ids}")


def check_extra_properties(props: Mapping[str, object] | None) -> dict[str, str]:
    """Extra ``server.properties`` (``--kafka-prop KEY=VALUE``) as text: ``{key: value}``.

    Raises ``ValueError`` naming a key that is not a property name (empty, whitespace,
    ``#!=:`` or a backslash) or a value with whitespace or a backslash."""
    out: dict[str, str] = {}
    for key, value in (props or {}).items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        if not isinstance(key, str) or not _SAFE_KEY.fullmatch(key):
            raise ValueError(f"--kafka-prop: bad property name {key!r}")
        if not _SAFE_VALUE.fullmatch(text):
            raise ValueError(f"--kafka-prop {key}: value {text!r} has whitespace or a backslash")
        out[key] = text
    return out


def render_server_properties(*, role: str, node_id: int, host: str, controllers: Sequence[Controller],
                             kraft_version: int = DEFAULT_KRAFT_VERSION, log_dirs: str,
                             metadata_log_dir: str, n_brokers: int,
                             controller_port: int = CONTROLLER_PORT, broker_port: int = BROKER_PORT,
                             timeouts: Timeouts = Timeouts(),
                             extra: Mapping[str, object] | None = None, rel: Release = NEWEST) -> str:
    """The text of one node's ``server.properties`` (``key=value`` lines, a trailing newline).

    ``role``: ``"controller"``, ``"broker"`` or ``"broker,controller"``;
    ``host``: the address its listeners bind and advertise; ``controllers``:
    the whole voter set; ``n_brokers``: how many brokers the cluster has (the
    internal topics' replication factor is ``min(3, n_brokers)``, their
    min.insync.replicas ``min(2, that)``). Listeners: ``CONTROLLER`` on
    ``controller_port`` and ``PLAINTEXT`` on ``broker_port``, both plaintext; the controller
    listener is advertised only where ``rel`` allows it (from 3.9: before, a controller-only
    node has no ``advertised.listeners`` and a combined node advertises its broker listener
    alone). ``extra`` adds or overrides properties (values are str()-ed).

    Raises ``ValueError`` for a bad role, node id, kraft version, an empty or
    inconsistent controller set, or a value with whitespace or a backslash;
    :class:`TargetError` for a kraft version ``rel`` does not have.
    """
    _check_common(role, node_id, controllers, kraft_version, rel)
    if isinstance(n_brokers, bool) or not isinstance(n_brokers, int) or n_brokers < 1:
        raise ValueError(f"n_brokers must be an int >= 1, got {n_brokers!r}")
    rf = min(3, n_brokers)
    min_isr = min(2, rf)
    listeners, advertised = [], []
    if role != ROLE_CONTROLLER:
        listeners.append(f"{BROKER_LISTENER}://{host}:{broker_port}")
        advertised.append(listeners[-1])
    if role != ROLE_BROKER:
        listeners.append(f"{CONTROLLER_LISTENER}://{host}:{controller_port}")
        if rel.controller_advertises:
            advertised.append(listeners[-1])
    props: dict[str, object] = {
        "process.roles": role,
        "node.id": node_id,
        "listeners": ",".join(listeners),
        **({"advertised.listeners": ",".join(advertised)} if advertised else {}),
        "listener.security.protocol.map": f"{CONTROLLER_LISTENER}:PLAINTEXT,{BROKER_LISTENER}:PLAINTEXT",
        "controller.listener.names": CONTROLLER_LISTENER,
    }
    if role != ROLE_CONTROLLER:
        props["inter.broker.listener.name"] = BROKER_LISTENER
    if kraft_version == 0:
        props["controller.quorum.voters"] = quorum_voters(controllers, controller_port)
    else:
        props["controller.quorum.bootstrap.servers"] = quorum_bootstrap_servers(controllers, controller_port)
    props.update({
        "log.dirs": log_dirs,
        "metadata.log.dir": metadata_log_dir,
        "controller.quorum.election.timeout.ms": timeouts.election_ms,
        "controller.quorum.fetch.timeout.ms": timeouts.fetch_ms,
        "controller.quorum.request.timeout.ms": timeouts.request_ms,
        "broker.heartbeat.interval.ms": timeouts.heartbeat_ms,
        "broker.session.timeout.ms": timeouts.session_ms,
        "replica.lag.time.max.ms": timeouts.replica_lag_ms,
        "offsets.topic.replication.factor": rf,
        "offsets.topic.num.partitions": 3,
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": min_isr,
        "share.coordinator.state.topic.replication.factor": rf,
        "share.coordinator.state.topic.min.isr": min_isr,
        "default.replication.factor": rf,
        "min.insync.replicas": min_isr,
        "num.partitions": 1,
        "group.initial.rebalance.delay.ms": 0,
        "unclean.leader.election.enable": "false",
        # only the workload creates topics: a client's metadata request must not make one
        "auto.create.topics.enable": "false",
    })
    props.update(extra or {})
    lines = [f"# kraft-chaos: node {node_id}, role {role}, kraft.version {kraft_version}"]
    for key, value in props.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        if not _SAFE_KEY.fullmatch(key):
            raise ValueError(f"bad property name {key!r}")
        if not _SAFE_VALUE.fullmatch(text):
            raise ValueError(f"property {key}: value {text!r} has whitespace or a backslash")
        lines.append(f"{key}={text}")
    return "\n".join(lines) + "\n"


def format_argv(*, role: str, node_id: int, cluster_id: str, config_path: str,
                controllers: Sequence[Controller], kraft_version: int = DEFAULT_KRAFT_VERSION,
                controller_port: int = CONTROLLER_PORT, release_version: str | None = None,
                java: str = "java", classpath: str = f"{LIBS_DIR}/*",
                jvm_opts: Sequence[str] | None = None, joining: bool = False,
                features: Mapping[str, int] | None = None, rel: Release = NEWEST) -> list[str]:
    """The argv that formats one node's log dirs with ``rel``'s ``StorageTool format``
    (``jvm_opts``: default :func:`tool_jvm_opts`).

    Flags as in ``kafka-storage format --help`` (only those ``rel.format_flags`` has): ``--config``,
    ``--cluster-id`` (a 22-char Kafka Uuid, see :func:`cluster_uuid`), and for
    kraft.version 1 ``--initial-controllers id@host:port:dir,...`` on a
    controller or combined node, ``--no-initial-controllers`` on a broker.
    kraft.version 0 takes no quorum flag (the voters are in the properties).
    ``release_version`` (e.g. ``"4.3-IV0"``) is passed as ``--release-version``;
    None: the tool's default, the latest. ``joining``: the node joins a running cluster
    (a wiped controller, KIP-853): at kraft.version 1 it takes ``--no-initial-controllers``
    too, so it starts as an observer with its new directory id. ``features``
    (``{"group.version": 1}``) become ``--feature name=level`` flags (from 3.8). Raises
    ``ValueError`` as :func:`render_server_properties` does, or for a bad cluster id;
    :class:`TargetError` for a flag ``rel`` does not have.
    """
    _check_common(role, node_id, controllers, kraft_version, rel)
    if not is_kafka_uuid(cluster_id):
        raise ValueError(f"cluster_id must be a 22-char base64url Kafka Uuid, got {cluster_id!r}")
    argv = [java, *(tool_jvm_opts(rel) if jvm_opts is None else jvm_opts), "-cp", classpath,
            rel.storage_tool, "format", "--config", config_path, f"--cluster-id={cluster_id}"]
    flags = argv[argv.index("format") + 1:]
    if release_version is not None:
        flags += ["--release-version", release_version]
    for name, level in (features or {}).items():
        flags += ["--feature", f"{name}={level}"]
    if kraft_version == 1:
        if role == ROLE_BROKER or joining:
            flags.append("--no-initial-controllers")
        else:
            flags += ["--initial-controllers", initial_controllers(controllers, controller_port)]
    missing = sorted({f.split("=")[0] for f in flags if f.startswith("--")} - rel.format_flags)
    if missing:
        raise TargetError(f"Kafka {rel.name}'s kafka-storage format has no {', '.join(missing)}")
    return argv[:argv.index("format") + 1] + flags


def jvm_opts(role: str, heap: Sequence[str] | None = None) -> list[str]:
    """The JVM options for a node of ``role``: its heap (``heap``, or
    :data:`HEAPS`: controllers ``-Xmx256m -Xms256m``, brokers and combined
    ``-Xmx512m``) plus :data:`COMMON_JVM_OPTS`. Raises ``ValueError`` on a bad role."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, got {role!r}")
    return [*(HEAPS[role] if heap is None else heap), *COMMON_JVM_OPTS]


#: the directory holding a node's log dirs and nothing else: the lazyfs of ``--nemesis
#: power-loss`` is mounted there (server.log and the pid file stay outside)
DISK_DIR = "/var/lib/kafka/disk"
#: the files a Kafka node writes by atomic replace (``CheckpointFile.write``: ``<name>.tmp``,
#: fsync, rename), so that a power loss never reverts them: a log dir's offset checkpoints and
#: each partition's ``leader-epoch-checkpoint``. 3.7.0 to 3.7.2 skipped the fsync of the last on
#: truncation, at every broker start among others (KAFKA-16541, fixed in 3.8.0)
SYNCED_FILES = ("leader-epoch-checkpoint", "replication-offset-checkpoint",
                "recovery-point-offset-checkpoint", "log-start-offset-checkpoint")


@dataclasses.dataclass(frozen=True)
class KafkaPaths:
    """Where things live on a node (absolute POSIX paths)."""

    config: str = "/etc/kafka/server.properties"
    data_dir: str = "/var/lib/kafka/disk/data"          # log.dirs
    metadata_dir: str = "/var/lib/kafka/disk/metadata"  # metadata.log.dir: __cluster_metadata-0/, meta.properties
    log_dir: str = "/var/lib/kafka/logs"           # server.log, controller.log, kafka.out
    pid: str = "/var/lib/kafka/kafka.pid"
    java: str = "java"

    @property
    def out(self) -> str:
        """The JVM's stdout and stderr (errors before log4j starts land here)."""
        return posixpath.join(self.log_dir, "kafka.out")

    def log_file(self, name: str) -> str:
        """``<log_dir>/<name>``, e.g. ``server.log``."""
        return posixpath.join(self.log_dir, name)


def server_argv(role: str, paths: KafkaPaths = KafkaPaths(), heap: Sequence[str] | None = None,
                rel: Release = NEWEST) -> list[str]:
    """``java <jvm_opts(role)> -Dkafka.logs.dir=... <logging option> -cp '/opt/kafka/libs/*'
    kafka.Kafka <config>``; the logging option is ``rel``'s stack's
    (``-Dlog4j.configuration=file:...log4j.properties`` before 4.0,
    ``-Dlog4j2.configurationFile=...log4j2.properties`` from 4.0). Raises ``ValueError`` on a
    bad role."""
    return [paths.java, *jvm_opts(role, heap), f"-Dkafka.logs.dir={paths.log_dir}",
            rel.logging.server_option(CONFIG_DIR), "-cp", f"{LIBS_DIR}/*", "kafka.Kafka", paths.config]
