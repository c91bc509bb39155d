"""Integration tests for the Docker backend: image build, cluster, exec, copy, iptables, teardown.

Needs a Docker engine (skipped otherwise) and, the first time, root plus a
Debian mirror to build the base image with debootstrap (~40 s).
"""
from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from clusters.errors import ClusterError
from tests.integration.conftest import run_labelled

pytestmark = pytest.mark.docker

REPO_KRAFT = Path(__file__).resolve().parents[2] / "kraft"
SUBNET = os.environ.get("KRAFT_CHAOS_TEST_SUBNET", "10.78.0.0/24")


@pytest.fixture(scope="module")
def client(engine):
    return engine


@pytest.fixture(scope="module")
def kraft_dir(tmp_path_factory):
    """The real kraft/ package when it is importable, else a tiny stand-in package."""
    if (REPO_KRAFT / "__init__.py").is_file():
        return REPO_KRAFT
    d = tmp_path_factory.mktemp("fake") / "kraft"
    d.mkdir()
    (d / "__init__.py").write_text("MARK = 'fake-kraft'\n")
    return d


@pytest.fixture(scope="module")
def image(client, kraft_dir):
    from clusters.image import ensure_node_image
    return ensure_node_image(client, kraft_dir, log=lambda m: None)


@pytest.fixture
def cluster(client, image):
    from clusters.docker_cluster import DockerCluster
    run_id = f"t{uuid.uuid4().hex[:8]}"
    c = DockerCluster(3, run_id, image, subnet=SUBNET, client=client)
    with c:
        yield c
    assert run_labelled(client, run_id) == ([], [])


def test_image_is_cached_and_holds_kraft(client, kraft_dir, image):
    from clusters.image import ensure_node_image
    assert image.startswith("kraft-chaos-node:")
    assert ensure_node_image(client, kraft_dir, log=lambda m: pytest.fail(f"rebuilt: {m}")) == image
    out = client.containers.run(image, ["python3", "-c", "import kraft, sys; print(kraft.__file__)"],
                                remove=True)
    assert out.decode().strip() == "/opt/kraft/kraft/__init__.py"


def test_nodes_exec_and_reach_each_other(cluster):
    r = cluster.remote
    assert r.exec("n1", ["hostname"]).stdout.strip() == "n1"
    assert cluster.ip("n2") in r.exec("n2", "ip -4 -o addr show").stdout
    res = r.exec("n1", "echo out; echo err >&2; exit 3", check=False)
    assert (res.exit_code, res.stdout, res.stderr) == (3, "out\n", "err\n")
    from clusters.remote import RemoteError
    with pytest.raises(RemoteError, match="exited 3"):
        r.exec("n1", "exit 3")
    with pytest.raises(RemoteError, match="timed out"):
        r.exec("n1", ["sleep", "30"], timeout_s=1)
    # a detached listener on n1, reached from n2 and n3 by IP and by name
    r.exec("n1", ["python3", "-c",
                  "import socket\ns=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
                  "s.bind(('0.0.0.0',9000));s.listen()\nwhile True:\n c,_=s.accept();c.sendall(b'hi');c.close()"],
           detach=True)
    probe = ("import socket,sys,time\nfor _ in range(50):\n try:\n  s=socket.create_connection((sys.argv[1],9000),1)\n"
             "  print(s.recv(2).decode());break\n except OSError: time.sleep(0.1)")
    assert r.exec("n2", ["python3", "-c", probe, cluster.ip("n1")]).stdout.strip() == "hi"
    assert r.exec("n3", ["python3", "-c", probe, "n1"]).stdout.strip() == "hi"


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
    # a single file; an existing local copy is replaced
    cluster.remote.get("n2", "/data/copy/a.txt", dst)
    assert dst.is_file() and dst.read_text() == "alpha\n"
    from clusters.remote import RemoteError
    with pytest.raises(RemoteError, match="does not exist"):
        cluster.remote.get("n2", "/no/such/path", tmp_path / "x")
    with pytest.raises(RemoteError, match="does not exist"):
        cluster.remote.put("n2", src, "/no/such/dir/copy")
    with pytest.raises(FileNotFoundError):
        cluster.remote.put("n2", tmp_path / "missing", "/data/x")


