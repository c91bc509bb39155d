"""Unit test for clusters.engine: a clear error when no engine answers."""
import pytest

from clusters.engine import connect_engine
from clusters.errors import ClusterError


def test_absent_engine_is_a_cluster_error_naming_the_address(monkeypatch, tmp_path):
    sock = tmp_path / "no-engine.sock"
    monkeypatch.setenv("DOCKER_HOST", f"unix://{sock}")
    with pytest.raises(ClusterError) as e:
        connect_engine(timeout_s=1)
    assert str(sock) in str(e.value) and "ensure-docker.sh" in str(e.value)


def test_timeout_must_be_positive():
    with pytest.raises(ValueError, match="timeout_s"):
        connect_engine(timeout_s=0)
