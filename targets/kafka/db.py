"""The DB lifecycle of Apache Kafka nodes: configure, format, start, stop, kill, pause, collect.

The same surface as ``harness/db.py``'s ``KraftDB``, for a cluster whose nodes hold
Kafka's jars at ``/opt/kafka/libs``, its log configs at ``/opt/kafka/config`` and a
``java`` on ``PATH``: the image of :func:`targets.kafka.image.ensure_kafka_image`, or the
host files of :mod:`targets.kafka.host_files` (``targets/registry.py``). Every node runs one JVM,
``java ... kafka.Kafka /etc/kafka/server.properties``, detached, its pid in a
pid file; kill, pause and resume are signals to it (a process counts as ours
when its command line matches ``kafka[.]Kafka``). All node access goes
through the cluster's :class:`clusters.remote.Remote`.

Node order in ``cluster.nodes``: the controllers first (KRaft node ids
1..C), then the brokers (ids C+1..C+B). With ``topology="combined"`` the
controllers are combined ``broker,controller`` servers. Which node does what, and its
addresses: :class:`targets.kafka.roles.KafkaRoles`; Kafka's ``kafka-metadata-quorum`` tool
(quorum status, voter changes): :class:`targets.kafka.voters.KafkaQuorumTool`.

What the Kafka version changes (config keys, format flags, tools, logging, DescribeQuorum
versions, voter changes) is its row of :data:`targets.kafka.releases.RELEASES`,
:attr:`KafkaDB.release`.
"""
from __future__ import annotations

import logging
import posixpath
import shlex
import tempfile
import time
from pathlib import Path
from typing import Callable, Mapping, Sequence

from clusters.parallel import NodeErrors, on_nodes
from clusters.remote import Cluster, RemoteError
from targets.base import DB
from targets.errors import TargetError
from targets.kafka import process_scripts as ps
from targets.kafka import server_config as sc
from targets.kafka.node_data import METADATA_DIR
from targets.kafka.releases import DEFAULT_VERSION, release
from targets.kafka.roles import KafkaRoles
from targets.kafka.server_config import KafkaPaths
from targets.kafka.settings import KafkaSettings
from targets.kafka.voters import KafkaQuorumTool

log = logging.getLogger("kraft_chaos.targets.kafka")

#: copies of a live metadata dir :meth:`KafkaDB.read_log` makes before it gives up, and the
#: pause between them (s)
READ_LOG_TRIES = 3
READ_LOG_RETRY_S = 0.5

TOPOLOGIES = ("dedicated", "combined")
#: the KRaft metadata log's partition directory, under ``metadata.log.dir``
METADATA_PARTITION = "__cluster_metadata-0"
#: brokers added to ``--nodes`` controllers in the dedicated topology
DEFAULT_BROKERS = 3


def node_count(topology: str, nodes: int, brokers: int | None = None) -> int:
    """How many containers a run needs: ``nodes`` controllers plus ``brokers`` (default
    :data:`DEFAULT_BROKERS`) brokers (dedicated), or ``nodes`` combined servers. Raises
    ``ValueError`` for an unknown topology, or ``brokers`` given with the combined one
    (every server is a broker there) or below 1."""
    if topology not in TOPOLOGIES:
        raise ValueError(f"topology must be one of {TOPOLOGIES}, got {topology!r}")
    if topology == "combined":
        if brokers is not None:
            raise ValueError("--brokers needs --kafka-topology dedicated: in the combined topology "
                             "every one of the --nodes servers is a broker")
        return nodes
    if brokers is not None and (isinstance(brokers, bool) or not isinstance(brokers, int) or brokers < 1):
        raise ValueError(f"--brokers must be an int >= 1 for --db kafka, got {brokers!r}")
    return nodes + (DEFAULT_BROKERS if brokers is None else brokers)


def _on_nodes(nodes: Sequence[str], fn: Callable[[str], object], what: str) -> None:
    """:func:`clusters.parallel.on_nodes`, its failure as a :class:`TargetError` naming every
    node whose call raised, with its error (``errors``: ``{node: exception}``)."""
    try:
        on_nodes(nodes, fn, what)
    except NodeErrors as err:
        detail = "\n".join(f"  {n}: {e}" for n, e in err.errors.items())
        failed = TargetError(f"{what} failed on {', '.join(err.errors)}:\n{detail}")
        failed.errors = err.errors
        raise failed from err


