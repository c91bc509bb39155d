"""The cluster backends (``--cluster``), chosen by name through one factory.

- ``docker``: one container per node (:class:`clusters.docker_cluster.DockerCluster`); the
  nodes run a node image.
- ``netns``: one set of Linux namespaces per node on this host
  (:class:`clusters.netns_cluster.NetnsCluster`); the nodes run the host's python3 (or
  java) on files deployed from this checkout. Needs root; no container engine.
- ``ssh``: one node per host of a hosts file (``--hosts hosts.toml``), reached over SSH
  (:class:`clusters.ssh_cluster.SshCluster`); the nodes run the hosts' python3 (or java) on
  files deployed from this checkout. Needs root on the hosts (a root login or ``sudo``).
- ``auto``: ``docker`` when a Docker engine answers, else ``netns`` (never ``ssh``)
  (:func:`resolve_backend`).

Callers say what the nodes run as a :class:`Software` (an image for Docker; files and
environment for netns and ssh) and get a :class:`~clusters.remote.Cluster` from
:func:`make_cluster`; they never construct a backend's class themselves.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import shutil
from pathlib import Path
from typing import Any, Callable, Mapping

from clusters.errors import ClusterError
from clusters.netns_cluster import NetnsCluster
from clusters.netns_net import sweep
from clusters.remote import Cluster

log = logging.getLogger(__name__)

#: seconds ``auto`` waits for a Docker engine to answer
AUTO_PROBE_S = 3.0
#: what ``auto`` picks when an engine answers, and when none does (never a backend that needs hosts)
AUTO_ENGINE, AUTO_NO_ENGINE = "docker", "netns"


@dataclasses.dataclass(frozen=True)
class Software:
    """What the nodes run, in the form each backend takes.

    ``image``: the node image's tag (``docker``). ``files``: ``{node path: host path}``
    deployed read-only on every node, ``env``: environment of every command on a node
    (``netns``, ``ssh``; e.g. ``{"/opt/kraft/kraft": <repo>/kraft}`` and ``PYTHONPATH=/opt/kraft``,
    the layout of the node image). ``min_java``: the nodes run the host's ``java`` (``netns``:
    this host's, ``ssh``: each host's), whose major version must be at least this; None: no JVM
    (checked at set-up, :mod:`clusters.jre`; a host without one fails with ``ClusterError``).
    """

    image: str | None = None
    files: Mapping[str, Path] = dataclasses.field(default_factory=dict)
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    min_java: int | None = None


@dataclasses.dataclass(frozen=True)
class Resolved:
    """A backend chosen: ``name`` (docker, netns or ssh), the Docker ``engine`` client when that
    is docker (else None), and ``why`` (how ``auto`` chose; "" when named)."""

    name: str
    engine: Any = None
    why: str = ""


def _docker(n_nodes: int, run_id: str, software: Software, *, subnet: str, keep: bool,
            binds: Mapping[str, Mapping[str, str]] | None, engine: Any, root_dir: str | Path | None,
            hosts: str | Path | None) -> Cluster:
    if not software.image:
        raise ValueError("the docker backend needs the node image (Software.image)")
    from clusters.docker_cluster import DockerCluster      # deferred: the docker SDK
    return DockerCluster(n_nodes, run_id, software.image, subnet=subnet, keep=keep, client=engine,
                         binds={n: dict(b) for n, b in (binds or {}).items()} or None)


def _netns(n_nodes: int, run_id: str, software: Software, *, subnet: str, keep: bool,
           binds: Mapping[str, Mapping[str, str]] | None, engine: Any, root_dir: str | Path | None,
           hosts: str | Path | None) -> Cluster:
    return NetnsCluster(n_nodes, run_id, subnet=subnet, keep=keep, files=software.files, env=software.env,
                        binds=binds, root_dir=root_dir, min_java=software.min_java)


def _ssh(n_nodes: int, run_id: str, software: Software, *, subnet: str, keep: bool,
         binds: Mapping[str, Mapping[str, str]] | None, engine: Any, root_dir: str | Path | None,
         hosts: str | Path | None) -> Cluster:
    if not hosts:
        raise ValueError("--cluster ssh needs --hosts FILE (a hosts.toml: see clusters/ssh_hosts.py)")
    if binds:
        raise ValueError("--cluster ssh cannot bind host folders into the nodes (the power-loss "
                         "fault's lazyfs disks); use --cluster docker or netns")
    from clusters.ssh_cluster import SshCluster      # deferred: paramiko and fabric
    return SshCluster(n_nodes, run_id, hosts, keep=keep, files=software.files, env=software.env,
                      min_java=software.min_java)


@dataclasses.dataclass(frozen=True)
class BackendSpec:
    """One backend (``--cluster``). ``make(n_nodes, run_id, software, *, subnet, keep, binds,
    engine, root_dir, hosts)`` builds its cluster (see :func:`make_cluster`). ``runs_image``:
    the nodes run the target's node image (:attr:`Software.image`), else files deployed from
    this checkout (:attr:`Software.files`). ``needs_engine``: it needs a Docker engine client.
    ``needs_hosts``: it needs a hosts file (``--hosts``)."""

    name: str
    summary: str
    make: Callable[..., Cluster]
    runs_image: bool = False
    needs_engine: bool = False
    needs_hosts: bool = False


#: every backend by name
BACKENDS: dict[str, BackendSpec] = {b.name: b for b in (
    BackendSpec("docker", "one container per node, running the target's node image", _docker,
                runs_image=True, needs_engine=True),
    BackendSpec("netns", "Linux namespaces on this host, running files deployed from this checkout", _netns),
    BackendSpec("ssh", "one host per node of a hosts file, over SSH, running deployed files", _ssh,
                needs_hosts=True),
)}
#: what ``--cluster`` accepts
CHOICES = ("auto", *BACKENDS)


def backend_spec(name: str) -> BackendSpec:
    """The backend called ``name``; ``ValueError`` naming the choices otherwise (``auto`` is
    not a backend: resolve it with :func:`resolve_backend`)."""
    if name == "auto":
        raise ValueError("resolve --cluster auto with resolve_backend before make_cluster")
    try:
        return BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown cluster backend {name!r}: choose from {', '.join(BACKENDS)}") from None


def needs_hosts(name: str) -> bool:
    """Whether ``--cluster name`` needs ``--hosts`` (False for ``auto``, which never picks such a
    backend). ``ValueError`` for an unknown name."""
    return check_name(name) != "auto" and backend_spec(name).needs_hosts


def check_name(name: str) -> str:
    """``name`` if it is one of :data:`CHOICES`; else ``ValueError`` naming the choices."""
    if name not in CHOICES:
        raise ValueError(f"unknown cluster backend --cluster {name!r}: choose from {', '.join(CHOICES)}")
    return name


def resolve_backend(name: str, connect=None) -> Resolved:
    """The backend ``name`` stands for, with a Docker engine client for ``docker``.

    ``auto``: ``docker`` if an engine answers within :data:`AUTO_PROBE_S` s, else
    ``netns`` (``why`` carries the engine's error). ``connect(timeout_s)`` defaults to
    :func:`clusters.engine.connect_engine`. Raises ``ValueError`` for an unknown name and
    :class:`ClusterError` when ``docker`` is named and no engine answers.
    """
    if connect is None:
        from clusters.engine import connect_engine as connect      # deferred: the docker SDK
    if check_name(name) != "auto":
        spec = backend_spec(name)
        return Resolved(name, connect(timeout_s=5) if spec.needs_engine else None)
    try:
        return Resolved(AUTO_ENGINE, connect(timeout_s=AUTO_PROBE_S), "a Docker engine answers")
    except ClusterError as e:
        return Resolved(AUTO_NO_ENGINE, None, f"no Docker engine answers ({str(e).split('Cause:')[-1].strip()})")


def make_cluster(backend: str, n_nodes: int, run_id: str, software: Software, *, subnet: str,
                 keep: bool = False, binds: Mapping[str, Mapping[str, str]] | None = None,
                 engine: Any = None, root_dir: str | Path | None = None,
                 hosts: str | Path | None = None) -> Cluster:
    """The :class:`~clusters.remote.Cluster` of ``backend`` (``docker``, ``netns`` or ``ssh``; resolve
    ``auto`` first) with ``n_nodes`` nodes ``n1..nN`` on ``subnet`` for run ``run_id``, not
    yet set up.

    ``software``: what the nodes run (``docker`` needs its ``image``). ``binds``: ``{node:
    {host path: node path}}`` bound read-write. ``engine``: the Docker client (docker; None:
    connect). ``root_dir``: where a netns cluster keeps its nodes' files (None: a temporary
    directory). ``hosts``: the hosts file of ``ssh`` (required there; ``subnet`` and
    ``root_dir`` do not apply). Raises ``ValueError`` for an unknown backend or bad arguments
    (``clusters.ssh_hosts.HostsFileError`` for a bad hosts file).
    """
    return backend_spec(backend).make(n_nodes, run_id, software, subnet=subnet, keep=keep, binds=binds,
                                      engine=engine, root_dir=root_dir, hosts=hosts)


def teardown_everything(connect=None) -> tuple[list[str], list[str]]:
    """Remove what every backend left behind, of every run: Docker containers and networks
    labelled ``kraft-chaos.run`` (when an engine answers) and the netns backend's
    namespaces, processes, links and FORWARD rules (when this host has ``ip``).

    Returns ``(removed, notes)``: one line per object removed, and one per backend that was
    skipped, with the reason. Raises ``docker.errors.APIError`` when the engine refuses a
    removal, :class:`ClusterError` when the netns sweep cannot run its tools.
    """
    removed: list[str] = []
    notes: list[str] = []
    if connect is None:
        from clusters.engine import connect_engine as connect      # deferred: the docker SDK
    try:
        engine = connect(timeout_s=AUTO_PROBE_S)
    except ClusterError as e:
        notes.append(f"docker: skipped, {e}")
    else:
        from clusters.teardown import teardown_all      # deferred: the docker SDK
        try:
            removed += teardown_all(engine)
        finally:
            engine.close()
    if os.geteuid() != 0 or shutil.which("ip") is None:
        notes.append("netns: skipped (needs root and ip)")
    else:
        removed += sweep(None)
    return removed, notes


def teardown_ssh(hosts: str | Path) -> tuple[list[str], list[str]]:
    """Remove every kraft-chaos node of any run from the hosts of the hosts file ``hosts``
    (:func:`clusters.ssh_cluster.sweep_hosts`): ``(removed, errors)``, one line each; an error
    names its host and cause. Raises ``clusters.ssh_hosts.HostsFileError`` for a bad file."""
    from clusters.ssh_cluster import sweep_hosts      # deferred: paramiko and fabric
    return sweep_hosts(hosts)
