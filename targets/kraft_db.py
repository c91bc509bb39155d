"""Our Python KRaft as a target (``--db kraft``): configure, format, start, stop, kill, pause
and collect its nodes.

Our ``kraft`` package is in the node image at ``/opt/kraft/kraft`` (with
``PYTHONPATH=/opt/kraft``). Every node runs one ``python3 -m kraft.node``
process, detached, its pid in a pid file. All node access goes through the
:class:`clusters.remote.Remote` of the cluster.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import posixpath
import shlex
import tempfile
import time
from pathlib import Path

from clusters.parallel import NodeErrors, on_nodes
from clusters.remote import Cluster
from targets.kraft_client import kraft_client

from .base import DB, QuorumClientFactory
from .errors import TargetError
from .kraft_node_data import DATA_DIR
from .kraft_roles import KraftRoles, directory_id  # noqa: F401 - directory_id re-exported

log = logging.getLogger("kraft_chaos.db")


class DBError(TargetError):
    """A node could not be set up or started; the message names the node and shows its log tail."""


#: the directory on a node that holds everything it must keep (its data dir), and nothing
#: else: the lazyfs of ``--nemesis power-loss`` is mounted there (the node's log and pid file
#: stay outside, so a power loss does not take the evidence with it)
DISK_DIR = "/var/lib/kraft/disk"


@dataclasses.dataclass(frozen=True)
class NodePaths:
    """Where things live on a node (absolute POSIX paths)."""

    config: str = "/etc/kraft/node.properties"
    #: below :data:`DISK_DIR`, the one directory a power-loss disk (lazyfs) is mounted on
    data_dir: str = "/var/lib/kraft/disk/data"
    log: str = "/var/lib/kraft/node.log"
    pid: str = "/var/lib/kraft/node.pid"
    python: str = "python3"

    def dirs(self) -> list[str]:
        """The directories that must exist before the node starts."""
        return sorted({posixpath.dirname(p) for p in (self.config, self.log, self.pid)} | {self.data_dir})


def node_seed(run_seed: int, node_id: int) -> int:
    """The node's election-jitter seed: first 63 bits of SHA-256 of ``"<run_seed>:<node_id>"``.

    Stable across Python processes (unlike ``hash``).
    """
    digest = hashlib.sha256(f"{run_seed}:{node_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") & (2**63 - 1)




def _positive_ms(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive integer number of ms, got {value!r}")
    return value


class KraftDB(KraftRoles, DB):
    """The KRaft nodes of ``cluster``, node ids 1..n in ``cluster.nodes`` order: the first
    ``n - brokers`` are the voters (controllers), the last ``brokers`` (default 0) run
    ``process.roles=broker`` (observers of the quorum that serve the data plane,
    docs/data-plane.md), like ``--db kafka``'s dedicated topology.

    ``cluster_id``: the cluster id given to ``kraft format`` (non-empty, no
    whitespace). ``seed``: the run seed (node seeds derive from it, see
    :func:`node_seed`). ``port``: the controller listener port on every
    node. Timeouts are in ms (KIP-595 ``controller.quorum.*`` settings).
    ``pre_vote`` (KIP-996) and ``check_quorum`` switch those mechanisms;
    ``unsafe`` lists ``kraft.core.unsafe`` switch names. ``fetch_max_records``
    bounds the records of one Fetch response (``fetch.max.records``; None: the
    node's default). ``kraft_version`` 0 (default): static
    ``controller.quorum.voters``; 1 (KIP-853): formatted with
    ``--initial-controllers`` (directory ids from :func:`directory_id`), the
    nodes find the quorum through ``controller.quorum.bootstrap.servers``.
    Brokers always get ``controller.quorum.bootstrap.servers`` (and the static voters at
    kraft.version 0) and are formatted without voters at kraft.version 1. Raises
    ``ValueError`` for bad arguments (also ``brokers`` leaving no controller).
    """

    def __init__(self, cluster: Cluster, cluster_id: str, seed: int, port: int = 9093,
                 election_timeout_ms: int = 1000, fetch_timeout_ms: int = 2000,
                 request_timeout_ms: int = 2000, fetch_max_wait_ms: int = 500,
                 pre_vote: bool = True, check_quorum: bool = True,
                 unsafe: list[str] | tuple[str, ...] = (), fetch_max_records: int | None = None, *, paths: NodePaths = NodePaths(),
                 segment_bytes: int | None = None,
                 stop_timeout_s: float = 5.0, startup_check_s: float = 1.0, kraft_version: int = 0,
                 brokers: int = 0):
        if not isinstance(cluster_id, str) or not cluster_id or any(c.isspace() for c in cluster_id):
            raise ValueError(f"cluster_id must be a non-empty string without whitespace, got {cluster_id!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be an int, got {seed!r}")
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            raise ValueError(f"port must be an int in 1..65535, got {port!r}")
        if not cluster.nodes:
            raise ValueError("the cluster has no nodes")
        for name in unsafe:
            if not isinstance(name, str) or not name or any(c in name for c in ",\n=") or name != name.strip():
                raise ValueError(f"bad unsafe switch name {name!r}")
        if isinstance(brokers, bool) or not isinstance(brokers, int) or not 0 <= brokers < len(cluster.nodes):
            raise ValueError(f"brokers must be an int in 0..{len(cluster.nodes) - 1} (at least one controller "
                             f"among the cluster's {len(cluster.nodes)} nodes), got {brokers!r}")
        self.n_brokers = brokers
        if isinstance(kraft_version, bool) or kraft_version not in (0, 1):
            raise ValueError(f"kraft_version must be 0 or 1, got {kraft_version!r}")
        self.kraft_version = kraft_version
        self.cluster = cluster
        self.cluster_id = cluster_id
        self.seed = seed
        self.port = port
        self.election_timeout_ms = _positive_ms("election_timeout_ms", election_timeout_ms)
        self.fetch_timeout_ms = _positive_ms("fetch_timeout_ms", fetch_timeout_ms)
        self.request_timeout_ms = _positive_ms("request_timeout_ms", request_timeout_ms)
        self.fetch_max_wait_ms = _positive_ms("fetch_max_wait_ms", fetch_max_wait_ms)
        self.pre_vote = bool(pre_vote)
        self.check_quorum = bool(check_quorum)
        self.unsafe = list(unsafe)
        if fetch_max_records is not None and (isinstance(fetch_max_records, bool)
                                              or not isinstance(fetch_max_records, int) or fetch_max_records < 1):
            raise ValueError(f"fetch_max_records must be an int >= 1, got {fetch_max_records!r}")
        self.fetch_max_records = fetch_max_records
        if segment_bytes is not None and (isinstance(segment_bytes, bool) or not isinstance(segment_bytes, int)
                                          or segment_bytes < 1):
            raise ValueError(f"segment_bytes must be an int >= 1, got {segment_bytes!r}")
        self.segment_bytes = segment_bytes
        self.paths = paths
        self.stop_timeout_s = stop_timeout_s
        self.startup_check_s = startup_check_s

    # --- identity ---------------------------------------------------------

    def address(self, node: str) -> tuple[str, int]:
        """``(host, port)`` of the node's controller listener."""
        self.node_id(node)
        return self.cluster.ip(node), self.port

    def quorum_client_factory(self) -> QuorumClientFactory:
        """:func:`targets.kraft_client.kraft_client`: DescribeQuorum through our own client."""
        return kraft_client

    def config_text(self, node: str) -> str:
        """The contents of the node's properties file (see ``kraft/runtime/config.py`` for the keys)."""
        host, port = self.address(node)
        nid = self.node_id(node)
        broker = self.is_broker(node)
        lines = [
            f"node.id={nid}",
            f"listeners={host}:{port}",
            *(["process.roles=broker"] if broker else []),
            *([f"controller.quorum.voters={self.voters()}"] if self.kraft_version == 0 else []),
            *([f"controller.quorum.bootstrap.servers={self.bootstrap_servers()}"]
              if self.kraft_version == 1 or broker else []),
            f"log.dir={self.paths.data_dir}",
            f"cluster.id={self.cluster_id}",
            f"controller.quorum.election.timeout.ms={self.election_timeout_ms}",
            f"controller.quorum.fetch.timeout.ms={self.fetch_timeout_ms}",
            f"controller.quorum.request.timeout.ms={self.request_timeout_ms}",
            f"controller.quorum.fetch.max.wait.ms={self.fetch_max_wait_ms}",
            f"pre_vote={'true' if self.pre_vote else 'false'}",
            f"check_quorum={'true' if self.check_quorum else 'false'}",
            f"unsafe={','.join(self.unsafe)}",
            *([f"fetch.max.records={self.fetch_max_records}"] if self.fetch_max_records else []),
            *([f"log.segment.bytes={self.segment_bytes}"] if self.segment_bytes else []),
            f"seed={node_seed(self.seed, nid)}",
        ]
        return "\n".join(lines) + "\n"

    # --- shell snippets ---------------------------------------------------

    def _running_test(self) -> str:
        """sh condition: the pid file names a live ``kraft.node`` process (zombies have no cmdline)."""
        pidfile = shlex.quote(self.paths.pid)
        return (f'pid=$(cat {pidfile} 2>/dev/null) && [ -n "$pid" ] && '
                f'tr "\\000" " " < /proc/$pid/cmdline 2>/dev/null | grep -q "kraft[.]node"')

    def _signal_script(self, sig: str) -> str:
        """sh script: send ``sig`` to the node process; prints ``signalled`` if one got it."""
        return f'if {self._running_test()}; then kill -{sig} "$pid" && echo signalled; fi'

    def _kill_script(self) -> str:
        """sh script: SIGKILL the pid-file process, then any other ``kraft.node`` process
        started with our config (``pkill -9 -f`` without matching this shell), then
        wait up to 5 s for them to be gone. Prints ``signalled`` per kill."""
        marker = f"--config {self.paths.config}"
        return (
            f"{self._signal_script('9')}\n"
            "for p in /proc/[0-9]*; do\n"
            '  n=${p#/proc/}; [ "$n" = "$$" ] && continue\n'
            '  c=$(tr "\\000" " " < $p/cmdline 2>/dev/null) || continue\n'
            # "kraft[.]node" cannot match this script's own text (nor that of a wrapper like timeout)
            f'  case "$c" in *kraft[.]node*{shlex.quote(marker)}*) kill -9 "$n" 2>/dev/null && echo signalled;; esac\n'
            "done\n"
            f"i=0; while {self._running_test()} && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done\n"
            "true"
        )

    def _stop_script(self, timeout_s: float) -> str:
        """sh script: SIGTERM (and SIGCONT, in case it is paused), wait up to
        ``timeout_s``, then SIGKILL. Prints ``signalled`` if a process got SIGTERM."""
        ticks = max(1, int(timeout_s * 10))
        return (
            f'if {self._running_test()}; then kill -TERM "$pid"; kill -CONT "$pid"; echo signalled; fi\n'
            f"i=0; while {self._running_test()} && [ $i -lt {ticks} ]; do sleep 0.1; i=$((i+1)); done\n"
            f"if {self._running_test()}; then echo sigkill; fi\n"
        )

    def _start_script(self) -> str:
        """sh script: start the node detached unless it runs; prints ``started`` or ``running``."""
        p = self.paths
        return (
            f"if {self._running_test()}; then echo running; exit 0; fi\n"
            "cd / || exit 1\n"
            f"nohup {shlex.quote(p.python)} -m kraft.node --config {shlex.quote(p.config)} "
            f"</dev/null >>{shlex.quote(p.log)} 2>&1 &\n"
            f"echo $! > {shlex.quote(p.pid)}\n"
            "echo started"
        )

    # --- lifecycle ----------------------------------------------------------

    def install_config(self, node: str) -> None:
        """Create the node's directories and write its properties file (via ``remote.put``)."""
        dirs = " ".join(shlex.quote(d) for d in self.paths.dirs())
        self.remote.exec(node, f"mkdir -p {dirs}", check=True)
        with tempfile.TemporaryDirectory(prefix="kraft-conf-") as tmp:
            local = Path(tmp) / "node.properties"
            local.write_text(self.config_text(node))
            self.remote.put(node, local, self.paths.config)

    def format(self, node: str) -> None:
        """Wipe the node's data dir and log, then run ``kraft format`` (cluster id, node id).

        Raises ``RemoteError`` if formatting fails.
        """
        p = self.paths
        # --cluster-id=X: a base64url id may start with "-", which argparse would take for an option
        argv = [p.python, "-m", "kraft", "format", f"--cluster-id={self.cluster_id}",
                "--node-id", str(self.node_id(node)), "--data-dir", p.data_dir]
        if self.kraft_version == 1:      # KIP-853: the bootstrap voter set, with directory ids (brokers: none)
            argv.append("--no-initial-controllers" if self.is_broker(node)
                        else f"--initial-controllers={self.initial_controllers()}")
        script = (f"rm -rf {shlex.quote(p.data_dir)} {shlex.quote(p.log)} {shlex.quote(p.pid)} && "
                  f"mkdir -p {shlex.quote(p.data_dir)} && cd / && "
                  + " ".join(shlex.quote(a) for a in argv))
        self.remote.exec(node, script, check=True, timeout_s=60.0)

    def reformat(self, node: str) -> None:
        """Delete the node's data dir (not its log) and ``kraft format`` it again: same cluster
        id and node id, a fresh directory id (KIP-853). At kraft.version 1 with
        ``--no-initial-controllers``: it comes back as an observer until it is added as a
        voter again (AddRaftVoter). Raises ``RemoteError``."""
        p = self.paths
        argv = [p.python, "-m", "kraft", "format", f"--cluster-id={self.cluster_id}",
                "--node-id", str(self.node_id(node)), "--data-dir", p.data_dir]
        if self.kraft_version == 1:
            argv.append("--no-initial-controllers")
        script = (f"rm -rf {shlex.quote(p.data_dir)} && mkdir -p {shlex.quote(p.data_dir)} && cd / && "
                  + " ".join(shlex.quote(a) for a in argv))
        self.remote.exec(node, script, check=True, timeout_s=60.0)

    def _voter_change(self, op: str, node: str, directory_id: str) -> dict:
        """AddRaftVoter / RemoveRaftVoter through ``kraft.wire.client`` to the leader
        (:func:`targets.voters.kraft_change`)."""
        from .voters import kraft_change
        return kraft_change(self, op, node, directory_id)

    def disk_state(self, node: str) -> dict:
        """``{"directory_id", "last_offset"}`` of the node's data dir, read in place by
        ``kraft.storage.logreader`` (None for what is missing or unreadable). Raises ``RemoteError``
        when the node cannot be reached."""
        code = ("import json\nfrom kraft.storage.logreader import read_data_dir\n"
                f"try:\n    d = read_data_dir({self.paths.data_dir!r})\n"
                "except Exception:\n    print(json.dumps({}))\n"
                "else:\n    print(json.dumps({'directory_id': d.meta.directory_id if d.meta else None,\n"
                "        'last_offset': d.records[-1].offset if d.records else None}))\n")
        res = self.remote.exec(node, f"cd / && {shlex.quote(self.paths.python)} -c {shlex.quote(code)}",
                               check=False, timeout_s=60.0)
        try:
            out = json.loads(res.stdout.strip().splitlines()[-1]) if res.exit_code == 0 else {}
        except (ValueError, IndexError):
            out = {}
        return {"directory_id": out.get("directory_id"), "last_offset": out.get("last_offset")}

    def start(self, node: str) -> bool:
        """Start the node's process, detached, unless it already runs.

        Returns True if it was started, False if it was running. Raises
        ``RemoteError`` when the node cannot be reached.
        """
        result = self.remote.exec(node, self._start_script(), check=True)
        started = "started" in result.stdout
        log.info("%s: %s", node, "started" if started else "already running")
        return started

    def is_running(self, node: str) -> bool:
        """True if the node's ``kraft.node`` process exists (a paused one counts)."""
        return self.remote.exec(node, self._running_test(), check=False).exit_code == 0

    def kill(self, node: str) -> bool:
        """SIGKILL the node's process (pid file, then any process with our config).

        Waits up to 5 s for it to be gone. Returns True if a process was
        killed. Raises ``RemoteError`` when the node cannot be reached.
        """
        result = self.remote.exec(node, self._kill_script(), check=True)
        return "signalled" in result.stdout

    def stop(self, node: str, timeout_s: float | None = None) -> bool:
        """SIGTERM the node's process, wait up to ``timeout_s`` (default
        ``stop_timeout_s``) seconds for it to exit, then SIGKILL.

        Returns True if a process was running. Raises ``RemoteError``.
        """
        timeout_s = self.stop_timeout_s if timeout_s is None else timeout_s
        result = self.remote.exec(node, self._stop_script(timeout_s), check=True,
                                  timeout_s=timeout_s + 30.0)
        if "sigkill" in result.stdout:
            log.warning("%s: did not exit within %.1f s of SIGTERM; killing it", node, timeout_s)
            self.kill(node)
        return "signalled" in result.stdout

    def pause(self, node: str) -> bool:
        """SIGSTOP the node's process; True if there was one. Raises ``RemoteError``."""
        return "signalled" in self.remote.exec(node, self._signal_script("STOP"), check=True).stdout

    def resume(self, node: str) -> bool:
        """SIGCONT the node's process; True if there was one. Raises ``RemoteError``."""
        return "signalled" in self.remote.exec(node, self._signal_script("CONT"), check=True).stdout

    def log_tail(self, node: str, lines: int = 20) -> str:
        """The last ``lines`` lines of the node's log ('' if unreadable)."""
        res = self.remote.exec(node, f"tail -n {int(lines)} {shlex.quote(self.paths.log)}", check=False)
        return res.stdout if res.exit_code == 0 else ""

    def setup(self) -> None:
        """Install config, format and start every node (in parallel), then check they still run
        after ``startup_check_s`` seconds (1 s by default: a node with a bad config exits once
        its imports are done, 0.2-0.7 s after its start on a loaded 2-core host; on the netns
        backend, with no exec latency, 0.5 s sometimes saw it still running).

        Raises :class:`DBError` naming the failed nodes (with their log tails).
        """
        nodes = list(self.cluster.nodes)
        try:
            on_nodes(nodes, self.setup_node, what="db setup")
        except NodeErrors as err:
            raise DBError(str(err)) from err
        time.sleep(self.startup_check_s)
        dead = [n for n in nodes if not self.is_running(n)]
        if dead:
            tails = "\n".join(f"--- {n} {self.paths.log}:\n{self.log_tail(n)}" for n in dead)
            raise DBError(f"node process exited right after start on {', '.join(dead)}\n{tails}")

    def teardown(self) -> dict[str, str]:
        """Stop every node (in parallel); tolerant: returns ``{node: error}`` instead of raising."""
        try:
            on_nodes(self.cluster.nodes, self.stop, what="db teardown")
        except NodeErrors as err:
            log.warning("%s", err)
            return {n: str(e) for n, e in err.errors.items()}
        return {}

    def collect(self, node: str, dest: Path) -> dict[str, str]:
        """Copy the node's log, config and data dir into ``dest``.

        Produces ``dest/node.log``, ``dest/node.properties`` and ``dest/data/``
        (so ``dest/data/meta.properties`` etc.). Missing files are not fatal:
        returns ``{local name: error}`` for what could not be copied.
        """
        return self.copy_from(node, dest, ((self.paths.log, "node.log"), (self.paths.config, "node.properties"),
                                           (self.paths.data_dir, DATA_DIR)))