class KafkaDB(KafkaRoles, KafkaQuorumTool, DB):
    """Apache Kafka on the nodes of ``cluster``: controllers first, then brokers.

    ``cluster_id``/``seed``: the run's; the Kafka cluster id
    (:attr:`kafka_cluster_id`, 22-char base64url) and the controllers'
    directory ids derive from them (:func:`server_config.cluster_uuid`,
    :func:`server_config.directory_id`). ``version``: the Kafka version on the nodes; its
    row of the releases table is :attr:`release` (``newer``: a version past the newest line,
    an own build's, gets the newest line's). ``topology``: ``"dedicated"`` (separate
    controller and broker processes) or ``"combined"`` (the controllers are
    also brokers). ``n_controllers``/``n_brokers``: default 5 and 3 for
    dedicated and every node a combined controller for combined; when one is
    given the other is the rest of ``cluster.nodes``. ``kraft_version``: 1
    (dynamic quorum) or 0 (static ``controller.quorum.voters``); None: the release's
    default, 1 from 3.9, else 0.
    ``timeouts`` (ms), ``release_version`` (``--release-version`` of the
    format), ``extra_properties`` (added to every server.properties) and
    ``heap`` (JVM heap flags for every node) are optional; so are ``features`` (feature levels
    at format, ``{"transaction.version": 2}``) and ``txn_client`` (the ``txn`` workload's
    client, ``--client``; None: the default).

    Raises ``ValueError`` for bad arguments (including counts that do not add
    up to the cluster's nodes) and :class:`TargetError` for a bad or unsupported version,
    or a kraft version the release does not have.
    """

    def __init__(self, cluster: Cluster, cluster_id: str, seed: int, *, version: str = DEFAULT_VERSION,
                 topology: str = "dedicated", n_controllers: int | None = None, n_brokers: int | None = None,
                 kraft_version: int | None = None, timeouts: sc.Timeouts = sc.Timeouts(),
                 release_version: str | None = None, extra_properties: Mapping[str, object] | None = None,
                 heap: Sequence[str] | None = None, paths: KafkaPaths = KafkaPaths(),
                 stop_timeout_s: float = 10.0, startup_check_s: float = 3.0, newer: bool = False,
                 features: Mapping[str, int] | None = None, txn_client: str | None = None):
        self.release = release(version, newer=newer)
        if kraft_version is None:
            kraft_version = self.release.default_kraft_version
        if not isinstance(cluster_id, str) or not cluster_id or any(c.isspace() for c in cluster_id):
            raise ValueError(f"cluster_id must be a non-empty string without whitespace, got {cluster_id!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be an int, got {seed!r}")
        if topology not in TOPOLOGIES:
            raise ValueError(f"topology must be one of {TOPOLOGIES}, got {topology!r}")
        if kraft_version not in sc.KRAFT_VERSIONS or isinstance(kraft_version, bool):
            raise ValueError(f"kraft_version must be 0 or 1, got {kraft_version!r}")
        if kraft_version not in self.release.kraft_versions:
            raise TargetError(f"Kafka {version} has no kraft.version {kraft_version}")
        total = len(cluster.nodes)
        if n_controllers is None and n_brokers is None:
            n_controllers, n_brokers = (5, 3) if topology == "dedicated" else (total, 0)
        elif n_controllers is None:
            n_controllers = total - n_brokers
        elif n_brokers is None:
            n_brokers = total - n_controllers
        if n_controllers < 1 or n_brokers < 0 or n_controllers + n_brokers != total:
            raise ValueError(f"{n_controllers} controllers + {n_brokers} brokers do not fit the cluster's "
                             f"{total} nodes {cluster.nodes}")
        if topology == "dedicated" and n_brokers < 1:
            raise ValueError("a dedicated topology needs at least one broker")
        self.cluster = cluster
        self.cluster_id = cluster_id
        self.seed = seed
        self.version = version
        self.topology = topology
        self.n_controllers = n_controllers
        self.n_brokers = n_brokers
        self.kraft_version = kraft_version
        self.kafka_cluster_id = sc.cluster_uuid(cluster_id, seed)
        self.timeouts = timeouts
        self.release_version = release_version
        self.extra_properties = dict(extra_properties or {})
        self.heap = list(heap) if heap is not None else None
        self.paths = paths
        self.stop_timeout_s = stop_timeout_s
        self.startup_check_s = startup_check_s
        self.features = dict(features or {})
        self.txn_client = txn_client

    @classmethod
    def for_run(cls, cluster: Cluster, cluster_id: str, settings: KafkaSettings) -> "KafkaDB":
        """The DB of a run of ``settings`` (:class:`targets.kafka.settings.KafkaSettings`:
        ``seed``, ``nodes`` the controllers, ``kafka_version``, ``kafka_topology``,
        ``kraft_version``, ``kafka_props`` the extra server properties, ``kafka_dist``); the
        brokers are the rest of the cluster."""
        s = settings
        return cls(cluster, cluster_id, s.seed, version=s.kafka_version, topology=s.kafka_topology,
                   n_controllers=s.nodes, kraft_version=s.kraft_version, extra_properties=s.kafka_props,
                   newer=bool(s.kafka_dist), txn_client=s.client,
                   features=({"transaction.version": s.transaction_version}
                             if s.transaction_version is not None else None))

    # --- configuration and command lines ----------------------------------------------

    def config_text(self, node: str) -> str:
        """The node's ``server.properties`` (see :func:`server_config.render_server_properties`)."""
        p = self.paths
        return sc.render_server_properties(
            role=self.role(node), node_id=self.node_id(node), host=self.cluster.ip(node),
            controllers=self.voters(), kraft_version=self.kraft_version, log_dirs=p.data_dir,
            metadata_log_dir=p.metadata_dir, n_brokers=len(self.brokers()), timeouts=self.timeouts,
            extra=self.extra_properties, rel=self.release)

    def format_argv(self, node: str, joining: bool = False) -> list[str]:
        """The node's ``kafka.tools.StorageTool format`` command line (``joining``: for a
        wiped node, see :func:`server_config.format_argv`)."""
        return sc.format_argv(
            role=self.role(node), node_id=self.node_id(node), cluster_id=self.kafka_cluster_id,
            config_path=self.paths.config, controllers=self.voters(), kraft_version=self.kraft_version,
            release_version=self.release_version, java=self.paths.java, joining=joining, rel=self.release,
            features=self.features)

    def java_argv(self, node: str) -> list[str]:
        """The server's command line (:func:`server_config.server_argv`)."""
        return sc.server_argv(self.role(node), self.paths, self.heap, rel=self.release)

    # --- lifecycle ------------------------------------------------------------------

    def install_config(self, node: str) -> None:
        """Create the node's directories and write its ``server.properties``. Raises ``RemoteError``."""
        p = self.paths
        dirs = sorted({posixpath.dirname(p.config), posixpath.dirname(p.pid), p.log_dir})
        self.remote.exec(node, "mkdir -p " + " ".join(shlex.quote(d) for d in dirs), check=True)
        with tempfile.TemporaryDirectory(prefix="kafka-conf-") as tmp:
            local = Path(tmp) / "server.properties"
            local.write_text(self.config_text(node))
            self.remote.put(node, local, p.config)

    def format(self, node: str) -> None:
        """Wipe the node's data, metadata and log dirs and its pid file, then run
        ``StorageTool format`` (:meth:`format_argv`; for a new cluster: with kraft.version 1 a
        controller gets ``--initial-controllers``). Raises ``RemoteError`` if it fails."""
        p = self.paths
        wipe = " ".join(shlex.quote(x) for x in (p.data_dir, p.metadata_dir, p.log_dir, p.pid))
        script = (f"rm -rf {wipe} && mkdir -p {shlex.quote(p.log_dir)} && cd / && "
                  + shlex.join(self.format_argv(node)))
        self.remote.exec(node, script, check=True, timeout_s=180.0)

    def reformat(self, node: str) -> None:
        """Delete the node's data and metadata dirs (not its logs) and format them again: same
        cluster id and node id, a fresh directory id; at kraft.version 1 a controller joins
        with ``--no-initial-controllers`` (KIP-853), so it is an observer until it is added
        as a voter again. Raises ``RemoteError``."""
        p = self.paths
        wipe = " ".join(shlex.quote(x) for x in (p.data_dir, p.metadata_dir))
        self.remote.exec(node, f"rm -rf {wipe} && cd / && " + shlex.join(self.format_argv(node, joining=True)),
                         check=True, timeout_s=180.0)

    def disk_state(self, node: str) -> dict:
        """``{"directory_id", "last_offset"}``: ``directory.id`` from the metadata dir's
        ``meta.properties`` and the last offset of ``__cluster_metadata-0`` (None for what is
        missing or unreadable). Raises ``RemoteError`` when the node cannot be reached."""
        res = self.remote.exec(node, f"cat {shlex.quote(posixpath.join(self.paths.metadata_dir, 'meta.properties'))}",
                               check=False)
        dir_id = None
        for line in res.stdout.splitlines() if res.exit_code == 0 else []:
            if line.startswith("directory.id="):
                dir_id = line.split("=", 1)[1].strip() or None
        try:
            entries = self.read_log(node)
        except Exception as err:  # noqa: BLE001 - an unreadable log is recorded as unknown
            log.info("%s: metadata log unreadable before the wipe: %s", node, err)
            entries = []
        return {"directory_id": dir_id, "last_offset": entries[-1][0] if entries else None}

    def start(self, node: str) -> bool:
        """Start the node's JVM, detached, unless it runs. True if started, False if it was
        running. Raises ``RemoteError`` when the node cannot be reached."""
        script = ps.start_script(self.paths, self.java_argv(node))
        started = "started" in self.remote.exec(node, script, check=True).stdout
        log.info("%s: %s", node, "started" if started else "already running")
        return started

    def is_running(self, node: str) -> bool:
        """True if the node's ``kafka.Kafka`` JVM exists (a paused one counts)."""
        return self.remote.exec(node, ps.running_test(self.paths), check=False).exit_code == 0

    def kill(self, node: str) -> bool:
        """SIGKILL the node's JVM (pid file, then any ``kafka.Kafka`` with our config), waiting
        up to 5 s for it to be gone. True if one was killed. Raises ``RemoteError``."""
        return "signalled" in self.remote.exec(node, ps.kill_script(self.paths), check=True).stdout

    def stop(self, node: str, timeout_s: float | None = None) -> bool:
        """SIGTERM the JVM (a broker then shuts down in a controlled way), wait up to
        ``timeout_s`` (default ``stop_timeout_s``) seconds, then SIGKILL.
        True if one was running. Raises ``RemoteError``."""
        timeout_s = self.stop_timeout_s if timeout_s is None else timeout_s
        result = self.remote.exec(node, ps.stop_script(self.paths, timeout_s), check=True,
                                  timeout_s=timeout_s + 30.0)
        if "sigkill" in result.stdout:
            log.warning("%s: Kafka did not exit within %.1f s of SIGTERM; killing it", node, timeout_s)
            self.kill(node)
        return "signalled" in result.stdout

    def pause(self, node: str) -> bool:
        """SIGSTOP the JVM; True if there was one. Raises ``RemoteError``."""
        return "signalled" in self.remote.exec(node, ps.signal_script(self.paths, "STOP"), check=True).stdout

    def resume(self, node: str) -> bool:
        """SIGCONT the JVM; True if there was one. Raises ``RemoteError``."""
        return "signalled" in self.remote.exec(node, ps.signal_script(self.paths, "CONT"), check=True).stdout

    def log_tail(self, node: str, lines: int = 20) -> str:
        """The last ``lines`` lines of ``server.log``, then of ``kafka.out`` when it is not
        empty (JVM errors before logging starts). '' if unreadable."""
        n, p = int(lines), self.paths
        script = (f"tail -n {n} {shlex.quote(p.log_file('server.log'))} 2>/dev/null; "
                  f"if [ -s {shlex.quote(p.out)} ]; then echo '--- kafka.out:'; "
                  f"tail -n {n} {shlex.quote(p.out)}; fi; true")
        res = self.remote.exec(node, script, check=False)
        return res.stdout if res.exit_code == 0 else ""

    def setup(self) -> None:
        """Install every node's config and format it, then start them all (each step in
        parallel), then check every JVM still runs after ``startup_check_s`` seconds, and wait
        until every controller has made its metadata partition directory
        (:meth:`wait_for_partition_dirs`).

        Raises :class:`TargetError` naming the failed nodes (with the log tails
        of those whose JVM exited).
        """
        nodes = list(self.cluster.nodes)
        _on_nodes(nodes, lambda n: (self.install_config(n), self.format(n)), "kafka format")
        _on_nodes(nodes, self.start, "kafka start")
        time.sleep(self.startup_check_s)
        dead = [n for n in nodes if not self.is_running(n)]
        if dead:
            tails = "\n".join(f"--- {n} ({self.role(n)}) {self.paths.log_dir}:\n{self.log_tail(n)}" for n in dead)
            raise TargetError(f"Kafka exited right after start on {', '.join(dead)}\n{tails}")
        self.wait_for_partition_dirs()

    def wait_for_partition_dirs(self, timeout_s: float = 30.0) -> list[str]:
        """Wait (up to ``timeout_s`` s) until every controller has made its metadata partition
        directory, ``__cluster_metadata-0/``; returns the controllers that still have none.

        Kafka makes it at start-up (``KafkaRaftManager.createLogDirectory``) and never fsyncs
        the metadata log dir that holds it, so on a power-loss disk (lazyfs) a power loss could
        drop the whole partition, log, snapshots and quorum-state, of a node that made it after
        the disks' baseline was synced. A real disk (ext4) commits that directory entry within
        seconds; the harness syncs its baseline when :meth:`setup` returns, which is why setup
        waits for it. Raises ``RemoteError`` when a node cannot be reached."""
        path = shlex.quote(posixpath.join(self.paths.metadata_dir, METADATA_PARTITION))
        waiting = self.controllers()
        deadline = time.monotonic() + timeout_s
        while waiting:
            waiting = [n for n in waiting if self.remote.exec(n, f"test -d {path}", check=False).exit_code != 0]
            if not waiting or time.monotonic() >= deadline:
                break
            time.sleep(0.5)
        if waiting:
            log.warning("no %s on %s %.0f s after start", METADATA_PARTITION, ", ".join(waiting), timeout_s)
        return waiting

    def teardown(self) -> dict[str, str]:
        """Stop every node: broker-only nodes first (their controlled shutdown needs the
        controllers), then the controllers, each group in parallel. Tolerant: returns
        ``{node: error}`` instead of raising."""
        errors: dict[str, str] = {}
        for group in ([n for n in self.cluster.nodes if self.role(n) == sc.ROLE_BROKER], self.controllers()):
            try:
                _on_nodes(group, self.stop, "kafka teardown")
            except TargetError as err:
                log.warning("%s", err)
                errors.update({n: str(e) for n, e in getattr(err, "errors", {}).items()})
        return errors

    def collect(self, node: str, dest: Path) -> dict[str, str]:
        """Copy the node's logs, config and metadata dir into ``dest``.

        Produces ``server.log``, ``controller.log``, ``kafka.out``,
        ``server.properties`` and ``metadata/`` (``meta.properties``,
        ``bootstrap.checkpoint``, ``__cluster_metadata-0/`` with its segments,
        snapshots and ``quorum-state``). Missing files are not fatal: returns
        ``{local name: error}`` for what could not be copied.
        """
        p = self.paths
        return self.copy_from(node, dest, ((p.log_file("server.log"), "server.log"),
                                           (p.log_file("controller.log"), "controller.log"),
                                           (p.out, "kafka.out"), (p.config, "server.properties"),
                                           (p.metadata_dir, METADATA_DIR)))

    def read_log(self, node: str) -> list[tuple[int, int, str, object]]:
        """The node's ``__cluster_metadata`` log as found now, ``[(offset, epoch, type,
        payload)]`` in offset order (copied, then read with
        :func:`targets.kafka.metadata_log.read_metadata_dir`, up to a torn tail).

        The directory is live: Kafka rolls segments and deletes old segments and snapshots while
        it is copied, which can cut a copy short; a failed copy is tried again, up to
        :data:`READ_LOG_TRIES` copies :data:`READ_LOG_RETRY_S` apart. Raises ``RemoteError``
        when the node or its metadata dir cannot be reached, or every copy failed."""
        from targets.kafka.metadata_log import read_metadata_dir
        for attempt in range(1, READ_LOG_TRIES + 1):
            with tempfile.TemporaryDirectory(prefix="kafka-meta-") as tmp:
                try:
                    self.remote.get(node, self.paths.metadata_dir, Path(tmp) / "metadata")
                except RemoteError as e:
                    # a missing dir or a stopped node stays so; a copy cut short may not
                    if attempt == READ_LOG_TRIES or "does not exist" in str(e) or "not running" in str(e):
                        raise
                    log.warning("%s: copy %d of its metadata log failed, trying again: %s", node, attempt, e)
                    time.sleep(READ_LOG_RETRY_S)
                    continue
                parsed = read_metadata_dir(Path(tmp) / "metadata", strict=False)
                return [(e.offset, e.epoch, e.type, e.payload) for e in parsed.entries]
