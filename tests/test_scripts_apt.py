"""scripts/apt.sh: the set-up scripts' apt-get waits for another package manager's lock.

Real apt-get on a private apt state: ``APT_CONFIG`` points every apt directory (the dpkg
admin dir with its ``lock-frontend`` and ``lock``, the lists dir with its ``lock``, the
caches, the sources, the config parts) into tmp_path, so nothing of this machine's apt is
read, locked or changed. A second process holds one of those locks the way apt does (a
POSIX ``fcntl`` write lock on the whole file) for a few seconds.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = REPO / "scripts"
HOLD_S = 3.0

pytestmark = pytest.mark.skipif(shutil.which("apt-get") is None, reason="apt-get is not installed here")

_HOLDER = """
import fcntl, sys, time
f = open(sys.argv[1], "a")
fcntl.lockf(f, fcntl.LOCK_EX)      # apt's own kind of lock: fcntl F_SETLK on the whole file
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


@pytest.fixture
def apt_env(tmp_path) -> dict:
    """The environment of an apt-get whose whole state is under tmp_path (empty status,
    no sources, no config parts, so no hooks)."""
    for d in ("empty", "dpkg", "state/lists", "cache"):
        (tmp_path / d).mkdir(parents=True)
    (tmp_path / "dpkg" / "status").write_text("")
    (tmp_path / "sources.list").write_text("")
    conf = tmp_path / "apt.conf"
    conf.write_text("\n".join(f'{k} "{v}";' for k, v in {
        "Dir::Etc::parts": tmp_path / "empty", "Dir::Etc::main": tmp_path / "none.conf",
        "Dir::Etc::sourcelist": tmp_path / "sources.list", "Dir::Etc::sourceparts": tmp_path / "empty",
        "Dir::State": f"{tmp_path / 'state'}/", "Dir::State::status": tmp_path / "dpkg" / "status",
        "Dir::Cache": f"{tmp_path / 'cache'}/"}.items()) + "\n")
    return {**os.environ, "APT_CONFIG": str(conf), "LC_ALL": "C"}


class Held:
    """A process holding ``path``'s lock for ``seconds`` (started once it holds it)."""

    def __init__(self, path: Path, seconds: float = HOLD_S):
        self.proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(path), str(seconds)],
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "held"
        self.since = time.monotonic()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()


def _apt_get(env: dict, *args: str, wait_s: int | None = None) -> subprocess.CompletedProcess:
    """``apt_get ARGS`` of scripts/apt.sh in a fresh bash, stdout dropped."""
    env = dict(env)
    if wait_s is not None:
        env["KRAFT_CHAOS_APT_LOCK_WAIT_S"] = str(wait_s)
    return subprocess.run(["bash", "-c", f'. "{SCRIPTS / "apt.sh"}"; apt_get "$@" >/dev/null', "apt_get", *args],
                          env=env, capture_output=True, text=True, timeout=60)


def test_plain_apt_get_fails_at_once_on_a_held_lock(apt_env, tmp_path):
    """What the helper is for: apt-get fails while another holds the dpkg frontend lock,
    and DPkg::Lock::Timeout does not cover the lists lock `apt-get update` takes."""
    with Held(tmp_path / "dpkg" / "lock-frontend"):
        r = subprocess.run(["apt-get", "check"], env=apt_env, capture_output=True, text=True)
        assert r.returncode == 100 and "Could not get lock" in r.stderr
    with Held(tmp_path / "state" / "lists" / "lock", seconds=600) as held:
        r = subprocess.run(["apt-get", "-o", "DPkg::Lock::Timeout=30", "update"], env=apt_env,
                           capture_output=True, text=True)
        assert r.returncode == 100 and "Could not get lock" in r.stderr
        assert held.proc.poll() is None            # failed while the lock was still held


@pytest.mark.parametrize("lock, args", [
    ("dpkg/lock-frontend", ["check"]),            # install, remove: the dpkg locks
    ("dpkg/lock", ["check"]),
    ("state/lists/lock", ["update", "-qq"]),      # update: the lists lock, no timeout in apt
], ids=["frontend", "admin", "lists"])
def test_apt_get_waits_for_the_lock_then_succeeds(apt_env, tmp_path, lock, args):
    with Held(tmp_path / lock) as held:
        r = _apt_get(apt_env, *args)
        waited = time.monotonic() - held.since
    assert r.returncode == 0, r.stderr
    assert waited >= HOLD_S - 0.5
    notes = [line for line in r.stderr.splitlines() if line.startswith("apt: waiting")]
    assert len(notes) == 1 and str(tmp_path / lock) in notes[0] and "600 s" in notes[0]


def test_apt_get_gives_up_at_the_deadline(apt_env, tmp_path):
    with Held(tmp_path / "state" / "lists" / "lock", seconds=600) as held:
        r = _apt_get(apt_env, "update", wait_s=1)
        still_held = held.proc.poll() is None
    # it gave up while the lock was still held (the holder keeps it 600 s; apt_get's own
    # timeout is 60 s), not after the holder let go: no assumption on the machine's speed
    assert r.returncode == 100 and still_held
    assert "apt: gave up after 1 s waiting for the package manager's lock" in r.stderr
    assert "E: Could not get lock" in r.stderr             # apt's own message, passed on


