"""The SSH backend's :class:`~clusters.remote.Cluster` (``--cluster ssh --hosts hosts.toml``):
node ``ni`` runs on the i-th host of the hosts file (:mod:`clusters.ssh_hosts`), reached over
SSH through fabric/paramiko (:mod:`clusters.ssh_session`), as root.

Set-up, per host in parallel: connect (host key checked against known_hosts), make sure
commands can run as root (``sudo -n`` or a root login), check the tools, python (>= 3.11),
overlayfs and, for a target that runs a JVM, java (``min_java``: >= 17 for Kafka), remove the
leftovers of dead runs (a host whose node of another run is still alive is busy: an error),
deploy the node's folder (our ``kraft/`` or Kafka's jars, and the init script, as one tar
stream) under the host's run dir and start the node's init (:mod:`clusters.ssh_scripts`).
Every failure names the host and its cause and is a :class:`~clusters.errors.ClusterError`
(exit 4); what was started is removed first.

Teardown, per host: SIGKILL the node's init (every process of the node goes with it), delete
the node's folder (and the run's and the run dir when empty), and every ``KC-*`` iptables
chain with its jumps; then close the connections. :func:`sweep_hosts` does the same for every
run found on the hosts (``kraft-chaos teardown --cluster ssh --hosts F``).
"""
from __future__ import annotations

import ipaddress
import logging
import re
import socket
import threading
from pathlib import Path
from typing import Mapping, Sequence

from clusters.addressing import node_names
from clusters.errors import ClusterError
from clusters.jre import probe_problem
from clusters.parallel import NodeErrors, on_nodes
from clusters.remote import Cluster
from clusters.ssh_hosts import HostSpec, load_hosts
from clusters.ssh_remote import SshRemote, as_root
from clusters.ssh_scripts import (TOOLS_DIR, deploy_tar, init_script, launch_script, node_dir, preflight_script,
                                  runs_script, teardown_script, unpack_script)
from clusters.ssh_session import SshHostError, SshSession

log = logging.getLogger(__name__)

RUN_ID_RE = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$")
#: the oldest python the nodes' code runs on
MIN_PYTHON = (3, 11)
#: seconds for a set-up or teardown step on one host
STEP_S = 120.0


def _first_error(err: NodeErrors) -> ClusterError:
    """One :class:`ClusterError` for the failures of a per-host step: the message of each."""
    causes = "; ".join(f"{node}: {e}" for node, e in sorted(err.errors.items()))
    first = next(iter(err.errors.values()))
    return first if len(err.errors) == 1 and isinstance(first, SshHostError) else ClusterError(causes)


