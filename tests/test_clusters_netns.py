"""The netns backend on real namespaces (root; no mocks of ``ip``): create, exec, copy,
process and file isolation, partition and heal through the nemesis's Partitioner,
and teardown leaving nothing in ``ip netns list``, ``ip link`` or ``iptables -S``."""
from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest

from clusters.errors import ClusterError
from clusters.netns_cluster import NetnsCluster
from clusters.netns_net import process_alive
from clusters.remote import RemoteError
from tests.integration.conftest import netns_leftovers, netns_skip_reason

SUBNET = "10.88.20.0/24"
REPO_KRAFT = Path(__file__).resolve().parents[1] / "kraft"

needs_netns = pytest.mark.skipif(netns_skip_reason() is not None, reason=netns_skip_reason() or "")
pytestmark = [pytest.mark.netns]

PROBE = ("import socket,sys,time\nok=False\nfor _ in range(int(sys.argv[3])):\n try:\n"
         "  socket.create_connection((sys.argv[1],int(sys.argv[2])),0.5).close();ok=True;break\n"
         " except OSError: time.sleep(0.1)\nprint('open' if ok else 'blocked')")
LISTEN = ("import socket,sys\ns=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
          "s.bind(('0.0.0.0',int(sys.argv[1])));s.listen()\nwhile True: s.accept()[0].close()")


def run_id() -> str:
    return f"t{uuid.uuid4().hex[:8]}"


def host_text(*argv: str) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def cluster(tmp_path):
    c = NetnsCluster(3, run_id(), subnet=SUBNET, root_dir=tmp_path / "nodes",
                     files={"/opt/kraft/kraft": REPO_KRAFT}, env={"PYTHONPATH": "/opt/kraft"})
    with c:
        yield c
    assert netns_leftovers(c.run_id) == []


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="run_id"):
        NetnsCluster(1, "a b")
    with pytest.raises(ValueError, match="subnet"):
        NetnsCluster(1, "r", subnet="10.88.20.1/24")
    with pytest.raises(ValueError, match="n_nodes"):
        NetnsCluster(0, "r")
    with pytest.raises(ValueError, match="does not exist"):
        NetnsCluster(1, "r", files={"/opt/x": "/no/such/dir"})
    with pytest.raises(ValueError, match="unknown node 'n9'"):
        NetnsCluster(1, "r", binds={"n9": {"/a": "/b"}})
    with pytest.raises(ValueError, match="unknown node"):
        NetnsCluster(2, "r").ip("n3")


@needs_netns
def test_nodes_exec_and_reach_each_other(cluster):
    r = cluster.remote
    assert r.exec("n1", ["hostname"]).stdout.strip() == "n1"
    assert cluster.ip("n2") in r.exec("n2", "ip -4 -o addr show eth0").stdout
    res = r.exec("n1", "echo out; echo err >&2; exit 3", check=False)
    assert (res.exit_code, res.stdout, res.stderr) == (3, "out\n", "err\n")
    with pytest.raises(RemoteError, match="exited 3"):
        r.exec("n1", "exit 3")
    with pytest.raises(RemoteError, match="timed out"):
        r.exec("n1", ["sleep", "30"], timeout_s=1)
    with pytest.raises(RemoteError, match="unknown node"):
        r.exec("n7", "true")
    # our kraft/ is deployed where the node image has it, run by the host's python3
    assert r.exec("n3", ["python3", "-c", "import kraft; print(kraft.__file__)"]).stdout.strip() == \
        "/opt/kraft/kraft/__init__.py"
    # a detached listener on n1, reached from n2 by address and from n3 by name, and from the host
    r.exec("n1", ["python3", "-c", LISTEN, "9000"], detach=True)
    assert r.exec("n2", ["python3", "-c", PROBE, cluster.ip("n1"), "9000", "50"]).stdout.strip() == "open"
    assert r.exec("n3", ["python3", "-c", PROBE, "n1", "9000", "50"]).stdout.strip() == "open"
    import socket
    socket.create_connection((cluster.ip("n1"), 9000), 2).close()


