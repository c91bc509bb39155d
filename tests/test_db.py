import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from clusters.remote import ExecResult, Remote, RemoteError
from targets.kraft_db import DBError, KraftDB, NodePaths, node_seed
from tests.nemesis_fakes import FakeCluster, FakeRemote


# --- configuration and commands, against the recording fake ------------------

def test_node_ids_and_addresses():
    db = KraftDB(FakeCluster(3), "CID", seed=7)
    assert [db.node_id(n) for n in ["n1", "n2", "n3"]] == [1, 2, 3]
    assert db.node_for_id(2) == "n2"
    assert db.address("n2") == ("10.77.0.12", 9093)
    with pytest.raises(ValueError, match="unknown node 'n9'"):
        db.node_id("n9")


def test_config_text_for_n1_of_3():
    db = KraftDB(FakeCluster(3), "q1w2e3", seed=5, unsafe=["no-fsync", "forget-vote"], pre_vote=False)
    props = dict(line.split("=", 1) for line in db.config_text("n1").splitlines())
    assert props == {
        "node.id": "1",
        "listeners": "10.77.0.11:9093",
        "controller.quorum.voters": "1@10.77.0.11:9093,2@10.77.0.12:9093,3@10.77.0.13:9093",
        "log.dir": "/var/lib/kraft/disk/data",
        "cluster.id": "q1w2e3",
        "controller.quorum.election.timeout.ms": "1000",
        "controller.quorum.fetch.timeout.ms": "2000",
        "controller.quorum.request.timeout.ms": "2000",
        "controller.quorum.fetch.max.wait.ms": "500",
        "pre_vote": "false",
        "check_quorum": "true",
        "unsafe": "no-fsync,forget-vote",
        "seed": str(node_seed(5, 1)),
    }


def test_fetch_max_records_reaches_the_node_config():
    from kraft.runtime.config import parse_config
    db = KraftDB(FakeCluster(3), "CID", seed=1, fetch_max_records=100)
    assert "fetch.max.records=100" in db.config_text("n2").splitlines()
    assert parse_config(db.config_text("n2")).fetch_max_records == 100
    assert parse_config(KraftDB(FakeCluster(3), "CID", seed=1).config_text("n2")).fetch_max_records == 2000


def test_node_seed_is_stable_and_distinct():
    assert node_seed(5, 1) == node_seed(5, 1)
    assert len({node_seed(5, i) for i in range(1, 6)} | {node_seed(6, 1)}) == 6
    # fixed value: must not change between Python processes or releases
    out = subprocess.run([sys.executable, "-c", "from targets.kraft_db import node_seed; print(node_seed(5, 1))"],
                         capture_output=True, text=True, cwd=Path(__file__).parent.parent,
                         env={**os.environ, "PYTHONHASHSEED": "123"})
    assert int(out.stdout) == node_seed(5, 1)


@pytest.mark.parametrize("kwargs, message", [
    ({"cluster_id": ""}, "cluster_id"),
    ({"cluster_id": "a b"}, "cluster_id"),
    ({"port": 70000}, "port"),
    ({"election_timeout_ms": 0}, "election_timeout_ms"),
    ({"fetch_max_wait_ms": 1.5}, "fetch_max_wait_ms"),
    ({"unsafe": ["a,b"]}, "unsafe"),
    ({"seed": "x"}, "seed"),
    ({"fetch_max_records": 0}, "fetch_max_records"),
])
def test_bad_arguments(kwargs, message):
    args = {"cluster_id": "CID", "seed": 1, **kwargs}
    with pytest.raises(ValueError, match=message):
        KraftDB(FakeCluster(3), **args)


def test_setup_sequence_on_each_node():
    def handler(node, cmd):
        if "kraft[.]node" in cmd and "nohup" not in cmd and "kill" not in cmd:
            return ExecResult(0, "", "")  # is_running: yes
        if "nohup" in cmd:
            return ExecResult(0, "started\n", "")
        return None
    cluster = FakeCluster(3, FakeRemote(handler))
    db = KraftDB(cluster, "CID", seed=1, startup_check_s=0)
    db.setup()
    for n in cluster.nodes:
        calls = [c for c in cluster.remote.calls if c[1] == n]
        kinds = [c[0] for c in calls]
        assert kinds == ["exec", "put", "exec", "exec", "exec"]
        assert calls[0][2].startswith("mkdir -p ") and "/etc/kraft" in calls[0][2]
        assert calls[1][2] == "/etc/kraft/node.properties" and calls[1][3] == db.config_text(n)
        fmt = calls[2][2]
        assert f"python3 -m kraft format --cluster-id=CID --node-id {db.node_id(n)} --data-dir /var/lib/kraft/disk/data" in fmt
        assert fmt.startswith("rm -rf /var/lib/kraft/disk/data ")
        assert "nohup python3 -m kraft.node --config /etc/kraft/node.properties" in calls[3][2]
        assert "echo $! > /var/lib/kraft/node.pid" in calls[3][2]


