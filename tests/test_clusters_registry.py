"""The backend factory (clusters/registry.py) and the target x backend table (targets/registry.py):
names, auto's choice, clear errors; no engine or namespaces needed."""
from __future__ import annotations

import dataclasses

import pytest

from clusters.errors import ClusterError
from clusters.registry import CHOICES, Software, check_name, make_cluster, resolve_backend
from harness.cli import main as cli
from targets.registry import TARGETS, UnsupportedBackend, check_supported, node_software


class FakeEngine:
    closed = False

    def close(self):
        self.closed = True


def no_engine(timeout_s):
    raise ClusterError("No Docker engine answers at unix:///nowhere: run `make engine`. Cause: refused")


def test_choices_and_unknown_names():
    assert CHOICES == ("auto", "docker", "netns", "ssh")
    assert check_name("netns") == "netns" and resolve_backend("ssh").name == "ssh"
    with pytest.raises(ValueError, match=r"--cluster 'lxc'.*auto, docker, netns, ssh"):
        check_name("lxc")
    with pytest.raises(ValueError, match="choose from docker, netns, ssh"):
        make_cluster("lxc", 3, "r1", Software(), subnet="10.88.0.0/24")
    with pytest.raises(ValueError, match="resolve --cluster auto"):
        make_cluster("auto", 3, "r1", Software(), subnet="10.88.0.0/24")


def test_auto_picks_docker_when_an_engine_answers_else_netns():
    engine = FakeEngine()
    r = resolve_backend("auto", connect=lambda timeout_s: engine)
    assert (r.name, r.engine) == ("docker", engine) and "answers" in r.why
    r = resolve_backend("auto", connect=no_engine)
    assert (r.name, r.engine) == ("netns", None) and "no Docker engine answers (refused)" == r.why
    assert resolve_backend("netns", connect=no_engine).name == "netns"
    with pytest.raises(ClusterError, match="No Docker engine"):
        resolve_backend("docker", connect=no_engine)


def test_factory_builds_each_backend_by_name():
    from clusters.docker_cluster import DockerCluster
    from clusters.netns_cluster import NetnsCluster
    d = make_cluster("docker", 2, "r1", Software(image="img"), subnet="10.88.0.0/24", engine=object())
    assert isinstance(d, DockerCluster) and d.image == "img" and d.nodes == ["n1", "n2"]
    n = make_cluster("netns", 2, "r1", Software(env={"A": "1"}), subnet="10.88.0.0/24")
    assert isinstance(n, NetnsCluster) and n.ip("n2") == "10.88.0.12" and n.remote.env["A"] == "1"
    with pytest.raises(ValueError, match="node image"):
        make_cluster("docker", 2, "r1", Software(), subnet="10.88.0.0/24", engine=object())


def test_targets_and_backends_meet_in_one_table(monkeypatch):
    for db in ("kraft", "kafka"):
        for backend in ("docker", "netns", "ssh"):
            check_supported(db, backend)
    monkeypatch.setitem(TARGETS, "kafka", dataclasses.replace(TARGETS["kafka"], backends=("docker",)))  # a pair the table leaves out
    with pytest.raises(UnsupportedBackend, match=r"--db kafka cannot run on --cluster netns; it runs on --cluster docker"):
        check_supported("kafka", "netns")
    with pytest.raises(UnsupportedBackend, match=r"auto chose netns: no engine"):
        check_supported("kafka", "netns", "no engine")
    from clusters.registry import Resolved
    from targets.registry import target_spec
    sw = node_software(target_spec("kraft"), Resolved("netns"), None, print)
    assert sw.image is None and sw.env == {"PYTHONPATH": "/opt/kraft"} and sw.min_java is None
    assert sw.files["/opt/kraft/kraft"].joinpath("node", "__main__.py").is_file()     # python3 -m kraft.node


def test_cli_refuses_a_pair_the_table_leaves_out_with_exit_3(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(TARGETS, "kafka", dataclasses.replace(TARGETS["kafka"], backends=("docker",)))
    code = cli.main(["run", "--db", "kafka", "--cluster", "netns", "--store", str(tmp_path), "--seed", "1",
                     "--no-progress", "--time-limit", "1"])
    err = capsys.readouterr().err
    assert code == 3
    assert "--db kafka cannot run on --cluster netns" in err and "Traceback" not in err


def test_cli_bad_backend_is_exit_3(capsys):
    assert cli.main(["run", "--cluster", "lxc"]) == 3
    assert "invalid choice: 'lxc'" in capsys.readouterr().err


def test_repeat_command_names_a_backend_other_than_auto():
    from harness.config.run import RunConfig
    assert "--cluster" not in RunConfig(seed=1).repeat_command()
    assert "--cluster netns" in RunConfig(seed=1, cluster="netns").repeat_command()
