"""The host side of the netns backend: a run's bridge, veth pairs, network namespaces and
FORWARD rule, their names, and the sweep that finds and removes them by name.

Names are derived from the run id, so a run's objects can be found without the cluster
object (after a crash, or from ``kraft-chaos teardown``):

- namespace ``kraft-chaos-<run_id>-<node>`` (``ip netns list``);
- bridge ``kcb<tag>`` and host-side veth ``kcv<tag><i>`` (node ``i``, 1-based), where
  ``<tag>`` is 8 hex digits of SHA-1 of the run id (interface names hold 15 characters);
  both carry the alias ``kraft-chaos:<run_id>``; the namespace side of each veth is ``eth0``;
- host iptables ``FORWARD -i kcb<tag> -o kcb<tag> -j ACCEPT`` with the comment
  ``kraft-chaos:<run_id>`` (Docker sets the FORWARD policy to DROP, and with
  ``br_netfilter`` bridged packets pass through FORWARD).

Every function here runs ``ip``/``iptables`` on this host and needs root.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shlex
import signal
import subprocess
import time

from clusters.errors import ClusterError

log = logging.getLogger(__name__)

NETNS_PREFIX = "kraft-chaos-"
#: link alias and iptables comment of a run's objects: ``kraft-chaos:<run_id>``
TAG_PREFIX = "kraft-chaos:"
MAX_NODES = 9999
#: the host commands the backend needs
TOOLS = ("ip", "iptables", "nsenter", "unshare", "findmnt", "tar", "timeout", "sh")


def run_tag(run_id: str) -> str:
    """8 hex digits of SHA-1 of ``run_id``: the part of a run's interface names that is its own."""
    return hashlib.sha1(run_id.encode()).hexdigest()[:8]


def netns_name(run_id: str, node: str) -> str:
    """The node's network namespace: ``kraft-chaos-<run_id>-<node>``."""
    return f"{NETNS_PREFIX}{run_id}-{node}"


def bridge_name(run_id: str) -> str:
    """The run's bridge: ``kcb<tag>`` (11 characters)."""
    return f"kcb{run_tag(run_id)}"


def veth_name(run_id: str, index: int) -> str:
    """The host end of node ``index``'s (1-based) veth pair: ``kcv<tag><index>``, at most 15
    characters. Raises ``ValueError`` outside 1..9999."""
    if not 1 <= index <= MAX_NODES:
        raise ValueError(f"node index must be in 1..{MAX_NODES}, got {index}")
    return f"kcv{run_tag(run_id)}{index}"


def host(argv: list[str], *, check: bool = True, input: bytes | None = None,
         timeout_s: float = 30.0) -> subprocess.CompletedProcess:
    """Run ``argv`` on this host (in a session of its own, so a Ctrl-C at the terminal does
    not reach it); stdout/stderr captured as text. Raises :class:`ClusterError` naming the
    command and its stderr when it cannot run, times out, or (``check``) exits non-zero."""
    try:
        res = subprocess.run(argv, input=input.decode() if input is not None else None,
                             capture_output=True, text=True, timeout=timeout_s, start_new_session=True)
    except FileNotFoundError:
        raise ClusterError(f"{argv[0]} is not installed (needed by the netns backend)") from None
    except subprocess.TimeoutExpired:
        raise ClusterError(f"`{shlex.join(argv)}` timed out after {timeout_s:g} s") from None
    if check and res.returncode != 0:
        raise ClusterError(f"`{shlex.join(argv)}` exited {res.returncode}: {res.stderr.strip()[-500:]}")
    return res


def create_network(run_id: str, subnet_prefix: int, gateway: str, n_nodes: int) -> None:
    """The run's bridge (``gateway/prefix``, up, aliased), its FORWARD rule, and per node a
    namespace with a veth pair whose host end is on the bridge and whose other end is ``eth0``
    inside (addressed later, from inside). Raises :class:`ClusterError`; what was made
    stays for :func:`sweep` to remove."""
    br, tag = bridge_name(run_id), f"{TAG_PREFIX}{run_id}"
    lines = [f"link add {br} type bridge", f"link set {br} alias {tag}",
             f"addr add {gateway}/{subnet_prefix} dev {br}", f"link set {br} up"]
    for i in range(1, n_nodes + 1):
        ns, veth = netns_name(run_id, f"n{i}"), veth_name(run_id, i)
        lines += [f"netns add {ns}", f"link add {veth} type veth peer name eth0 netns {ns}",
                  f"link set {veth} alias {tag}", f"link set {veth} master {br} up"]
    host(["ip", "-batch", "-"], input=("\n".join(lines) + "\n").encode(), timeout_s=60.0)
    host(["iptables", "-w", "-I", "FORWARD", "1", *forward_rule(run_id)])