def test_iptables_drop_blocks_traffic(cluster):
    r = cluster.remote
    r.exec("n1", ["python3", "-c",
                  "import socket\ns=socket.socket();s.bind(('0.0.0.0',9001));s.listen()\n"
                  "while True: s.accept()[0].close()"], detach=True)
    probe = ("import socket,sys,time\nok=False\nfor _ in range(20):\n try:\n"
             "  socket.create_connection((sys.argv[1],9001),1).close();ok=True;break\n"
             " except OSError: time.sleep(0.1)\nprint('open' if ok else 'blocked')")
    assert r.exec("n2", ["python3", "-c", probe, cluster.ip("n1")]).stdout.strip() == "open"
    r.exec("n1", ["iptables", "-A", "INPUT", "-s", cluster.ip("n2"), "-j", "DROP"])
    assert r.exec("n2", ["python3", "-c", probe, cluster.ip("n1")], timeout_s=60).stdout.strip() == "blocked"
    assert r.exec("n3", ["python3", "-c", probe, cluster.ip("n1")]).stdout.strip() == "open"
    r.exec("n1", ["iptables", "-D", "INPUT", "-s", cluster.ip("n2"), "-j", "DROP"])
    assert r.exec("n2", ["python3", "-c", probe, cluster.ip("n1")]).stdout.strip() == "open"


def test_teardown_when_body_raises(client, image):
    from clusters.docker_cluster import DockerCluster
    run_id = f"t{uuid.uuid4().hex[:8]}"
    with pytest.raises(KeyError, match="boom"):
        with DockerCluster(2, run_id, image, subnet=SUBNET, client=client) as c:
            assert len(run_labelled(client, run_id)[0]) == 2
            raise KeyError("boom")
    assert run_labelled(client, run_id) == ([], [])
    c.teardown()  # idempotent


def test_subnet_overlap_is_a_clear_error(client, image):
    from clusters.docker_cluster import DockerCluster
    first = DockerCluster(1, f"t{uuid.uuid4().hex[:8]}", image, subnet=SUBNET, client=client)
    second_id = f"t{uuid.uuid4().hex[:8]}"
    with first:
        second = DockerCluster(1, second_id, image, subnet=SUBNET, client=client)
        with pytest.raises(ClusterError, match=f"overlaps.*{first.network_name}.*--subnet"):
            second.setup()
        assert run_labelled(client, second_id) == ([], [])


def test_leftovers_of_a_dead_run_are_reaped(client, image):
    """A run whose harness died (its containers stopped, network left) does not
    block the subnet: the next cluster removes its leftovers and comes up."""
    from clusters.docker_cluster import DockerCluster
    dead_id, next_id = f"t{uuid.uuid4().hex[:8]}", f"t{uuid.uuid4().hex[:8]}"
    dead = DockerCluster(2, dead_id, image, subnet=SUBNET, client=client)
    dead.setup()
    for c in run_labelled(client, dead_id)[0]:
        c.kill()
    with DockerCluster(2, next_id, image, subnet=SUBNET, client=client) as c:
        assert run_labelled(client, dead_id) == ([], [])
        assert c.remote.exec("n1", "hostname").stdout.strip() == "n1"
    assert run_labelled(client, next_id) == ([], [])


def test_missing_image_is_a_clear_error(client):
    from clusters.docker_cluster import DockerCluster
    c = DockerCluster(1, f"t{uuid.uuid4().hex[:8]}", "kraft-chaos-node:does-not-exist",
                      subnet=SUBNET, client=client)
    with pytest.raises(ClusterError, match="does-not-exist.*ensure_node_image"):
        c.setup()


def test_teardown_run_and_all_remove_labelled_objects(client, image):
    from clusters.docker_cluster import DockerCluster
    from clusters.teardown import teardown_run
    run_id = f"t{uuid.uuid4().hex[:8]}"
    c = DockerCluster(2, run_id, image, subnet=SUBNET, client=client, keep=True)
    with c:
        pass  # keep=True: still there after the block
    assert len(run_labelled(client, run_id)[0]) == 2
    removed = teardown_run(client, run_id)
    assert sorted(removed) == sorted([c.container_name("n1"), c.container_name("n2"), c.network_name])
    assert run_labelled(client, run_id) == ([], [])
    assert teardown_run(client, run_id) == []
