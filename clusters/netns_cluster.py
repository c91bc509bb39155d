"""The netns backend's :class:`~clusters.remote.Cluster`: one node per set of Linux
namespaces on this host, on a bridge the run creates; no container engine.

A node ``ni`` is a process tree started by ``ip netns exec <ns> unshare --pid --mount --uts
--mount-proc``: its init (a small Python loop that reaps orphans, like Docker's
``docker-init``) lives in

- the network namespace ``kraft-chaos-<run_id>-ni`` (``ip netns list``), whose ``eth0`` is
  one end of a veth pair on the run's bridge, address host ``10 + i`` of the subnet (n1 ->
  .11; the bridge, on the host, is .1), so the harness reaches the nodes as it reaches
  Docker's;
- a mount namespace where ``/etc``, ``/var`` and ``/opt`` are overlays whose upper layers
  are the node's own directories under ``root_dir`` (so ``/etc/kraft``, ``/var/lib/kraft``
  are the node's own, as in a container), ``/tmp`` and ``/run`` are its own directories,
  the deployed ``files`` are read-only bind mounts, and ``binds`` are bound read-write;
- a pid namespace (``/proc`` shows only the node's processes, so the process-control
  scripts of the targets and nemeses act on this node only) and a UTS namespace (hostname
  ``ni``; ``/etc/hosts`` names every node).

Commands reach a node through :class:`clusters.netns_remote.NetnsRemote` (``nsenter``).
Killing a node's init with SIGKILL ends every process of that node. Needs root, the kernel's
overlayfs, and ``ip``, ``iptables``, ``nsenter``, ``unshare``, ``findmnt``, ``tar``,
``timeout`` on this host (:data:`clusters.netns_net.TOOLS`).
"""
from __future__ import annotations

import compileall
import logging
import os
import select
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Mapping

from clusters import netns_net as net
from clusters.addressing import gateway_ip, node_ips, node_names, parse_subnet
from clusters.errors import ClusterError
from clusters.netns_remote import NetnsRemote
from clusters.parallel import NodeErrors, on_nodes
from clusters.remote import Cluster

log = logging.getLogger(__name__)

RUN_ID_RE_TEXT = r"^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$"
#: directories that are overlays in each node (writes land in the node's upper layer)
OVERLAY_DIRS = ("etc", "var", "opt")
#: directories that are the node's own, empty at start
PRIVATE_DIRS = ("run", "tmp")
#: where a node finds ``python3`` (the host interpreter with ``-S``: no site-packages, as in the
#: node image, and a quicker start): first on its PATH
TOOLS_DIR = "/opt/kraft-chaos/bin"
#: seconds a node's init may take to set up its namespaces
INIT_TIMEOUT_S = 30.0
#: the node's init: reap orphans forever (stdlib only)
REAPER = ("import os, time\nwhile True:\n    try:\n        os.waitpid(-1, 0)\n"
          "    except ChildProcessError:\n        time.sleep(0.2)\n    except InterruptedError:\n        pass\n")
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo", ".pytest_cache")


def host_python() -> str:
    """The interpreter the harness runs on, outside any virtualenv (resolved symlinks): the
    ``python3`` of the nodes."""
    return os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)


def missing_tools() -> list[str]:
    """The host commands the backend needs that are not on PATH."""
    return [t for t in net.TOOLS if shutil.which(t) is None]


