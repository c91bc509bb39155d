"""Unit tests for DockerCluster's naming and argument checks (a stand-in client; no engine)."""
import pytest

from clusters.docker_cluster import DockerCluster, container_name, network_name


def make(**kw):
    args = dict(n_nodes=3, run_id="r1", image="img", client=object())
    args.update(kw)
    return DockerCluster(**args)


def test_names_and_ips():
    c = make(subnet="10.88.0.0/24")
    assert c.nodes == ["n1", "n2", "n3"]
    assert c.network_name == network_name("r1") == "kraft-chaos-r1"
    assert c.container_name("n2") == container_name("r1", "n2") == "kraft-chaos-r1-n2"
    assert [c.ip(n) for n in c.nodes] == ["10.88.0.11", "10.88.0.12", "10.88.0.13"]
    assert c.gateway == "10.88.0.1"


def test_unknown_node_names_the_nodes():
    with pytest.raises(ValueError, match=r"'n4'.*n1"):
        make().ip("n4")


@pytest.mark.parametrize("run_id", ["", "-x", "a b", "a/b", "x" * 64, None])
def test_bad_run_id(run_id):
    with pytest.raises(ValueError, match="run_id"):
        make(run_id=run_id)


def test_bad_subnet_and_count():
    with pytest.raises(ValueError, match="subnet"):
        make(subnet="10.88.0.1/24")
    with pytest.raises(ValueError, match="n_nodes"):
        make(n_nodes=0)