@needs_netns
def test_nodes_have_their_own_files_and_processes(cluster):
    r = cluster.remote
    r.exec("n1", "mkdir -p /etc/kraft && echo one > /etc/kraft/x && echo t > /tmp/t && sleep 300 &")
    assert r.exec("n1", "cat /etc/kraft/x").stdout == "one\n"
    assert r.exec("n2", "cat /etc/kraft/x", check=False).exit_code != 0
    assert r.exec("n2", "cat /tmp/t", check=False).exit_code != 0
    assert not Path("/etc/kraft/x").exists()
    # the file is in n1's upper layer under root_dir; the host's /etc is untouched
    assert (cluster.root / "n1" / "upper" / "etc" / "kraft" / "x").read_text() == "one\n"
    # n1's sleep is visible (and killable) on n1 only
    assert "sleep 300" in r.exec("n1", "ps ax").stdout
    assert "sleep 300" not in r.exec("n2", "ps ax").stdout


@needs_netns
def test_put_get_round_trip(cluster, tmp_path):
    src = tmp_path / "src"
    (src / "deep").mkdir(parents=True)
    (src / "a.txt").write_text("alpha\n")
    (src / "deep" / "b.bin").write_bytes(bytes(range(256)) * 40)
    cluster.remote.exec("n2", "mkdir -p /data")
    cluster.remote.put("n2", src, "/data/copy")
    assert cluster.remote.exec("n2", "cat /data/copy/a.txt").stdout == "alpha\n"
    dst = tmp_path / "out" / "back"
    cluster.remote.get("n2", "/data/copy", dst)
    assert (dst / "a.txt").read_text() == "alpha\n"
    assert (dst / "deep" / "b.bin").read_bytes() == bytes(range(256)) * 40
    cluster.remote.get("n2", "/data/copy/a.txt", dst)
    assert dst.is_file() and dst.read_text() == "alpha\n"
    with pytest.raises(RemoteError, match="does not exist"):
        cluster.remote.get("n2", "/no/such/path", tmp_path / "x")
    with pytest.raises(RemoteError, match="does not exist"):
        cluster.remote.put("n2", src, "/no/such/dir/copy")
    with pytest.raises(FileNotFoundError):
        cluster.remote.put("n2", tmp_path / "missing", "/data/x")


@needs_netns
def test_partition_and_heal(cluster):
    """The partition nemesis's iptables rules work inside the namespaces: n1 cut off from
    n2 (both ways), n3 still reaches both, then healed."""
    from nemesis.partition import Partitioner
    r = cluster.remote
    for n in cluster.nodes:
        r.exec(n, ["python3", "-c", LISTEN, "9001"], detach=True)
    reach = lambda a, b, tries="30": r.exec(a, ["python3", "-c", PROBE, cluster.ip(b), "9001", tries],  # noqa: E731
                                            timeout_s=60).stdout.strip()
    assert reach("n2", "n1") == "open"
    p = Partitioner(cluster)
    rules = p.apply({"n1": {"n2"}, "n2": {"n1"}, "n3": set()})
    assert rules["n3"] == [] and len(rules["n1"]) == 1
    assert f"-A KC-partition -s {cluster.ip('n2')}/32 -j DROP" in r.exec("n1", "iptables -S").stdout
    assert reach("n2", "n1", "5") == "blocked"
    assert reach("n1", "n2", "5") == "blocked"
    assert reach("n3", "n1") == "open" and reach("n3", "n2") == "open"
    # the host's own tables are untouched by the nodes' rules
    assert "KC-partition" not in host_text("iptables", "-S")
    p.heal()
    assert reach("n2", "n1") == "open" and reach("n1", "n2") == "open"
    p.heal_all()


