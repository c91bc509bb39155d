"""Unit tests for DockerRemote's command handling that need no engine."""
import pytest

from clusters.docker_remote import DockerRemote, _argv, _with_timeout
from clusters.remote import RemoteError


def test_string_command_runs_under_sh():
    assert _argv("echo hi | wc -c") == ["sh", "-c", "echo hi | wc -c"]


def test_argv_command_is_kept():
    assert _argv(("ls", "-l", "/")) == ["ls", "-l", "/"]


@pytest.mark.parametrize("bad,exc", [("", ValueError), ("  ", ValueError), ([], ValueError),
                                     (["ls", 3], TypeError), (b"ls", TypeError)])
def test_bad_commands_are_rejected(bad, exc):
    with pytest.raises(exc):
        _argv(bad)


def test_timeout_wraps_with_coreutils_timeout():
    assert _with_timeout(["sleep", "5"], 2.5) == ["timeout", "-k", "2", "2.5", "sleep", "5"]
    assert _with_timeout(["sleep", "5"], 0.2)[3] == "1"  # at least one second
    assert _with_timeout(["true"], None) == ["true"]
    with pytest.raises(ValueError, match="timeout_s"):
        _with_timeout(["true"], 0)


def test_unknown_node_is_a_remote_error():
    r = DockerRemote(client=None, containers={"n1": "c1"})
    with pytest.raises(RemoteError, match="unknown node"):
        r.exec("n9", "true")
