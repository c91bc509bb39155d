"""The wipe of a disk (``targets.base.DB.wipe`` on KraftDB): a real one-voter kraft node on
this machine, its data deleted and formatted again while it runs and while it is down."""
from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
import time
from pathlib import Path

import pytest

from kraft.wire.client import KraftClient, ClientError
from targets.kraft_db import KraftDB, NodePaths
from tests.test_db import LocalCluster, LocalRemote

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def append_some(port: int, n: int) -> list[int]:
    c = KraftClient("127.0.0.1", port, "CID", timeout_ms=2000)
    offsets = []
    try:
        deadline = time.monotonic() + 20
        while len(offsets) < n:
            try:
                offsets.append((await c.append(len(offsets)))[0])
            except ClientError:
                assert time.monotonic() < deadline, "the one-voter node never took an append"
                await asyncio.sleep(0.1)
    finally:
        await c.close()
    return offsets


@pytest.fixture
def real_db(tmp_path):
    root = tmp_path / "root"
    paths = NodePaths(config=str(root / "etc/node.properties"), data_dir=str(root / "lib/data"),
                      log=str(root / "lib/node.log"), pid=str(root / "lib/node.pid"), python=sys.executable)
    db = KraftDB(LocalCluster(LocalRemote(REPO)), "CID", seed=3, port=free_port(), paths=paths,
                 startup_check_s=0.3)
    yield db
    pid = Path(paths.pid)
    if pid.exists() and pid.read_text().strip():
        try:
            os.kill(int(pid.read_text()), signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_wipe_of_a_running_and_of_a_down_node(real_db):
    db = real_db
    db.setup()
    before = db.disk_state("n1")
    offsets = asyncio.run(append_some(db.port, 5))
    log_size = Path(db.paths.log).stat().st_size
    wiped = db.wipe("n1")
    assert wiped["down"] is False and not db.is_running("n1")
    assert wiped["old_directory_id"] == before["directory_id"]
    assert wiped["new_directory_id"] not in (None, before["directory_id"])
    assert wiped["last_offset"] >= offsets[-1]
    assert db.disk_state("n1") == {"directory_id": wiped["new_directory_id"], "last_offset": None}
    assert log_size > 0 and Path(db.paths.log).stat().st_size >= log_size      # the node's log is kept
    again = db.wipe("n1")                       # a node that is down is wiped all the same
    assert again["down"] is True and again["old_directory_id"] == wiped["new_directory_id"]
    assert again["last_offset"] is None
    assert db.start("n1") is True
    assert asyncio.run(append_some(db.port, 1))[0] >= 0     # the new disk serves again