def test_apt_get_passes_other_failures_on_at_once(apt_env):
    r = _apt_get(apt_env, "install", "-y", "no-such-package-kraft-chaos")
    assert r.returncode == 100 and "Unable to locate package no-such-package-kraft-chaos" in r.stderr
    assert "apt: waiting" not in r.stderr


def test_a_bad_wait_is_refused(apt_env):
    r = subprocess.run(["bash", "-c", f'. "{SCRIPTS / "apt.sh"}"; echo sourced'],
                       env={**apt_env, "KRAFT_CHAOS_APT_LOCK_WAIT_S": "ten"}, capture_output=True, text=True)
    assert r.returncode == 3 and "sourced" not in r.stdout
    assert "KRAFT_CHAOS_APT_LOCK_WAIT_S must be a whole number of seconds, got 'ten'" in r.stderr


def test_no_child_keeps_the_scripts_stderr(tmp_path):
    """apt-get (and so a daemon a package starts) does not inherit the note's descriptor,
    nor does a command the script starts with it closed (ensure-docker.sh's dockerd)."""
    stub = tmp_path / "bin" / "apt-get"
    stub.parent.mkdir()
    stub.write_text("#!/bin/sh\nexec ls /proc/self/fd\n")
    stub.chmod(0o755)
    r = subprocess.run(["bash", "-c", f'. "{SCRIPTS / "apt.sh"}"; echo "note=$_APT_NOTE_FD"; '
                        'apt_get check; echo daemon; ls /proc/self/fd {_APT_NOTE_FD}>&-'],
                       env={**os.environ, "PATH": f"{stub.parent}:{os.environ['PATH']}"},
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    note, rest = r.stdout.split("\n", 1)
    fd = note.removeprefix("note=")
    apt_fds, daemon_fds = (part.split() for part in rest.split("daemon\n"))
    assert fd.isdigit() and int(fd) > 2 and "0" in apt_fds and "0" in daemon_fds
    assert fd not in apt_fds and fd not in daemon_fds


#: apt-get or dpkg changing the system at a command's start (a message that names the
#: command, "(apt-get install X)" or "run: sudo apt-get install X", does not start one)
_CHANGES = re.compile(r"(?:^|[;&|{]|\bthen|\bdo|\belse)\s*(?:\w+=\S*\s+)*(?:apt-get|apt|dpkg)\s+"
                      r"(?:-\S+\s+)*(?:update|install|upgrade|dist-upgrade|remove|purge|autoremove|-i)\b")


def _code(text: str) -> list[str]:
    """The lines of a shell script without their comments."""
    return [line.split(" #", 1)[0] for line in text.splitlines() if not line.lstrip().startswith("#")]


def test_the_bare_call_pattern():
    for line in ('apt-get install -y -qq "${PKGS[@]}" >/dev/null || die "apt-get install failed"',
                 '    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven >/dev/null',
                 '    apt_install() { apt-get install -y -qq --no-install-recommends "$PKG"; }',
                 '    apt-get update -qq >/dev/null || warn "apt-get update failed"', 'dpkg -i x.deb'):
        assert any(_CHANGES.search(c) for c in _code(line)), line
    for line in ('apt_get install -y -qq "${PKGS[@]}" >/dev/null || die "apt-get install failed"',
                 '# (running `apt-get update` first only when apt does not know them yet)',
                 'die "run: sudo apt-get install ${PKGS[*]}"', 'if ! apt-cache show maven >/dev/null; then'):
        assert not any(_CHANGES.search(c) for c in _code(line)), line


def test_every_script_installs_through_the_helper():
    scripts = sorted(SCRIPTS.glob("*.sh"))
    assert {p.name for p in scripts} >= {"ensure-docker.sh", "ensure-fuse.sh", "ensure-java.sh", "ensure-jdk.sh",
                                         "ensure-maven.sh", "ensure-sshd.sh", "ensure-chromium.sh"}
    for p in scripts:
        if p.name == "apt.sh":
            continue
        text = p.read_text()
        bare = [line for line in _code(text) if _CHANGES.search(line)]
        assert not bare, f"{p.name} runs apt-get without scripts/apt.sh: {bare}"
        if "apt_get " in text:
            assert '. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"' in text, p.name
            daemons = [line for line in _code(text) if re.search(r"\bnohup\b|\bsetsid\b|[^&]&\s*$", line)]
            # a daemon the script leaves running keeps none of its descriptors: it closes the
            # note's, or every inherited one (ensure-docker.sh, tests/test_scripts_docker.py)
            closes_all = "for fd in /proc/self/fd/*" in text
            assert closes_all or all("{_APT_NOTE_FD}>&-" in line for line in daemons), (p.name, daemons)
