"""Removing what kraft-chaos left on a Docker engine, found by label.

Every container and network a :class:`clusters.docker_cluster.DockerCluster`
creates carries the label ``kraft-chaos.run=<run id>``; these functions remove
them whether or not the cluster object still exists (after a crash, or from
the ``kraft-chaos teardown`` command).
"""
from __future__ import annotations

import logging

import docker
import docker.errors

RUN_LABEL = "kraft-chaos.run"
NODE_LABEL = "kraft-chaos.node"

log = logging.getLogger(__name__)


def _remove(client: docker.DockerClient, label_filter: str) -> list[str]:
    """Force-remove containers, then networks, matching ``label_filter``; return their names.

    Objects that vanish meanwhile (404) or are already being removed (409) are
    skipped. Other engine errors propagate as ``docker.errors.APIError``.
    """
    removed: list[str] = []
    for c in client.containers.list(all=True, filters={"label": label_filter}):
        try:
            c.remove(force=True, v=True)
            removed.append(c.name)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as e:
            if e.status_code != 409:
                raise
    for n in client.networks.list(filters={"label": label_filter}):
        try:
            n.remove()
            removed.append(n.name)
        except docker.errors.NotFound:
            pass
    return removed


def teardown_run(client: docker.DockerClient, run_id: str) -> list[str]:
    """Remove every container and network labelled ``kraft-chaos.run=<run_id>``.

    Returns the names removed (containers first, then networks). Idempotent.
    Raises ``ValueError`` on an empty ``run_id`` and ``docker.errors.APIError``
    when the engine refuses a removal for another reason than "already gone".
    """
    if not run_id:
        raise ValueError("run_id must be a non-empty string")
    return _remove(client, f"{RUN_LABEL}={run_id}")


def teardown_all(client: docker.DockerClient) -> list[str]:
    """Remove every container and network carrying a ``kraft-chaos.run`` label, of any run.

    Returns the names removed. Idempotent. Raises ``docker.errors.APIError`` as
    :func:`teardown_run` does.
    """
    return _remove(client, RUN_LABEL)
