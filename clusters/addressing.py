"""Node names and static addresses inside a cluster's subnet."""
from __future__ import annotations

import ipaddress

#: node i (1-based) gets host number FIRST_HOST + i - 1 in the subnet: n1 -> .11
FIRST_HOST = 11
GATEWAY_HOST = 1


def node_names(n_nodes: int) -> list[str]:
    """``["n1", ..., "nN"]``. Raises ``ValueError`` unless ``n_nodes`` is an int >= 1."""
    if not isinstance(n_nodes, int) or isinstance(n_nodes, bool) or n_nodes < 1:
        raise ValueError(f"n_nodes must be an integer >= 1, got {n_nodes!r}")
    return [f"n{i}" for i in range(1, n_nodes + 1)]


def parse_subnet(subnet: str) -> ipaddress.IPv4Network:
    """Parse an IPv4 CIDR such as ``"10.77.0.0/24"``.

    Raises ``ValueError`` naming the input when it is not IPv4 CIDR notation or
    has host bits set (e.g. ``"10.77.0.5/24"``).
    """
    try:
        net = ipaddress.ip_network(subnet, strict=True)
    except (ValueError, TypeError) as e:
        raise ValueError(f"subnet {subnet!r} is not an IPv4 network in CIDR notation "
                         f"such as 10.77.0.0/24: {e}") from None
    if not isinstance(net, ipaddress.IPv4Network):
        raise ValueError(f"subnet {subnet!r} is IPv6; an IPv4 subnet is required")
    return net


def gateway_ip(subnet: str) -> str:
    """The bridge's address: host ``.1`` of ``subnet``. Raises ``ValueError`` as :func:`parse_subnet`."""
    return str(parse_subnet(subnet).network_address + GATEWAY_HOST)


def node_ips(subnet: str, n_nodes: int) -> dict[str, str]:
    """Map ``n1..nN`` to host numbers ``11, 12, ...`` of ``subnet``, e.g. n1 -> 10.77.0.11.

    Raises ``ValueError`` when the subnet is malformed or too small to hold
    ``n_nodes`` addresses from host 11 on (the broadcast address excluded).
    """
    net = parse_subnet(subnet)
    names = node_names(n_nodes)
    last = FIRST_HOST + n_nodes - 1
    if last >= net.num_addresses - 1:
        raise ValueError(f"subnet {subnet} has {net.num_addresses} addresses, too few for "
                         f"{n_nodes} nodes starting at host .{FIRST_HOST}; use a larger subnet")
    return {name: str(net.network_address + FIRST_HOST + i) for i, name in enumerate(names)}
