"""Fixtures for tests that need a Docker engine (skipped with the reason when none answers)."""
from __future__ import annotations

from pathlib import Path

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


def netns_skip_reason() -> str | None:
    """Why the netns backend cannot run here (not root, a missing tool), or None."""
    import os
    from clusters.netns_cluster import missing_tools
    if os.geteuid() != 0:
        return "the netns backend needs root"
    missing = missing_tools()
    return f"the netns backend needs {', '.join(missing)}" if missing else None


def netns_leftovers(run_id: str) -> list[str]:
    """What the netns backend left of run ``run_id`` on this host, one line each, read with
    ``ip netns list``, ``ip link`` and ``iptables -S``: [] when nothing."""
    import subprocess
    from clusters.netns_net import TAG_PREFIX, bridge_name, netns_name, run_tag

    def out(*argv: str) -> str:
        return subprocess.run(argv, capture_output=True, text=True, check=True).stdout

    prefix = netns_name(run_id, "")
    found = [f"netns {line.split()[0]}" for line in out("ip", "netns", "list").splitlines()
             if line.startswith(prefix)]
    found += [f"link {line.strip()}" for line in out("ip", "-o", "link").splitlines()
              if f"kcv{run_tag(run_id)}" in line or bridge_name(run_id) in line]
    found += [f"iptables {line}" for line in out("iptables", "-S").splitlines()
              if f"{TAG_PREFIX}{run_id}\"" in line or bridge_name(run_id) in line]
    return found


def _read(path: str) -> str:
    try:
        return Path(path).read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def run_processes(pattern: str, marker: str) -> list[str]:
    """The processes matching ``pattern`` (``pgrep -f``) that belong to one run, never another
    run sharing the machine: ``marker``, a path that only that run's nodes use (its netns
    root, ``<run dir>/netns``; its run folder on the ssh hosts), is in the command line of the
    process or of an ancestor (the node's ``unshare ... sh <marker>/.../init.sh``), or in its
    mounts (the node's overlay, should it outlive its init). One ``"pid: command line"`` each;
    [] when none."""
    import subprocess
    found = []
    for pid in subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout.split():
        chain, p = [], pid
        while p not in ("0", "1", "") and len(chain) < 64:
            chain.append(_read(f"/proc/{p}/cmdline"))
            stat = _read(f"/proc/{p}/stat")
            p = stat.rpartition(")")[2].split()[1] if ")" in stat else ""
        if any(marker in c for c in chain) or marker in _read(f"/proc/{pid}/mountinfo"):
            found.append(f"{pid}: {chain[0].strip() if chain else '?'}")
    return found


class Backend:
    """One backend as the teardown tests see it: ``name``, a subnet of its own,
    ``args`` (its ``kraft-chaos run`` arguments: ``--subnet``, or ``--hosts`` on ssh) and
    ``config`` (the same as ``RunConfig`` fields), ``live_nodes(run_id)`` (running
    containers, namespaces with processes, or live node inits on the ssh hosts) and
    ``leftovers(run_id)`` (anything of the run still on the host(s): [] when clean).
    ``sshd``: the ssh backend's hosts (tests/sshd_hosts.py)."""

    def __init__(self, name: str, subnet: str, engine=None, sshd=None):
        self.name, self.subnet, self.engine, self.sshd = name, subnet, engine, sshd
        if sshd is not None:
            self.run_dir = str(sshd.dir / "runs")
            hosts = str(sshd.hosts_toml("backend-hosts.toml", run_dir=self.run_dir))
            self.args, self.config = ["--hosts", hosts], {"hosts": hosts}
        else:
            self.args, self.config = ["--subnet", subnet], {"subnet": subnet}

    def live_nodes(self, run_id: str) -> int:
        if self.name == "docker":
            return len([c for c in run_labelled(self.engine, run_id)[0] if c.status == "running"])
        if self.name == "ssh":
            import glob
            from pathlib import Path
            from clusters.netns_net import process_alive
            pids = [Path(p).read_text().split()[0] for p in glob.glob(f"{self.run_dir}/{run_id}/*/init.pid")]
            return sum(1 for p in pids if process_alive(int(p)))
        from clusters.netns_net import ns_pids, run_namespaces
        return sum(1 for ns in run_namespaces(run_id) if ns_pids(ns))

    def leftovers(self, run_id: str) -> list[str]:
        if self.name == "docker":
            containers, networks = run_labelled(self.engine, run_id)
            return [c.name for c in containers] + [n.name for n in networks]
        if self.name == "ssh":
            return self.sshd.leftovers(self.run_dir)
        return netns_leftovers(run_id)


@pytest.fixture(scope="session")
def sshd_hosts():
    """Three sshd hosts on 10.89.3.0/24 (tests/sshd_hosts.py), for the ssh backend."""
    from tests.sshd_hosts import SshdHosts, sshd_skip_reason
    reason = sshd_skip_reason()
    if reason:
        pytest.skip(reason)
    with SshdHosts(3, 3) as hosts:
        yield hosts


@pytest.fixture(params=[pytest.param("docker", marks=pytest.mark.docker),
                        pytest.param("netns", marks=pytest.mark.netns),
                        pytest.param("ssh", marks=pytest.mark.netns)])
def backend(request) -> Backend:
    """Each backend in turn (skipped with the reason where it cannot run)."""
    if request.param == "docker":
        return Backend("docker", "10.75.0.0/24", request.getfixturevalue("engine"))
    if request.param == "ssh":
        return Backend("ssh", "10.89.3.0/24", sshd=request.getfixturevalue("sshd_hosts"))
    reason = netns_skip_reason()
    if reason:
        pytest.skip(reason)
    return Backend("netns", "10.88.75.0/24")
