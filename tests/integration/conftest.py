"""Fixtures for tests that need a Docker engine (skipped with the reason when none answers)."""
from __future__ import annotations

import pytest

from clusters.engine import connect_engine
from clusters.errors import ClusterError


@pytest.fixture(scope="session")
def engine():
    """A docker.DockerClient for the local engine."""
    try:
        c = connect_engine(timeout_s=3)
    except ClusterError as e:
        pytest.skip(f"no Docker engine: {e}")
    yield c
    c.close()


def run_labelled(engine, run_id: str) -> tuple[list, list]:
    """(containers, networks) labelled ``kraft-chaos.run=<run_id>``, stopped ones included."""
    f = {"label": f"kraft-chaos.run={run_id}"}
    return engine.containers.list(all=True, filters=f), engine.networks.list(filters=f)


def harness_run_id(run_dir, seed: int) -> str:
    """The run id the harness labels a run's objects with: ``<store dir name>-<seed>``."""
    return f"{run_dir.name}-{seed}"
