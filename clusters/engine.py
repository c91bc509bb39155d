"""Connecting to the Docker engine."""
from __future__ import annotations

import os

import docker
import docker.errors

from clusters.errors import ClusterError

DEFAULT_DOCKER_HOST = "unix:///var/run/docker.sock"


def connect_engine(timeout_s: float = 5) -> docker.DockerClient:
    """Return a client for the Docker engine named by ``DOCKER_HOST`` (or the default socket).

    ``timeout_s`` (seconds) bounds the first ping and is also the client's
    per-request timeout floor: it is raised to 300 s for normal use so that
    image builds and container removal are not cut short.

    Raises :class:`ClusterError` when no engine answers at that address.
    """
    if timeout_s <= 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s!r}")
    host = os.environ.get("DOCKER_HOST", DEFAULT_DOCKER_HOST)
    try:
        probe = docker.from_env(timeout=max(1, int(timeout_s)))
        probe.ping()
        version = probe.api.api_version
        probe.close()
        return docker.from_env(version=version, timeout=300)
    except (docker.errors.DockerException, OSError) as e:
        raise ClusterError(
            f"No Docker engine answers at {host}: run `make engine` or "
            f"scripts/ensure-docker.sh (as root) to start one, or set DOCKER_HOST. "
            f"Cause: {e}") from e
