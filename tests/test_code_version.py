"""The code's git commit (harness.run.code_version) and its place in test.json."""
from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from harness.run import code_version
from harness.run import runner
from harness.run.code_version import code_commit
from harness.config.resolved import resolve
from harness.config.run import RunConfig
from harness.run.runner import prepare_run

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

HASH = re.compile(r"[0-9a-f]{40}")


def git(repo, *args):
    """``git ARGS`` in ``repo`` with a fixed identity and no user/system config; its stdout."""
    env = {"PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(repo),
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    """A git repo with one commit of a tracked file ``a.txt``."""
    r = tmp_path / "repo"
    r.mkdir()
    git(r, "init", "-q")
    (r / "a.txt").write_text("one\n")
    git(r, "add", "a.txt")
    git(r, "-c", "commit.gpgsign=false", "commit", "-q", "-m", "first")
    return r


@needs_git
def test_clean_repo_gives_the_head_hash(repo):
    commit = code_commit(repo)
    assert HASH.fullmatch(commit)
    assert commit == git(repo, "rev-parse", "HEAD")


@needs_git
def test_a_tracked_modification_is_dirty(repo):
    head = git(repo, "rev-parse", "HEAD")
    (repo / "untracked.txt").write_text("new\n")
    assert code_commit(repo) == head            # untracked files do not count
    (repo / "a.txt").write_text("two\n")
    assert code_commit(repo) == head + "-dirty"
    git(repo, "add", "a.txt")                   # staged counts too
    assert code_commit(repo) == head + "-dirty"


@needs_git
def test_outside_a_repo_or_before_the_first_commit_is_none(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    assert code_commit(plain) is None
    assert code_commit(tmp_path / "missing") is None
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    assert code_commit(empty) is None


@needs_git
def test_default_root_inside_another_checkout_is_none(repo, monkeypatch):
    # An installed copy (site-packages in a venv inside some checkout) must not
    # report that checkout's commit.
    sub = repo / "lib" / "site-packages"
    sub.mkdir(parents=True)
    monkeypatch.setattr(code_version, "PROJECT_ROOT", sub)
    assert code_commit() is None
    monkeypatch.setattr(code_version, "PROJECT_ROOT", repo)
    assert code_commit() == git(repo, "rev-parse", "HEAD")


@needs_git
def test_no_git_or_a_hung_git_is_none(repo, monkeypatch):
    monkeypatch.setenv("PATH", str(repo / "no-bin-here"))
    assert code_commit(repo) is None
    monkeypatch.undo()

    def hang(*args, **kwargs):
        raise subprocess.TimeoutExpired(args[0], kwargs.get("timeout"))
    monkeypatch.setattr(code_version.subprocess, "run", hang)
    assert code_commit(repo) is None


def test_prepare_run_records_the_commit_in_test_json(tmp_path, monkeypatch):
    cfg = resolve(RunConfig(seed=7, nodes=3, store=str(tmp_path), time_limit=5))
    data = json.loads((prepare_run(cfg)[1] / "test.json").read_text())
    assert "commit" in data and data["commit"] == code_commit()
    assert data["seed"] == 7 and "--seed 7" in data["command"]

    monkeypatch.setattr(runner, "code_commit", lambda: "ab" * 20 + "-dirty")
    data = json.loads((prepare_run(cfg)[1] / "test.json").read_text())
    assert data["commit"] == "ab" * 20 + "-dirty"
