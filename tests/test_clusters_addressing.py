"""Unit tests for clusters.addressing: node names, subnet parsing, static IPs."""
import pytest

from clusters.addressing import gateway_ip, node_ips, node_names, parse_subnet


def test_node_names_are_n1_to_nN():
    assert node_names(3) == ["n1", "n2", "n3"]
    assert node_names(1) == ["n1"]


@pytest.mark.parametrize("bad", [0, -1, 2.0, True, "3", None])
def test_node_names_rejects_non_positive_or_non_int(bad):
    with pytest.raises(ValueError, match="n_nodes"):
        node_names(bad)


def test_node_ips_start_at_host_11():
    assert node_ips("10.77.0.0/24", 3) == {"n1": "10.77.0.11", "n2": "10.77.0.12", "n3": "10.77.0.13"}
    assert node_ips("192.168.8.0/22", 2) == {"n1": "192.168.8.11", "n2": "192.168.8.12"}


def test_gateway_is_host_1():
    assert gateway_ip("10.77.0.0/24") == "10.77.0.1"
    assert gateway_ip("172.30.4.0/23") == "172.30.4.1"


@pytest.mark.parametrize("bad", ["10.77.0.5/24", "10.77.0.0/33", "nonsense", "", "fd00::/64"])
def test_parse_subnet_rejects_bad_input_naming_it(bad):
    with pytest.raises(ValueError) as e:
        parse_subnet(bad)
    assert repr(bad) in str(e.value)


def test_subnet_too_small_for_nodes():
    # /28 has 16 addresses: hosts .11 to .14 fit (.15 is broadcast)
    assert node_ips("10.0.0.0/28", 4)["n4"] == "10.0.0.14"
    with pytest.raises(ValueError, match="too few"):
        node_ips("10.0.0.0/28", 5)