class NetnsCluster(Cluster):
    """``n_nodes`` nodes ``n1..nN`` as namespaces on this host, on the bridge ``kcb<tag>``.

    ``subnet``: IPv4 CIDR (node ``ni`` gets host ``10 + i``); it must not overlap a route of
    this host (a Docker network, another run). ``files``: ``{node path: host path}``, a
    snapshot of each host file or directory (caches left out, Python files byte-compiled)
    mounted read-only at that path in every node, e.g. ``{"/opt/kraft/kraft": repo/kraft}``.
    ``env``: extra environment of every command (``PATH`` starts with :data:`TOOLS_DIR`,
    whose ``python3`` runs ``python`` (default :func:`host_python`) with ``-S``).
    ``binds``: ``{node: {host path: node path}}`` bound read-write (a lazyfs mount as a data
    dir). ``min_java``: the nodes run this host's ``java``, which must be at least this major
    version (checked at set-up). ``root_dir``: where the nodes' files go
    (``<root_dir>/<node>/upper/etc/...``); created if missing; None: a temporary directory,
    removed at teardown.

    Raises ``ValueError`` for a bad ``n_nodes``, ``run_id``, ``subnet``, ``files`` or
    ``binds`` (unknown node, relative path, missing host path).
    """

    def __init__(self, n_nodes: int, run_id: str, subnet: str = "10.77.0.0/24", keep: bool = False, *,
                 files: Mapping[str, str | Path] | None = None, env: Mapping[str, str] | None = None,
                 binds: Mapping[str, Mapping[str, str]] | None = None,
                 root_dir: str | Path | None = None, python: str | None = None, min_java: int | None = None):
        import re
        if not isinstance(run_id, str) or not re.match(RUN_ID_RE_TEXT, run_id):
            raise ValueError(f"run_id {run_id!r} must be 1-63 characters of [a-zA-Z0-9_.-], "
                             "starting with a letter or digit")
        self.nodes = node_names(n_nodes)
        if n_nodes > net.MAX_NODES:
            raise ValueError(f"the netns backend holds at most {net.MAX_NODES} nodes, got {n_nodes}")
        self.subnet = str(parse_subnet(subnet))
        self._ips = node_ips(self.subnet, n_nodes)
        self.gateway = gateway_ip(self.subnet)
        self.run_id, self.keep = run_id, keep
        self.files = {str(k): Path(v) for k, v in (files or {}).items()}
        for inside, src in self.files.items():
            if not inside.startswith("/") or not src.is_absolute():
                raise ValueError(f"files: {inside!r} <- {str(src)!r} must both be absolute paths")
            if not src.exists():
                raise ValueError(f"files: {src} (for {inside}) does not exist")
        self.binds = {n: dict(b) for n, b in (binds or {}).items()}
        for node, mapping in self.binds.items():
            if node not in self.nodes:
                raise ValueError(f"binds for unknown node {node!r}; nodes are {self.nodes}")
            for src, inside in mapping.items():
                if not str(src).startswith("/") or not str(inside).startswith("/"):
                    raise ValueError(f"binds of {node}: {src!r} -> {inside!r} must be absolute paths")
        self.python = python or host_python()
        self.min_java = min_java
        self._own_root = root_dir is None
        self.root = Path(root_dir) if root_dir is not None else None
        self.bridge = net.bridge_name(run_id)
        self.namespaces = {n: net.netns_name(run_id, n) for n in self.nodes}
        self._inits: dict[str, tuple[int, int | None]] = {}   # node -> (host pid, start time)
        self._procs: dict[str, subprocess.Popen] = {}
        self._lock = threading.Lock()
        env_all = {"PATH": f"{TOOLS_DIR}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                   "HOME": "/root", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
        self.remote = NetnsRemote(self.nodes, self._init_pid, env_all)

    def ip(self, node: str) -> str:
        """The node's IPv4 address on the run's bridge. Raises ``ValueError`` on an unknown node."""
        try:
            return self._ips[node]
        except KeyError:
            raise ValueError(f"unknown node {node!r}; nodes are {self.nodes}") from None

    def init_pids(self) -> dict[str, int]:
        """``{node: host pid of its init}`` of the nodes set up (killing one with SIGKILL ends
        every process of that node)."""
        with self._lock:
            return {n: pid for n, (pid, _) in self._inits.items()}

    def _init_pid(self, node: str) -> int:
        """The host pid of ``node``'s init; ``KeyError`` when it has none, when it died (a
        zombie not yet reaped has no namespaces left to enter), or when that pid now belongs
        to another process (it died and the pid was reused)."""
        pid, started = self._inits[node]
        if _start_time(pid) != started or not net.process_alive(pid):
            raise KeyError(node)
        return pid

    # -- setup ---------------------------------------------------------------------

    def _check_host(self) -> None:
        if os.geteuid() != 0:
            raise ClusterError("the netns backend needs root (it creates namespaces, a bridge and "
                               "iptables rules); run as root or use --cluster docker")
        missing = missing_tools()
        if missing:
            raise ClusterError(f"the netns backend needs {', '.join(missing)} on PATH "
                               "(Debian: iproute2, iptables, util-linux, tar, coreutils)")
        if not Path(self.python).is_file():
            raise ClusterError(f"the nodes' python3 {self.python} does not exist")
        if self.min_java is not None:
            from clusters.jre import local_java_problem
            problem = local_java_problem(self.min_java, self.remote.env["PATH"])
            if problem:
                raise ClusterError(f"this host's java cannot run the nodes: {problem}")

    def _check_free(self) -> None:
        """Raise :class:`ClusterError` if the run's names are taken or its subnet overlaps a
        route of this host; leftovers of dead kraft-chaos runs (no process left in their
        namespaces, no kept cluster) on that subnet are removed first."""
        hint = "run `kraft-chaos teardown` to remove a kept cluster, or pass --subnet with a free subnet"
        if net.run_namespaces(self.run_id) or self.bridge in net.link_aliases():
            raise ClusterError(f"namespaces or bridge {self.bridge} of run {self.run_id} already exist: {hint}")
        import ipaddress
        subnet = ipaddress.ip_network(self.subnet)
        clash = net.our_routes(subnet)
        stale = {run for _, _, run in clash
                 if run and not any(net.ns_pids(ns) for ns in net.run_namespaces(run))}
        for run in stale:
            log.warning("removing leftovers of dead run %s: %s", run, ", ".join(net.sweep(run)))
        if stale:
            clash = net.our_routes(subnet)
        if clash:
            what = ", ".join(f"{dst} on {dev}" + (f" (kraft-chaos run {run})" if run else "")
                             for dst, dev, run in clash)
            raise ClusterError(f"subnet {self.subnet} overlaps this host's route(s) to {what}: {hint}")

    def setup(self) -> None:
        """Create the bridge, the namespaces and the nodes' inits.

        On any failure everything created so far is removed and :class:`ClusterError` is
        raised, naming the cause (not root, missing tool, subnet overlap, a node whose init
        failed, with its output).
        """
        self._check_host()
        self._check_free()
        try:
            self._prepare_dirs()
            net.create_network(self.run_id, parse_subnet(self.subnet).prefixlen, self.gateway, len(self.nodes))
            on_nodes(self.nodes, self._start_node, what="netns node start")
        except BaseException as e:
            self.teardown()
            if isinstance(e, NodeErrors):
                raise ClusterError(f"netns cluster {self.run_id}: {e}") from e
            if isinstance(e, OSError):
                raise ClusterError(f"netns cluster {self.run_id}: {e}") from e
            raise
        log.info("netns cluster %s up: %s", self.run_id, ", ".join(f"{n}={self._ips[n]}" for n in self.nodes))

    def _prepare_dirs(self) -> None:
        if self.root is None:
            self.root = Path(tempfile.mkdtemp(prefix=f"kraft-chaos-netns-{self.run_id}-"))
        self.root.mkdir(parents=True, exist_ok=True)
        software = self.root / "software"
        (software / "bin").mkdir(parents=True, exist_ok=True)
        wrapper = software / "bin" / "python3"
        wrapper.write_text(f"#!/bin/sh\nexec {shlex.quote(self.python)} -S \"$@\"\n")
        wrapper.chmod(0o755)
        for i, (inside, src) in enumerate(sorted(self.files.items())):
            dest = self._snapshot(i, src)
            if dest.exists():
                shutil.rmtree(dest) if dest.is_dir() else dest.unlink()
            dest.parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir():
                shutil.copytree(src, dest, ignore=IGNORED, symlinks=True)
                compileall.compile_dir(str(dest), quiet=2, workers=1)
            else:
                shutil.copy2(src, dest)
        for node in self.nodes:
            for d in OVERLAY_DIRS:
                (self.root / node / "upper" / d).mkdir(parents=True, exist_ok=True)
                (self.root / node / "work" / d).mkdir(parents=True, exist_ok=True)
            for d in PRIVATE_DIRS:
                (self.root / node / d).mkdir(parents=True, exist_ok=True)
            (self.root / node / "tmp").chmod(0o1777)

    def _snapshot(self, i: int | None = None, src: Path | None = None) -> Path:
        """Where the run keeps its copy of the ``i``-th deployed file ``src`` (in sorted
        ``files`` order); with no arguments, the folder of every copy."""
        top = self.root / "software" / "files"
        return top if i is None else top / str(i) / src.name

    def init_script(self, node: str) -> str:
        """The sh script that sets up ``node``'s namespaces (run inside them), prints
        ``ready`` and becomes the node's init."""
        q = shlex.quote
        nroot, software = self.root / node, self.root / "software"
        prefix = parse_subnet(self.subnet).prefixlen
        lines = ["set -e", f"hostname {q(node)}", "ip link set lo up",
                 f"ip addr add {self._ips[node]}/{prefix} dev eth0", "ip link set eth0 up",
                 f"ip route add default via {self.gateway}",
                 # copies of other namespaces' handles (ip netns, Docker) would keep them alive
                 "findmnt -rn -t nsfs -o TARGET | while read -r m; do umount -l \"$m\" 2>/dev/null || true; done"]
        for d in OVERLAY_DIRS:
            lines.append(f"mount -t overlay overlay -o lowerdir=/{d},upperdir={q(str(nroot / 'upper' / d))},"
                         f"workdir={q(str(nroot / 'work' / d))} /{d}")
        lines += [f"mkdir -p {TOOLS_DIR}", f"mount --bind -o ro {q(str(software / 'bin'))} {TOOLS_DIR}"]
        for i, (inside, src) in enumerate(sorted(self.files.items())):
            snap = self._snapshot(i, src)
            make = f"mkdir -p {q(inside)}" if src.is_dir() else f"mkdir -p {q(os.path.dirname(inside))} && touch {q(inside)}"
            lines += [make, f"mount --bind -o ro {q(str(snap))} {q(inside)}"]
        for src, inside in self.binds.get(node, {}).items():
            lines += [f"mkdir -p {q(inside)}", f"mount --bind {q(str(src))} {q(inside)}"]
        hosts = "".join(f"{self._ips[n]}\t{n}\\n" for n in self.nodes)
        lines.append(f"printf '{hosts}' >> /etc/hosts")
        # the private dir that holds root_dir goes last: once it is mounted, root_dir is hidden
        order = sorted(PRIVATE_DIRS, key=lambda d: str(self.root).startswith(f"/{d}/"))
        lines += [f"mount --bind {q(str(nroot / d))} /{d}" for d in order]
        lines += ["echo ready", f"exec {q(self.python)} -c {q(REAPER)} </dev/null >/dev/null 2>&1"]
        return "\n".join(lines) + "\n"

    def _start_node(self, node: str) -> None:
        script = self.root / node / "init.sh"
        script.write_text(self.init_script(node))
        argv = ["ip", "netns", "exec", self.namespaces[node], "unshare", "--pid", "--fork", "--kill-child",
                "--mount", "--uts", "--propagation", "private", "--mount-proc", "sh", str(script)]
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
        with self._lock:
            self._procs[node] = proc
        out = b""
        deadline = time.monotonic() + INIT_TIMEOUT_S
        fd = proc.stdout.fileno()
        while b"ready\n" not in out and time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                out += chunk
        proc.stdout.close()
        if b"ready\n" not in out:
            text = out.decode(errors="replace").strip()[-800:]
            raise ClusterError(f"{node}: its namespaces could not be set up"
                               f"{' within %.0f s' % INIT_TIMEOUT_S if proc.poll() is None else ''}: "
                               f"{text or 'no output'} (script {script})")
        pid = self._child_of(proc.pid)
        with self._lock:
            self._inits[node] = (pid, _start_time(pid))

    @staticmethod
    def _child_of(pid: int, wait_s: float = 5.0) -> int:
        """The pid of ``pid``'s only child (``unshare``'s forked init). Raises :class:`ClusterError`."""
        deadline = time.monotonic() + wait_s
        path = Path(f"/proc/{pid}/task/{pid}/children")
        while time.monotonic() < deadline:
            try:
                kids = path.read_text().split()
            except OSError:
                kids = [p.name for p in Path("/proc").iterdir() if p.name.isdigit() and _ppid(p.name) == pid]
            if kids:
                return int(kids[0])
            time.sleep(0.02)
        raise ClusterError(f"the init of unshare {pid} could not be found")

    # -- teardown ------------------------------------------------------------------

    def teardown(self) -> None:
        """Kill every node's processes, remove the namespaces, veths, bridge and FORWARD rule
        (:func:`clusters.netns_net.sweep` of this run), then the overlays' work directories and
        the snapshot of the deployed ``files`` (or ``root_dir`` itself when it is a temporary
        one). Idempotent; never raises: failures are logged as warnings."""
        with self._lock:
            inits, procs = dict(self._inits), dict(self._procs)
            self._inits.clear()
            self._procs.clear()
        try:
            net.kill_pids([pid for pid, _ in inits.values()])
        except Exception as e:  # noqa: BLE001 - teardown must not raise
            log.warning("teardown %s: killing the nodes failed: %s", self.run_id, e)
        try:
            net.sweep(self.run_id)
        except Exception as e:  # noqa: BLE001
            log.warning("teardown %s: %s", self.run_id, e)
        for node, proc in procs.items():
            try:
                proc.kill()
                proc.wait(timeout=5)
            except Exception as e:  # noqa: BLE001
                log.warning("teardown %s: %s's unshare did not exit: %s", self.run_id, node, e)
        if self.root is not None:
            if self._own_root:
                shutil.rmtree(self.root, ignore_errors=True)
                self.root = None
            else:
                for node in self.nodes:
                    shutil.rmtree(self.root / node / "work", ignore_errors=True)
                # the snapshot of the deployed files (Kafka's jars: 55 MB) is this checkout's, not the run's
                shutil.rmtree(self._snapshot(), ignore_errors=True)


def _start_time(pid: int) -> int | None:
    """Process ``pid``'s start time (clock ticks since boot, /proc/<pid>/stat field 22), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _ppid(pid: str) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None