def test_setup_reports_node_that_died():
    def handler(node, cmd):
        if cmd.startswith("tail"):
            return ExecResult(0, "ConfigError: missing required key node.id\n", "")
        if "nohup" in cmd:
            return ExecResult(0, "started\n", "")
        if "kraft[.]node" in cmd:
            return ExecResult(1 if node == "n2" else 0, "", "")
        return None
    db = KraftDB(FakeCluster(3, FakeRemote(handler)), "CID", seed=1, startup_check_s=0)
    with pytest.raises(DBError, match=r"(?s)on n2\n.*missing required key node.id"):
        db.setup()


def test_setup_failure_names_node():
    remote = FakeRemote()
    remote.down.add("n3")
    with pytest.raises(DBError, match="n3: node is down"):
        KraftDB(FakeCluster(3, remote), "CID", seed=1, startup_check_s=0).setup()


def test_collect_notes_missing_files(tmp_path):
    remote = FakeRemote()
    remote.files[("n1", "/var/lib/kraft/node.log")] = "hello\n"
    remote.files[("n1", "/etc/kraft/node.properties")] = "node.id=1\n"
    db = KraftDB(FakeCluster(3, remote), "CID", seed=1)
    missing = db.collect("n1", tmp_path / "nodes" / "n1")
    assert (tmp_path / "nodes/n1/node.log").read_text() == "hello\n"
    assert (tmp_path / "nodes/n1/node.properties").read_text() == "node.id=1\n"
    assert list(missing) == ["data"] and "no such file" in missing["data"]


def test_teardown_is_tolerant():
    remote = FakeRemote()
    remote.down.add("n2")
    errors = KraftDB(FakeCluster(3, remote), "CID", seed=1).teardown()
    assert list(errors) == ["n2"]
    assert len(remote.execs("n1")) == 1 and len(remote.execs("n3")) == 1


# --- real processes: the shell scripts run on this machine --------------------

FAKE_NODE = textwrap.dedent('''
    import os, signal, sys, time
    print("kraft.node up", sys.argv, flush=True)
    if os.environ.get("FAKE_IGNORE_TERM"):
        signal.signal(signal.SIGTERM, lambda *a: print("SIGTERM ignored", flush=True))
    else:
        signal.signal(signal.SIGTERM, lambda *a: (print("SIGTERM", flush=True), sys.exit(0)))
    while True:
        time.sleep(0.05)
''')

FAKE_MAIN = textwrap.dedent('''
    import argparse, os
    p = argparse.ArgumentParser()
    p.add_argument("cmd"); p.add_argument("--cluster-id"); p.add_argument("--node-id")
    p.add_argument("--data-dir")
    a = p.parse_args()
    with open(os.path.join(a.data_dir, "meta.properties"), "w") as f:
        f.write(f"cluster.id={a.cluster_id}\\nnode.id={a.node_id}\\n")
''')


class LocalRemote(Remote):
    """Runs commands on this machine with a stand-in ``kraft`` package on PYTHONPATH."""

    def __init__(self, pythonpath: Path, env: dict | None = None):
        self.env = {**os.environ, "PYTHONPATH": str(pythonpath), **(env or {})}

    def exec(self, node, cmd, *, check=True, detach=False, timeout_s=30.0):
        argv = ["sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, env=self.env)
        r = ExecResult(p.returncode, p.stdout, p.stderr)
        if check and p.returncode:
            raise RemoteError(node, cmd, f"exit {p.returncode}: {p.stderr}", r)
        return r

    def put(self, node, local_path, remote_path):
        shutil.copy(local_path, remote_path)

    def get(self, node, remote_path, local_path):
        src = Path(remote_path)
        if not src.exists():
            raise RemoteError(node, remote_path, "no such file")
        Path(local_path).parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copy)(src, local_path)


class LocalCluster(FakeCluster):
    def __init__(self, remote):
        super().__init__(1, remote)

    def ip(self, node):
        return "127.0.0.1"


def _alive(pid):
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes() != b""
    except FileNotFoundError:
        return False


