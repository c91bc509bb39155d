"""The Docker backend's :class:`~clusters.remote.Cluster`: one container per node on a private bridge."""
from __future__ import annotations

import ipaddress
import logging
import re

import docker
import docker.errors
import docker.types

from clusters.addressing import gateway_ip, node_ips, node_names, parse_subnet
from clusters.docker_remote import DockerRemote
from clusters.engine import connect_engine
from clusters.errors import ClusterError
from clusters.remote import Cluster
from clusters.teardown import NODE_LABEL, RUN_LABEL, teardown_run

log = logging.getLogger(__name__)

NAME_PREFIX = "kraft-chaos"
RUN_ID_RE = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$")


def network_name(run_id: str) -> str:
    """The bridge network's name for a run: ``kraft-chaos-<run_id>``."""
    return f"{NAME_PREFIX}-{run_id}"


def container_name(run_id: str, node: str) -> str:
    """A node's container name: ``kraft-chaos-<run_id>-<node>``."""
    return f"{NAME_PREFIX}-{run_id}-{node}"


def overlapping_networks(client: docker.DockerClient,
                         subnet: ipaddress.IPv4Network) -> list[tuple[str, str]]:
    """``(network name, its subnet)`` for every engine network whose IPv4 subnet overlaps ``subnet``."""
    found = []
    for net in client.networks.list():
        try:
            attrs = client.api.inspect_network(net.id)
        except docker.errors.NotFound:
            continue
        for cfg in (attrs.get("IPAM") or {}).get("Config") or []:
            other = cfg.get("Subnet")
            if not other:
                continue
            try:
                other_net = ipaddress.ip_network(other, strict=False)
            except ValueError:
                continue
            if isinstance(other_net, ipaddress.IPv4Network) and other_net.overlaps(subnet):
                found.append((attrs["Name"], other))
    return found


