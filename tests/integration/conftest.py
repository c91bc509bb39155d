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
