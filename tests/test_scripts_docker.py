"""scripts/ensure-docker.sh: the engine it starts inherits none of the caller's descriptors.

A ``flock LOCKFILE make run`` on a machine without a running engine once started dockerd
with the lock's descriptor open: dockerd kept LOCKFILE locked for as long as it ran, and
every later ``flock LOCKFILE`` waited for ever. Here the script runs with a fake
``dockerd`` (a shell script that records the descriptors it was given and then answers
``docker info``) first on PATH, beside fakes of the tools it checks for, while the caller
holds an flock on a file through a descriptor the script inherits.
"""
from __future__ import annotations

import fcntl
import os
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "ensure-docker.sh"

_FAKES = {
    # the engine answers once the fake dockerd has written its marker
    "docker": '#!/bin/sh\n[ "$1" = info ] && [ -e "$FAKE_DIR/up" ]\n',
    # no engine is running yet, whatever runs on this machine
    "pgrep": "#!/bin/sh\nexit 1\n",
    "dockerd": ('#!/bin/bash\nls -l /proc/$$/fd > "$FAKE_DIR/fds.txt" 2>&1\n'
                'touch "$FAKE_DIR/up"\nsleep 30\n'),
    "debootstrap": "#!/bin/sh\nexit 0\n",
    "iptables": "#!/bin/sh\nexit 0\n",
    "ip": "#!/bin/sh\nexit 0\n",
}


@pytest.mark.skipif(os.geteuid() != 0, reason="the script starts an engine only as root")
def test_the_started_engine_holds_no_lock_of_the_caller(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in _FAKES.items():
        p = bin_dir / name
        p.write_text(text)
        p.chmod(0o755)
    lock_path = tmp_path / "cluster.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_DIR": str(tmp_path),
               "KRAFT_CHAOS_DOCKERD_WAIT_S": "20"}
        res = subprocess.run(["bash", str(SCRIPT)], env=env, pass_fds=(lock.fileno(),),
                             capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "starting dockerd" in res.stderr
    fds = (tmp_path / "fds.txt").read_text()
    assert str(lock_path) not in fds, fds
    # the caller let go of the lock: nobody else holds it now
    with open(lock_path, "w") as again:
        deadline = time.monotonic() + 5
        while True:
            try:
                fcntl.flock(again, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                assert time.monotonic() < deadline, "the lock is still held after the caller closed it"
                time.sleep(0.1)
    subprocess.run(["pkill", "-f", f"{bin_dir}/dockerd"], check=False)
