"""KraftDB at kraft.version 1 (KIP-853): format with --initial-controllers, directory ids
from the run seed, and controller.quorum.bootstrap.servers instead of static voters."""
import shlex

import pytest

from kraft.__main__ import main as kraft_main
from kraft.runtime.config import parse_config
from kraft.storage.bootstrap import read_bootstrap
from kraft.storage.meta import read_meta
from targets.kraft_db import KraftDB, directory_id
from tests.nemesis_fakes import FakeCluster, FakeRemote


def test_kraft_version_0_is_the_default_and_unchanged():
    db = KraftDB(FakeCluster(3), "CID", seed=5)
    assert db.kraft_version == 0
    props = dict(line.split("=", 1) for line in db.config_text("n1").splitlines())
    assert "controller.quorum.bootstrap.servers" not in props
    assert props["controller.quorum.voters"] == "1@10.77.0.11:9093,2@10.77.0.12:9093,3@10.77.0.13:9093"


def test_kraft_version_1_config_and_format(tmp_path):
    remote = FakeRemote()
    db = KraftDB(FakeCluster(3, remote), "CID", seed=5, kraft_version=1)
    cfg = parse_config(db.config_text("n2"))
    assert cfg.voters == () and cfg.bootstrap_servers == (("10.77.0.11", 9093), ("10.77.0.12", 9093),
                                                          ("10.77.0.13", 9093))
    assert directory_id(5, 2) == directory_id(5, 2) != directory_id(6, 2)
    db.format("n2")
    script = remote.execs("n2")[-1]
    argv = shlex.split(script.split("&& cd / && ", 1)[1])
    assert f"--initial-controllers={db.initial_controllers()}" in argv
    # the same argv formats a real data dir: node 2 gets its directory id from the list
    data = tmp_path / "data"
    assert argv[:3] == ["python3", "-m", "kraft"]
    assert kraft_main([a if a != "/var/lib/kraft/disk/data" else str(data) for a in argv[3:]]) == 0
    assert read_meta(data).directory_id == directory_id(5, 2)
    version, voters = read_bootstrap(data)
    assert version == 1 and [(v.id, v.directory_id) for v in voters.voters] == [
        (i, directory_id(5, i)) for i in (1, 2, 3)]


def test_bad_kraft_version():
    with pytest.raises(ValueError, match="kraft_version"):
        KraftDB(FakeCluster(3), "CID", seed=5, kraft_version=2)