@pytest.fixture
def local_db(tmp_path):
    made = []

    def make(**env):
        pkg = tmp_path / "pkg" / "kraft"
        pkg.mkdir(parents=True, exist_ok=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "__main__.py").write_text(FAKE_MAIN)
        (pkg / "node.py").write_text(FAKE_NODE)
        root = tmp_path / "root"
        paths = NodePaths(config=str(root / "etc/node.properties"), data_dir=str(root / "lib/data"),
                          log=str(root / "lib/node.log"), pid=str(root / "lib/node.pid"),
                          python=sys.executable)
        db = KraftDB(LocalCluster(LocalRemote(tmp_path / "pkg", env)), "CID", seed=3,
                     paths=paths, stop_timeout_s=1.0, startup_check_s=0.2)
        made.append(db)
        return db

    yield make
    for db in made:  # kill only the processes these tests started, by pid
        pidfile = Path(db.paths.pid)
        if pidfile.exists() and pidfile.read_text().strip():
            pid = int(pidfile.read_text())
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def pid_of(db):
    return int(Path(db.paths.pid).read_text())


def wait_up(db, count):
    """Wait until the stand-in node has logged its start ``count`` times (handlers installed)."""
    deadline = time.monotonic() + 5
    while Path(db.paths.log).read_text().count("kraft.node up") < count:
        assert time.monotonic() < deadline, "stand-in node did not start"
        time.sleep(0.02)


def proc_state(pid: int, want: str, timeout_s: float = 2.0) -> str:
    """The process state letter from /proc, polled until it is in ``want`` or the time is up
    (signals are delivered asynchronously, and a loaded machine may take a moment)."""
    deadline = time.monotonic() + timeout_s
    while True:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0]
        if state in want or time.monotonic() > deadline:
            return state
        time.sleep(0.01)


def test_local_lifecycle(local_db, tmp_path):
    db = local_db()
    db.setup()
    meta = Path(db.paths.data_dir, "meta.properties").read_text()
    assert meta == "cluster.id=CID\nnode.id=1\n"
    assert Path(db.paths.config).read_text() == db.config_text("n1")
    pid = pid_of(db)
    assert _alive(pid) and db.is_running("n1")
    assert db.start("n1") is False and pid_of(db) == pid  # already running: no second process

    assert db.pause("n1") is True
    assert proc_state(pid, "T") == "T"
    assert db.is_running("n1")
    assert db.resume("n1") is True
    assert proc_state(pid, "SR") in "SR"

    assert db.kill("n1") is True
    assert not _alive(pid) and not db.is_running("n1")
    assert db.kill("n1") is False and db.pause("n1") is False and db.resume("n1") is False

    assert db.start("n1") is True
    pid2 = pid_of(db)
    assert pid2 != pid and db.is_running("n1")
    wait_up(db, 2)
    assert db.stop("n1") is True
    assert not _alive(pid2)
    assert "SIGTERM" in Path(db.paths.log).read_text()

    dest = tmp_path / "collected"
    assert db.collect("n1", dest) == {}
    assert (dest / "data/meta.properties").exists()
    assert "kraft.node up" in (dest / "node.log").read_text()
    assert (dest / "node.properties").read_text() == db.config_text("n1")


def test_local_stop_escalates_to_sigkill(local_db):
    db = local_db(FAKE_IGNORE_TERM="1")
    db.setup()
    wait_up(db, 1)
    pid = pid_of(db)
    assert db.stop("n1", timeout_s=0.5) is True
    assert not _alive(pid)
    # SIGTERM came first and was ignored; only then did stop escalate to SIGKILL
    assert "SIGTERM ignored" in Path(db.paths.log).read_text()


def test_local_stop_of_paused_node(local_db):
    db = local_db()
    db.setup()
    pid = pid_of(db)
    wait_up(db, 1)
    db.pause("n1")
    assert db.stop("n1") is True and not _alive(pid)
    assert "SIGTERM" in Path(db.paths.log).read_text()


def test_local_kill_finds_process_without_pidfile(local_db):
    db = local_db()
    db.setup()
    pid = pid_of(db)
    Path(db.paths.pid).write_text("")
    assert not db.is_running("n1")
    assert db.kill("n1") is True
    assert not _alive(pid)


def test_local_setup_detects_crash(local_db):
    db = local_db()
    (Path(db.paths.config).parent.parent.parent / "pkg/kraft/node.py").write_text(
        "raise SystemExit('ConfigError: missing required key node.id')\n")
    with pytest.raises(DBError, match="(?s)exited right after start.*missing required key node.id"):
        db.setup()


def test_segment_bytes_reaches_the_node_config_and_the_log():
    from kraft.runtime.config import parse_config
    db = KraftDB(FakeCluster(3), "CID", seed=3, segment_bytes=4096)
    text = db.config_text("n2")
    assert "log.segment.bytes=4096" in text and parse_config(text).segment_bytes == 4096
    with pytest.raises(ValueError, match="segment_bytes must be an int >= 1"):
        KraftDB(FakeCluster(3), "CID", seed=3, segment_bytes=0)
    assert "log.segment.bytes" not in KraftDB(FakeCluster(3), "CID", seed=3).config_text("n2")