def forward_rule(run_id: str) -> list[str]:
    """The FORWARD rule's match and target (without ``-A``/``-I``/``-D`` and chain)."""
    br = bridge_name(run_id)
    return ["-i", br, "-o", br, "-m", "comment", "--comment", f"{TAG_PREFIX}{run_id}", "-j", "ACCEPT"]


def our_routes(subnet) -> list[tuple[str, str, str]]:
    """``(destination, device, run id or "")`` of every host IPv4 route whose destination
    overlaps ``subnet`` (an ``ipaddress.IPv4Network``); the run id is that of a kraft-chaos
    bridge, "" for any other device."""
    import ipaddress
    routes = json.loads(host(["ip", "-j", "-4", "route", "show", "table", "main"]).stdout or "[]")
    aliases = link_aliases()
    found = []
    for r in routes:
        dst = r.get("dst")
        if not dst or dst == "default":
            continue
        try:
            net = ipaddress.ip_network(dst, strict=False)
        except ValueError:
            continue
        if net.overlaps(subnet):
            alias = aliases.get(r.get("dev", ""), "")
            found.append((dst, r.get("dev", "?"), alias[len(TAG_PREFIX):] if alias.startswith(TAG_PREFIX) else ""))
    return found


def link_aliases() -> dict[str, str]:
    """``{interface name: alias}`` of this host's links ("" where a link has none)."""
    links = json.loads(host(["ip", "-j", "link", "show"]).stdout or "[]")
    return {link["ifname"]: link.get("ifalias", "") for link in links}


def namespaces() -> list[str]:
    """The names in ``ip netns list`` (without the ``(id: N)`` suffix)."""
    out = host(["ip", "netns", "list"], check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def run_namespaces(run_id: str | None) -> list[str]:
    """This host's kraft-chaos namespaces, of run ``run_id`` or (None) of every run."""
    pat = re.compile(rf"^{re.escape(NETNS_PREFIX)}{re.escape(run_id) if run_id else '.+'}-n\d+$")
    return [ns for ns in namespaces() if pat.match(ns)]


def ns_pids(ns: str) -> list[int]:
    """The pids of every process in namespace ``ns`` ([] when it does not exist)."""
    out = host(["ip", "netns", "pids", ns], check=False).stdout
    return [int(p) for p in out.split() if p.isdigit()]


def kill_pids(pids: list[int], wait_s: float = 5.0) -> None:
    """SIGKILL ``pids`` and wait up to ``wait_s`` s until none exists (zombies of our own
    children count as gone)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        alive = [p for p in pids if process_alive(p)]
        if not alive:
            return
        time.sleep(0.05)
    log.warning("processes %s survived SIGKILL for %.0f s", alive, wait_s)


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def forward_rules(run_id: str | None) -> list[list[str]]:
    """The host's FORWARD rules tagged ``kraft-chaos:<run_id>`` (None: any run), each as the
    argv tail of ``iptables -S`` (``-A FORWARD ...``)."""
    res = host(["iptables", "-w", "-S", "FORWARD"], check=False)
    want = f"{TAG_PREFIX}{run_id}" if run_id else None
    rules = []
    for line in res.stdout.splitlines():
        args = shlex.split(line)
        if "--comment" not in args:
            continue
        comment = args[args.index("--comment") + 1]
        if (comment == want) if want else comment.startswith(TAG_PREFIX):
            rules.append(args)
    return rules


def sweep(run_id: str | None = None) -> list[str]:
    """Remove what the netns backend left of run ``run_id`` (None: of every run): every
    process in its namespaces (SIGKILL: each node's pid-namespace init takes its node's
    processes along), the namespaces, its links (found by alias), its FORWARD rules.

    Returns what was removed, one description each. Never raises for something already
    gone; raises :class:`ClusterError` when ``ip`` or ``iptables`` are missing.
    """
    removed: list[str] = []
    nss = run_namespaces(run_id)
    kill_pids(sorted({p for ns in nss for p in ns_pids(ns)}))
    for ns in nss:
        if host(["ip", "netns", "del", ns], check=False).returncode == 0:
            removed.append(f"netns {ns}")
    want = f"{TAG_PREFIX}{run_id}" if run_id else None
    for name, alias in sorted(link_aliases().items(), key=lambda kv: (not kv[0].startswith("kcb"), kv[0])):
        if (alias == want) if want else alias.startswith(TAG_PREFIX):
            if host(["ip", "link", "del", name], check=False).returncode == 0:
                removed.append(f"link {name} ({alias})")
    for rule in forward_rules(run_id):
        if host(["iptables", "-w", "-D", *rule[1:]], check=False).returncode == 0:
            removed.append(f"iptables rule {' '.join(rule)}")
    return removed