class DockerCluster(Cluster):
    """``n_nodes`` containers ``n1..nN`` of ``image`` on the bridge ``kraft-chaos-<run_id>``.

    Node ``ni`` gets the static address host ``10 + i`` of ``subnet`` (n1 ->
    10.77.0.11; gateway .1), hostname and network alias ``ni``, ``NET_ADMIN``
    (for iptables), an init process (``docker-init``) and ``sleep infinity`` as
    its command. Containers and network carry the labels ``kraft-chaos.run``
    (and ``kraft-chaos.node``) so :mod:`clusters.teardown` can find them.

    ``binds``: per-node bind mounts, ``{node: {host path: container path}}``
    (read-write), e.g. a node's lazyfs mountpoint (``clusters.lazyfs.mounts``)
    as its data dir; a FUSE mount made on the host before :meth:`setup` is
    seen inside the container.

    ``client`` defaults to :func:`clusters.engine.connect_engine`. Raises
    ``ValueError`` for a bad ``n_nodes``, ``run_id``, ``subnet`` or ``binds``
    (an unknown node, a relative path) and :class:`ClusterError` when no
    engine answers.
    """

    def __init__(self, n_nodes: int, run_id: str, image: str, subnet: str = "10.77.0.0/24",
                 keep: bool = False, client: docker.DockerClient | None = None,
                 binds: dict[str, dict[str, str]] | None = None):
        if not isinstance(run_id, str) or not RUN_ID_RE.match(run_id):
            raise ValueError(f"run_id {run_id!r} must be 1-63 characters of [a-zA-Z0-9_.-], "
                             "starting with a letter or digit")
        if not image:
            raise ValueError("image must name a Docker image")
        self.nodes = node_names(n_nodes)
        self.subnet = str(parse_subnet(subnet))
        self._ips = node_ips(self.subnet, n_nodes)
        self.gateway = gateway_ip(self.subnet)
        self.run_id = run_id
        self.image = image
        self.binds = {n: dict(b) for n, b in (binds or {}).items()}
        for node, mapping in self.binds.items():
            if node not in self.nodes:
                raise ValueError(f"binds for unknown node {node!r}; nodes are {self.nodes}")
            for host, inside in mapping.items():
                if not str(host).startswith("/") or not str(inside).startswith("/"):
                    raise ValueError(f"binds of {node}: {host!r} -> {inside!r} must be absolute paths")
        self.keep = keep
        self.client = client if client is not None else connect_engine()
        self.network_name = network_name(run_id)
        self._containers = {n: container_name(run_id, n) for n in self.nodes}
        self.remote = DockerRemote(self.client, self._containers)

    def ip(self, node: str) -> str:
        """The node's static IPv4 address on the cluster network. Raises ``ValueError`` on an unknown node."""
        try:
            return self._ips[node]
        except KeyError:
            raise ValueError(f"unknown node {node!r}; nodes are {self.nodes}") from None

    def container_name(self, node: str) -> str:
        """The node's container name. Raises ``ValueError`` on an unknown node."""
        if node not in self._containers:
            raise ValueError(f"unknown node {node!r}; nodes are {self.nodes}")
        return self._containers[node]

    def _check_free(self) -> None:
        """Raise :class:`ClusterError` if the run's network exists or its subnet is taken."""
        hint = ("run `kraft-chaos teardown` to remove a kept cluster, "
                "or pass --subnet with a free subnet")
        # The engine's name filter matches substrings, hence the exact comparison.
        if any(n.name == self.network_name for n in self.client.networks.list(names=[self.network_name])):
            raise ClusterError(f"network {self.network_name} already exists (run id {self.run_id} "
                               f"in use): {hint}")
        clash = overlapping_networks(self.client, ipaddress.ip_network(self.subnet))
        if clash and self._reap_stale([name for name, _ in clash]):
            clash = overlapping_networks(self.client, ipaddress.ip_network(self.subnet))
        if clash:
            names = ", ".join(f"{name} ({sub})" for name, sub in clash)
            raise ClusterError(f"subnet {self.subnet} overlaps existing Docker network(s) {names}: {hint}")

    def _reap_stale(self, network_names: list[str]) -> bool:
        """Remove the leftovers of dead kraft-chaos runs among ``network_names``.

        A run counts as dead when its network carries a ``kraft-chaos.run``
        label and none of that run's containers is running (a harness killed
        with SIGKILL, or an engine restart, leaves such networks behind). A
        kept cluster (``--keep-cluster``) has running containers and is never
        touched, nor is any network kraft-chaos did not create. Returns True
        if anything was removed.
        """
        removed = False
        for name in network_names:
            try:
                labels = self.client.networks.get(name).attrs.get("Labels") or {}
            except docker.errors.DockerException:
                continue
            run = labels.get(RUN_LABEL)
            if not run:
                continue
            running = self.client.containers.list(filters={"label": f"{RUN_LABEL}={run}",
                                                           "status": "running"})
            if running:
                continue
            log.warning("removing leftovers of dead run %s (network %s): %s", run, name,
                        ", ".join(teardown_run(self.client, run)))
            removed = True
        return removed

    def setup(self) -> None:
        """Create the network and start one container per node.

        On any failure everything created so far is removed and
        :class:`ClusterError` is raised, naming the cause (subnet overlap,
        missing image, engine error).
        """
        try:
            self.client.images.get(self.image)
        except docker.errors.ImageNotFound:
            raise ClusterError(f"image {self.image} does not exist; build it with "
                               "clusters.image.ensure_node_image") from None
        except docker.errors.DockerException as e:
            raise ClusterError(f"cannot inspect image {self.image}: {e}") from e
        self._check_free()
        try:
            self._create()
        except BaseException as e:
            self.teardown()
            if isinstance(e, docker.errors.DockerException):
                raise ClusterError(f"creating cluster {self.run_id} failed: {e}") from e
            raise

    def _create(self) -> None:
        ipam = docker.types.IPAMConfig(pool_configs=[
            docker.types.IPAMPool(subnet=self.subnet, gateway=self.gateway)])
        self.client.networks.create(self.network_name, driver="bridge", ipam=ipam,
                                    labels={RUN_LABEL: self.run_id}, check_duplicate=True)
        for node in self.nodes:
            endpoint = self.client.api.create_endpoint_config(
                ipv4_address=self._ips[node], aliases=[node])
            self.client.containers.run(
                self.image, command=["sleep", "infinity"], name=self._containers[node],
                hostname=node, cap_add=["NET_ADMIN"], init=True, detach=True,
                labels={RUN_LABEL: self.run_id, NODE_LABEL: node},
                volumes={str(h): {"bind": str(c), "mode": "rw"}
                         for h, c in self.binds.get(node, {}).items()} or None,
                network=self.network_name,
                networking_config={self.network_name: endpoint})
        log.info("cluster %s up: %s", self.run_id,
                 ", ".join(f"{n}={self._ips[n]}" for n in self.nodes))

    def teardown(self) -> None:
        """Force-remove the containers and the network. Idempotent; never raises.

        Removes by name and by the ``kraft-chaos.run`` label, so a
        half-built cluster is cleaned up too. Failures are logged as warnings.
        """
        for node, name in self._containers.items():
            try:
                self.client.containers.get(name).remove(force=True, v=True)
            except docker.errors.NotFound:
                pass
            except Exception as e:  # noqa: BLE001 - teardown must not raise
                log.warning("teardown %s: removing container %s failed: %s", self.run_id, name, e)
        try:
            self.client.networks.get(self.network_name).remove()
        except docker.errors.NotFound:
            pass
        except Exception as e:  # noqa: BLE001
            log.warning("teardown %s: removing network %s failed: %s", self.run_id, self.network_name, e)
        try:
            teardown_run(self.client, self.run_id)
        except Exception as e:  # noqa: BLE001
            log.warning("teardown %s: label sweep failed: %s", self.run_id, e)