def resolve_address(spec: HostSpec) -> str:
    """``spec.address``, or ``spec.host`` as an IPv4 address (resolved on this machine). Raises
    :class:`SshHostError` when the name does not resolve."""
    if spec.address:
        return spec.address
    try:
        return str(ipaddress.IPv4Address(spec.host))
    except ValueError:
        pass
    try:
        return socket.getaddrinfo(spec.host, spec.port, socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
    except socket.gaierror as e:
        raise SshHostError(spec.label, f"unknown host name {spec.host!r} ({e.strerror})") from None


class SshCluster(Cluster):
    """``n_nodes`` nodes ``n1..nN`` on the first ``n_nodes`` hosts of ``hosts`` (a hosts file
    path, or its :class:`~clusters.ssh_hosts.HostSpec` list) for run ``run_id``.

    ``files``: ``{node path: local path}`` deployed read-only on every node (e.g.
    ``{"/opt/kraft/kraft": repo/kraft}``); ``env``: extra environment of every node command
    (``PATH`` starts with :data:`~clusters.ssh_scripts.TOOLS_DIR`, whose ``python3`` is the
    host's python with ``-S``). ``min_java``: the nodes run each host's ``java`` (on its
    ``PATH``), whose major version must be at least this (checked with the tools; None: no
    JVM). Raises ``ValueError`` (exit 3) for a bad ``run_id`` or ``files``, a bad hosts file (:class:`~clusters.ssh_hosts.HostsFileError`), or fewer hosts
    than nodes.
    """

    def __init__(self, n_nodes: int, run_id: str, hosts: str | Path | Sequence[HostSpec], keep: bool = False, *,
                 files: Mapping[str, str | Path] | None = None, env: Mapping[str, str] | None = None,
                 min_java: int | None = None):
        if not isinstance(run_id, str) or not RUN_ID_RE.match(run_id):
            raise ValueError(f"run_id {run_id!r} must be 1-63 characters of [a-zA-Z0-9_.-], "
                             "starting with a letter or digit")
        self.nodes = node_names(n_nodes)
        specs = load_hosts(hosts) if isinstance(hosts, (str, Path)) else list(hosts)
        if len(specs) < n_nodes:
            src = specs[0].source if specs and specs[0].source else "the hosts file"
            raise ValueError(f"{n_nodes} nodes need {n_nodes} hosts; {src} lists {len(specs)} "
                             f"(pass --nodes {len(specs)} or add hosts)")
        self.specs = dict(zip(self.nodes, specs))
        self.files = {str(k): Path(v) for k, v in (files or {}).items()}
        for inside, src in self.files.items():
            if not inside.startswith("/") or not src.is_absolute():
                raise ValueError(f"files: {inside!r} <- {str(src)!r} must both be absolute paths")
            if not src.exists():
                raise ValueError(f"files: {src} (for {inside}) does not exist")
        self.run_id, self.keep, self.min_java = run_id, keep, min_java
        self.sessions = {n: SshSession(s) for n, s in self.specs.items()}
        self._ips: dict[str, str] = {}
        self._python: dict[str, str] = {}
        self._inits: dict[str, int] = {}
        #: nodes whose folder this cluster began to deploy: teardown cleans only their hosts (a
        #: host found busy with another run keeps that run's nodes and chains)
        self._deployed: set[str] = set()
        self._lock = threading.Lock()
        env_all = {"PATH": f"{TOOLS_DIR}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                   "HOME": "/root", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
        self.remote = SshRemote(self.sessions, self._init_pid, env_all)

    def ip(self, node: str) -> str:
        """The node's IPv4 address (its host's ``address``, or ``host`` resolved). Raises
        ``ValueError`` on an unknown node, :class:`SshHostError` when the name does not resolve."""
        if node not in self.specs:
            raise ValueError(f"unknown node {node!r}; nodes are {self.nodes}")
        if node not in self._ips:
            self._ips[node] = resolve_address(self.specs[node])
        return self._ips[node]

    def init_pids(self) -> dict[str, int]:
        """``{node: pid of its init on its host}`` of the nodes set up."""
        with self._lock:
            return dict(self._inits)

    def _init_pid(self, node: str) -> int:
        with self._lock:
            return self._inits[node]

    def node_dir(self, node: str) -> str:
        """The node's folder on its host: ``<run_dir>/<run_id>/<node>``."""
        return node_dir(self.specs[node].run_dir, self.run_id, node)

    # -- setup ---------------------------------------------------------------------

    def setup(self) -> None:
        """Connect to every host, check it, deploy and start the nodes (in parallel).

        Raises :class:`SshHostError` (one host failed) or :class:`ClusterError` (several),
        naming each host and cause; everything started is removed first.
        """
        addresses = {n: self.ip(n) for n in self.nodes}
        dup = {a for a in addresses.values() if list(addresses.values()).count(a) > 1}
        if dup:
            raise ClusterError(f"several nodes would share the address {', '.join(sorted(dup))}: each node "
                               "needs a host of its own (set address = ... per host)")
        try:
            on_nodes(self.nodes, self._check_host, what="ssh host check")
            hosts_lines = "".join(f"{addresses[n]}\t{n}\n" for n in self.nodes)
            on_nodes(self.nodes, lambda n: self._start_node(n, hosts_lines), what="ssh node start")
        except BaseException as e:
            self.teardown()
            if isinstance(e, NodeErrors):
                raise _first_error(e) from e
            raise
        log.info("ssh cluster %s up: %s", self.run_id,
                 ", ".join(f"{n}={addresses[n]} ({self.specs[n].label})" for n in self.nodes))

    def _check_host(self, node: str) -> None:
        session, spec = self.sessions[node], self.specs[node]
        session.connect()
        session.check_root()
        preflight = preflight_script(spec.python, java=self.min_java is not None)
        code, out, err = session.run(as_root(session, ["sh", "-c", preflight]), timeout_s=STEP_S)
        text = out.decode(errors="replace")
        if code != 0:
            raise SshHostError(spec.label, f"the host check failed: {err.decode(errors='replace').strip()[-300:]}")
        missing = [line.split()[1] for line in text.splitlines() if line.startswith("missing ")]
        if missing:
            raise SshHostError(spec.label, f"{', '.join(missing)} not installed (Debian: coreutils, util-linux, "
                                           "iptables, tar, sed, grep)")
        if "overlay-missing" in text:
            raise SshHostError(spec.label, "the kernel has no overlayfs (the nodes' /etc, /var, /opt are overlays)")
        found = re.search(r"^python (\S+) (\d+)\.(\d+)$", text, re.M)
        if not found:
            raise SshHostError(spec.label, f"no {spec.python} on the host (set python = ... in the hosts file)")
        if (int(found.group(2)), int(found.group(3))) < MIN_PYTHON:
            raise SshHostError(spec.label, f"{found.group(1)} is python {found.group(2)}.{found.group(3)}; the nodes "
                                           f"need >= {'.'.join(map(str, MIN_PYTHON))}")
        if self.min_java is not None:
            problem = probe_problem(text, self.min_java)
            if problem:
                raise SshHostError(spec.label, problem)
        self._python[node] = found.group(1)
        self._reap(node)

    def _reap(self, node: str) -> None:
        """Remove this host's node folders of dead runs; raise :class:`SshHostError` when a node
        of another run still lives there (the host is busy)."""
        session, spec = self.sessions[node], self.specs[node]
        _, out, _ = session.run(as_root(session, ["sh", "-c", runs_script(spec.run_dir)]), timeout_s=STEP_S)
        rows = [line.split() for line in out.decode(errors="replace").splitlines() if len(line.split()) == 3]
        live = sorted({run for run, _, state in rows if state == "live" and run != self.run_id})
        if live:
            raise SshHostError(spec.label, f"busy: run {', '.join(live)} still has a node there (remove it with "
                                           f"`kraft-chaos teardown --cluster ssh --hosts {spec.source or 'FILE'}`)")
        own = [n for run, n, _ in rows if run == self.run_id and n == node]
        if own:
            raise SshHostError(spec.label, f"run {self.run_id} already has node {node} there")
        for run, n, _ in rows:
            if run != self.run_id:
                _, out, _ = session.run(as_root(session, ["sh", "-c", teardown_script(spec.run_dir, run, n)]),
                                        timeout_s=STEP_S)
                log.warning("%s: removed the leftovers of dead run %s: %s", spec.label, run,
                            "; ".join(out.decode(errors="replace").split("\n")).strip("; "))

    def _start_node(self, node: str, hosts_lines: str) -> None:
        session, spec = self.sessions[node], self.specs[node]
        ndir, python = self.node_dir(node), self._python[node]
        with self._lock:
            self._deployed.add(node)
        tar = deploy_tar(self.run_id, node, python, self.files, init_script(ndir, python, self.files, hosts_lines))
        code, _, err = session.run(as_root(session, ["sh", "-c", unpack_script(ndir, python)]), stdin=tar,
                                   timeout_s=STEP_S)
        if code != 0:
            raise SshHostError(spec.label, f"deploying to {ndir} failed: {err.decode(errors='replace').strip()[-500:]}")
        code, out, err = session.run(as_root(session, ["sh", "-c", launch_script(ndir)]), timeout_s=STEP_S)
        found = re.search(r"^init (\d+) (\d+)$", out.decode(errors="replace"), re.M)
        if code != 0 or not found:
            raise SshHostError(spec.label, f"node {node} could not start: "
                                           f"{(err or out).decode(errors='replace').strip()[-800:]}")
        with self._lock:
            self._inits[node] = int(found.group(1))

    # -- teardown ------------------------------------------------------------------

    def teardown(self) -> None:
        """Remove every node's processes, folder and iptables chains from its host (the hosts
        where this cluster began to deploy a node), then close the connections. Idempotent; never raises: failures are logged as warnings (a host that
        cannot be reached keeps its node: `kraft-chaos teardown --cluster ssh --hosts F`)."""
        with self._lock:
            self._inits.clear()
            deployed, self._deployed = self._deployed, set()

        def clean(node: str) -> None:
            session, spec = self.sessions[node], self.specs[node]
            if node not in deployed:
                return
            code, out, err = session.run(as_root(session, ["sh", "-c", teardown_script(spec.run_dir, self.run_id, node)]),
                                         timeout_s=STEP_S)
            for line in out.decode(errors="replace").splitlines():
                (log.warning if line.startswith("warning") else log.info)("%s: %s", spec.label, line)
            if code != 0:
                log.warning("teardown %s on %s: %s", self.run_id, spec.label, err.decode(errors="replace").strip())

        try:
            on_nodes(sorted(deployed), clean, what="ssh teardown")
        except NodeErrors as e:
            log.warning("teardown %s: %s (remove what is left with `kraft-chaos teardown --cluster ssh "
                        "--hosts FILE`)", self.run_id, e)
        except Exception as e:  # noqa: BLE001 - teardown must not raise
            log.warning("teardown %s: %s", self.run_id, e)
        for session in self.sessions.values():
            session.close()


def sweep_hosts(hosts: str | Path | Sequence[HostSpec]) -> tuple[list[str], list[str]]:
    """Remove every kraft-chaos node (of any run) from every host of ``hosts``: processes,
    folders under the run dir, ``KC-*`` iptables chains.

    Returns ``(removed, errors)``: one line per thing removed (``user@host:port: removed ...``)
    and one per host that could not be swept, naming the cause. Raises
    :class:`~clusters.ssh_hosts.HostsFileError` for a bad hosts file.
    """
    specs = load_hosts(hosts) if isinstance(hosts, (str, Path)) else list(hosts)
    keys = [f"h{i}" for i in range(len(specs))]
    out: dict[str, list[str]] = {}

    def sweep(key: str) -> None:
        spec = specs[keys.index(key)]
        session = SshSession(spec)
        try:
            session.connect()
            session.check_root()
            code, text, err = session.run(as_root(session, ["sh", "-c", teardown_script(spec.run_dir, None, None)]),
                                          timeout_s=STEP_S)
        finally:
            session.close()
        if code != 0:
            raise SshHostError(spec.label, f"the sweep failed: {err.decode(errors='replace').strip()[-300:]}")
        out[key] = [f"{spec.label}: {line}" for line in text.decode(errors="replace").splitlines() if line]

    errors: list[str] = []
    try:
        on_nodes(keys, sweep, what="ssh sweep")
    except NodeErrors as e:
        errors = [str(err) for _, err in sorted(e.errors.items())]
    return [line for k in keys for line in out.get(k, [])], errors
