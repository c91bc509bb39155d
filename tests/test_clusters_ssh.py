"""The SSH backend against real sshd hosts (tests/sshd_hosts.py: Debian's sshd in network
namespaces this test makes, keys and known_hosts it generates; no mocks of paramiko):
connect, exec, put/get, node isolation, partition and heal through the nemesis's Partitioner;
each way a host fails names the host and the cause (exit 4 through ``kraft-chaos run``); and
teardown, sweep and dead-run reaping leave nothing on the hosts."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from clusters.errors import ClusterError
from clusters.remote import RemoteError
from clusters.ssh_cluster import SshCluster
from clusters.ssh_hosts import load_hosts
from clusters.ssh_session import SshHostError
from harness import exits
from harness.cli import main as cli
from tests.sshd_hosts import NOSUDO, SshdHosts, fingerprint_of, sshd_skip_reason

pytestmark = [pytest.mark.netns, pytest.mark.skipif(sshd_skip_reason() is not None, reason=sshd_skip_reason() or "")]

REPO_KRAFT = Path(__file__).resolve().parents[1] / "kraft"
FILES = {"/opt/kraft/kraft": REPO_KRAFT}
ENV = {"PYTHONPATH": "/opt/kraft"}
PROBE = ("import socket,sys,time\nok=False\nfor _ in range(int(sys.argv[3])):\n try:\n"
         "  socket.create_connection((sys.argv[1],int(sys.argv[2])),0.5).close();ok=True;break\n"
         " except OSError: time.sleep(0.1)\nprint('open' if ok else 'blocked')")
LISTEN = ("import socket,sys\ns=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
          "s.bind(('0.0.0.0',int(sys.argv[1])));s.listen()\nwhile True: s.accept()[0].close()")


@pytest.fixture(scope="module")
def hosts():
    with SshdHosts(3, 1) as h:
        yield h


@pytest.fixture
def run_dir(hosts):
    d = str(hosts.dir / "runs")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def hosts_file(hosts, run_dir, **defaults):
    # the third host goes through sudo (root may sudo without a password)
    entries = [{"host": ip} for ip in hosts.ips]
    entries[2]["sudo"] = True
    return hosts.hosts_toml(run_dir=run_dir, hosts=entries, **defaults)


def test_connect_exec_put_get_and_isolation(hosts, run_dir, tmp_path):
    c = SshCluster(3, "sshexec", hosts_file(hosts, run_dir), files=FILES, env=ENV)
    with c:
        r = c.remote
        assert [c.ip(n) for n in c.nodes] == hosts.ips
        res = r.exec("n1", "echo out; echo err >&2; exit 3", check=False)
        assert (res.exit_code, res.stdout, res.stderr) == (3, "out\n", "err\n")
        with pytest.raises(RemoteError, match="exited 3"):
            r.exec("n3", "exit 3")        # through sudo
        with pytest.raises(RemoteError, match="timed out after 1 s"):
            r.exec("n2", ["sleep", "30"], timeout_s=1)
        with pytest.raises(RemoteError, match="unknown node"):
            r.exec("n7", "true")
        # our kraft/ where the node image has it, run by the host's python3 with -S
        for n in c.nodes:
            assert r.exec(n, ["python3", "-c", "import kraft, sys; print(kraft.__file__, sys.flags.no_site)"]
                          ).stdout.split() == ["/opt/kraft/kraft/__init__.py", "1"]
        # a node's /etc and /var are its own (overlays); it sees only its own processes
        r.exec("n1", "mkdir -p /etc/kraft /var/lib/kraft && echo one > /etc/kraft/x")
        assert not os.path.exists("/etc/kraft/x")
        assert r.exec("n2", "cat /etc/kraft/x", check=False).exit_code != 0
        assert (Path(c.node_dir("n1")) / "upper/etc/kraft/x").read_text() == "one\n"
        assert r.exec("n1", "cat /proc/1/cmdline | tr '\\0' ' '").stdout.startswith("/usr/bin/python3")
        # a detached listener on n1, reached from n2 and n3 and from this machine
        r.exec("n1", ["python3", "-c", LISTEN, "9000"], detach=True)
        for n in ("n2", "n3"):
            assert r.exec(n, ["python3", "-c", PROBE, c.ip("n1"), "9000", "50"]).stdout.strip() == "open"
        import socket
        socket.create_connection((c.ip("n1"), 9000), timeout=5).close()
        assert "s.accept()" in r.exec("n1", "ps -e -o cmd").stdout
        assert "s.accept()" not in r.exec("n2", "ps -e -o cmd").stdout
        # put / get of a file and a folder
        (tmp_path / "d" / "sub").mkdir(parents=True)
        (tmp_path / "d" / "sub" / "f.txt").write_text("hello")
        (tmp_path / "one.txt").write_text("1")
        r.put("n3", tmp_path / "d", "/var/lib/kraft-d")
        r.put("n3", tmp_path / "one.txt", "/etc/one.txt")
        assert r.exec("n3", "cat /var/lib/kraft-d/sub/f.txt /etc/one.txt").stdout == "hello1"
        r.get("n3", "/var/lib/kraft-d", tmp_path / "back")
        assert (tmp_path / "back" / "sub" / "f.txt").read_text() == "hello"
        r.get("n3", "/etc/one.txt", tmp_path / "one-back.txt")
        assert (tmp_path / "one-back.txt").read_text() == "1"
        with pytest.raises(RemoteError, match="remote path does not exist"):
            r.get("n1", "/no/such", tmp_path / "x")
        with pytest.raises(RemoteError, match="remote directory /no/such does not exist"):
            r.put("n1", tmp_path / "one.txt", "/no/such/one.txt")
        pids = c.init_pids()
    assert hosts.leftovers(run_dir) == []
    assert not any(os.path.exists(f"/proc/{p}") for p in pids.values())
    with pytest.raises(RemoteError, match="not running"):
        c.remote.exec("n1", "true")


def test_partition_and_heal_through_the_partitioner(hosts, run_dir):
    from nemesis.grudge import isolate
    from nemesis.partition import Partitioner
    c = SshCluster(3, "sshpart", hosts_file(hosts, run_dir), files=FILES, env=ENV)
    with c:
        r = c.remote
        for n in c.nodes:
            r.exec(n, ["python3", "-c", LISTEN, "9001"], detach=True)

        def reach(src: str, dst: str) -> str:
            return r.exec(src, ["python3", "-c", PROBE, c.ip(dst), "9001", "20"]).stdout.strip()

        assert reach("n2", "n1") == "open"
        p = Partitioner(c)
        p.apply(isolate(c.nodes, "n1"))
        assert (reach("n2", "n1"), reach("n1", "n3"), reach("n2", "n3")) == ("blocked", "blocked", "open")
        assert "KC-partition" in hosts.ns_exec(1, "iptables", "-S")
        p.heal_all()
        assert reach("n2", "n1") == "open"
        p.apply(isolate(c.nodes, "n2"))        # left in place: teardown removes the chains
    assert hosts.leftovers(run_dir) == []


@pytest.mark.parametrize("case", ["refused", "unreachable", "wrong-key", "unknown-host-key", "changed-host-key",
                                  "no-sudo", "not-root"])
def test_host_failures_name_the_host_and_the_cause(hosts, run_dir, case):
    ip = hosts.ips[0]
    entry, defaults, label = {"host": ip}, {}, f"root@{ip}:22"
    if case == "refused":
        entry["port"], label = 2222, f"root@{ip}:2222"
        cause = "connection refused on port 2222 (no sshd listening there)"
    elif case == "unreachable":
        entry["host"], label = "10.89.1.99", "root@10.89.1.99:22"
        defaults["connect_timeout_s"] = 2
        cause = "unreachable: "
    elif case == "wrong-key":
        defaults["key_file"] = str(hosts.wrong_key)
        cause = (f"authentication as root failed with key {hosts.wrong_key}: a wrong key, or its public key "
                 "is not in root's authorized_keys")
    elif case in ("unknown-host-key", "changed-host-key"):
        kh = hosts.dir / f"kh-{case}"
        other = hosts.dir / "host2.pub"       # host 2's key, listed for host 1's address
        kh.write_text(f"{ip} {' '.join(other.read_text().split()[:2])}\n" if case == "changed-host-key" else "")
        defaults["known_hosts"] = str(kh)
        actual = fingerprint_of((hosts.dir / "host1.pub").read_text())
        cause = (f"its ssh-ed25519 host key ({actual}) is not in known_hosts {kh}" if case == "unknown-host-key"
                 else f"its ssh-ed25519 host key ({actual}) differs from the one in known_hosts {kh} "
                      f"({fingerprint_of(other.read_text())})")
    elif case == "no-sudo":
        defaults.update(user=NOSUDO, sudo=True)
        label = f"{NOSUDO}@{ip}:22"
        cause = f"{NOSUDO} cannot run commands as root without a password: sudo asks for a password"
    else:
        defaults.update(user=NOSUDO, sudo=False)
        label = f"{NOSUDO}@{ip}:22"
        cause = f"{NOSUDO} is not root and sudo = false"
    f = hosts.hosts_toml(f"hosts-{case}.toml", hosts=[entry], run_dir=run_dir, **defaults)
    with pytest.raises(SshHostError) as e:
        SshCluster(1, "sshfail", f, files=FILES, env=ENV).setup()
    assert e.value.host == label
    assert e.value.cause.startswith(cause), e.value.cause
    assert str(e.value).startswith(f"ssh host {label}: ")
    assert hosts.leftovers(run_dir) == []


def test_a_host_failure_exits_4_through_kraft_chaos_run(hosts, run_dir, tmp_path, capsys):
    f = hosts.hosts_toml("hosts-wrong.toml", run_dir=run_dir, key_file=str(hosts.wrong_key))
    code = cli.main(["run", "--cluster", "ssh", "--hosts", str(f), "--nodes", "3", "--time-limit", "1",
                     "--nemesis", "none", "--store", str(tmp_path / "store"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == exits.EXIT_CLUSTER, err
    assert f"ssh host root@{hosts.ips[0]}:22: authentication as root failed with key {hosts.wrong_key}" in err
    assert hosts.leftovers(run_dir) == []


def test_accept_new_trusts_and_records_an_unknown_host_key(hosts, run_dir):
    kh = hosts.dir / "kh-accept" / "known_hosts"       # created, with its folder
    f = hosts.hosts_toml("hosts-accept.toml", hosts=[{"host": hosts.ips[1]}], run_dir=run_dir,
                         known_hosts=str(kh), host_key_policy="accept-new")
    with SshCluster(1, "sshaccept", f, files=FILES, env=ENV) as c:
        assert c.remote.exec("n1", "echo ok").stdout == "ok\n"
    assert kh.read_text().split() == [hosts.ips[1], *(hosts.dir / "host2.pub").read_text().split()[:2]]
    with SshCluster(1, "sshaccept2", hosts.hosts_toml("hosts-accept2.toml", hosts=[{"host": hosts.ips[1]}],
                                                      run_dir=run_dir, known_hosts=str(kh))) as c:
        assert c.remote.exec("n1", "true").exit_code == 0      # now known under the default policy
    assert hosts.leftovers(run_dir) == []


def test_kept_nodes_make_a_host_busy_until_swept(hosts, run_dir, capsys):
    from nemesis.grudge import isolate
    from nemesis.partition import Partitioner
    f = hosts_file(hosts, run_dir)
    with SshCluster(3, "sshkept", f, keep=True, files=FILES, env=ENV) as kept:
        kept.remote.exec("n1", ["python3", "-c", LISTEN, "9002"], detach=True)
        Partitioner(kept).apply(isolate(kept.nodes, "n3"))
    left = hosts.leftovers(run_dir)          # keep=True: nodes, folders and rules stay
    assert any("process" in x for x in left) and any("KC-partition" in x for x in left), left
    with pytest.raises(ClusterError, match=r"n1: ssh host root@10.89.1.11:22: busy: run sshkept still has a node there \(remove it with "
                                           r"`kraft-chaos teardown --cluster ssh --hosts "):
        SshCluster(3, "sshother", f, files=FILES, env=ENV).setup()
    assert cli.main(["teardown", "--cluster", "ssh", "--hosts", str(f)]) == 0
    out = capsys.readouterr().out
    # (the test's hosts share one file system, so each sweep sees every node's folder)
    assert out.count(": iptables chain KC-partition") == 3 and ": node init " in out, out
    assert hosts.leftovers(run_dir) == []


def test_a_dead_runs_leftovers_are_reaped_at_setup(hosts, run_dir):
    f = hosts_file(hosts, run_dir)
    dead = SshCluster(3, "sshdead", f, keep=True, files=FILES, env=ENV)
    dead.setup()
    for pid in dead.init_pids().values():        # the harness died with SIGKILL; then the nodes did
        os.kill(pid, 9)
    for s in dead.sessions.values():
        s.close()
    assert os.path.isdir(dead.node_dir("n1"))
    with SshCluster(3, "sshnext", f, files=FILES, env=ENV) as c:
        assert not os.path.exists(dead.node_dir("n1"))
        assert c.remote.exec("n2", "true").exit_code == 0
    assert hosts.leftovers(run_dir) == []


def test_setup_failure_on_one_host_removes_the_others(hosts, run_dir):
    entries = [{"host": ip} for ip in hosts.ips]
    entries[1]["python"] = "python2.2"
    f = hosts.hosts_toml("hosts-py.toml", hosts=entries, run_dir=run_dir)
    with pytest.raises(ClusterError, match=rf"ssh host root@{hosts.ips[1]}:22: no python2.2 on the host"):
        SshCluster(3, "sshpy", f, files=FILES, env=ENV).setup()
    assert hosts.leftovers(run_dir) == []


def test_hosts_file_round_trip(hosts, run_dir):
    specs = load_hosts(hosts_file(hosts, run_dir))
    assert [s.host for s in specs] == hosts.ips and specs[2].sudo and not specs[0].sudo


def test_a_sweep_names_the_hosts_it_could_not_reach(hosts, run_dir, capsys):
    f = hosts.hosts_toml("hosts-sweep.toml", hosts=[{"host": hosts.ips[0]}, {"host": hosts.ips[1], "port": 2222}],
                         run_dir=run_dir)
    assert cli.main(["teardown", "--cluster", "ssh", "--hosts", str(f)]) == exits.EXIT_CLUSTER
    err = capsys.readouterr().err
    assert f"ssh host root@{hosts.ips[1]}:2222: connection refused on port 2222" in err, err
    assert hosts.ips[0] not in err