@needs_netns
def test_teardown_leaves_nothing_even_when_the_body_raises(tmp_path):
    c = NetnsCluster(2, run_id(), subnet=SUBNET, root_dir=tmp_path / "nodes")
    with pytest.raises(KeyError, match="boom"):
        with c:
            c.remote.exec("n1", "sleep 600 &")
            inits = list(c.init_pids().values())
            leftovers = netns_leftovers(c.run_id)
            assert sum(x.startswith("netns") for x in leftovers) == 2
            assert sum(x.startswith("iptables") for x in leftovers) == 1
            assert sum(x.startswith("link") for x in leftovers) == 3     # bridge and two veths
            raise KeyError("boom")
    assert netns_leftovers(c.run_id) == []
    assert not any(process_alive(p) for p in inits)
    # the nodes' files stay under root_dir, the overlays' work dirs do not
    assert (tmp_path / "nodes" / "n1" / "upper").is_dir() and not (tmp_path / "nodes" / "n1" / "work").exists()
    with pytest.raises(RemoteError, match="not running"):
        c.remote.exec("n1", "true")
    c.teardown()     # idempotent


@needs_netns
def test_temporary_root_is_removed():
    c = NetnsCluster(1, run_id(), subnet=SUBNET)
    with c:
        root = c.root
        assert root.is_dir()
    assert not root.exists() and netns_leftovers(c.run_id) == []


@needs_netns
def test_subnet_overlap_is_a_clear_error_and_dead_runs_are_reaped(tmp_path):
    first = NetnsCluster(1, run_id(), subnet=SUBNET, root_dir=tmp_path / "a")
    with first:
        second = NetnsCluster(1, run_id(), subnet=SUBNET, root_dir=tmp_path / "b")
        with pytest.raises(ClusterError, match=f"overlaps.*{first.bridge}.*kraft-chaos run {first.run_id}.*--subnet"):
            second.setup()
        assert netns_leftovers(second.run_id) == []
    # a run whose nodes died (harness killed with SIGKILL, then the nodes) no longer blocks its subnet
    dead = NetnsCluster(1, run_id(), subnet=SUBNET, root_dir=tmp_path / "c", keep=True)
    dead.setup()
    from clusters.netns_net import kill_pids
    kill_pids(list(dead.init_pids().values()))
    with NetnsCluster(1, run_id(), subnet=SUBNET, root_dir=tmp_path / "d") as nxt:
        assert netns_leftovers(dead.run_id) == []
        assert nxt.remote.exec("n1", "hostname").stdout.strip() == "n1"
    dead.teardown()


@needs_netns
def test_kept_cluster_is_removed_by_the_sweep(tmp_path):
    """``keep=True`` leaves the nodes running after the block; ``kraft-chaos teardown``'s
    sweep (``clusters.netns_net.sweep``) removes them, processes included."""
    from clusters.netns_net import sweep
    c = NetnsCluster(2, run_id(), subnet=SUBNET, root_dir=tmp_path / "nodes", keep=True)
    with c:
        pass
    inits = list(c.init_pids().values())
    assert c.remote.exec("n2", "hostname").stdout.strip() == "n2"
    removed = sweep(c.run_id)
    assert any(x.startswith("netns") for x in removed) and any(x.startswith("iptables") for x in removed)
    assert netns_leftovers(c.run_id) == []
    assert not any(process_alive(p) for p in inits)
    assert sweep(c.run_id) == []
    c.teardown()


@needs_netns
def test_a_node_whose_init_died_is_reported_not_entered(tmp_path):
    from clusters.netns_net import kill_pids
    with NetnsCluster(2, run_id(), subnet=SUBNET, root_dir=tmp_path / "nodes") as c:
        kill_pids([c.init_pids()["n1"]])
        with pytest.raises(RemoteError, match="n1: the node is not running"):
            c.remote.exec("n1", "true")
        assert c.remote.exec("n2", "hostname").stdout.strip() == "n2"
    assert netns_leftovers(c.run_id) == []
