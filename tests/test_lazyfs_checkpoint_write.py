"""Kafka's two ways of replacing a checkpoint, played on a real lazyfs mount, then a power loss:
the power loss's reverted files name the checkpoint exactly when it was renamed into place before
its bytes were fsynced (KAFKA-16541's 3.7.x truncation writes), and checker
``unsynced-checkpoint`` flags it; 3.8.0's write (fsync, rename, fsync of the directory) is never
named. Skipped when FUSE is unavailable (as tests/test_lazyfs_mount.py)."""
from __future__ import annotations

import os

import pytest

from checkers.fold import run_checkers
from checkers.unsynced_checkpoint import UnsyncedCheckpoint
from history import NEMESIS
from kraft.storage.durable import fsync_dir
from nemesis.power_loss import crash_summary
from targets.kafka.server_config import SYNCED_FILES
from tests.test_lazyfs_mount import _fuse_missing, lazy, mnt, write  # noqa: F401 - lazy is a fixture

pytestmark = pytest.mark.skipif(_fuse_missing() is not None, reason=str(_fuse_missing()))

OLD = b"0\n1\n0 0\n"
NEW = b"0\n2\n0 0\n3 41\n"


def _partition(lazy):
    part = mnt(lazy) / "data" / "queue-0"
    part.mkdir(parents=True)
    fsync_dir(part.parent)
    fsync_dir(part.parent.parent)
    ckpt = part / "leader-epoch-checkpoint"
    write(ckpt, OLD, sync="fsync")
    fsync_dir(part)
    return part, ckpt


def _replace(part, ckpt, *, sync: bool) -> None:
    """``CheckpointFile.write``: the entries into ``<name>.tmp``, then a rename over ``<name>``;
    with ``sync`` (3.8.0, and 3.7.x's assign) the tmp file and the directory are fsynced."""
    tmp = part / (ckpt.name + ".tmp")
    write(tmp, NEW, sync="fsync" if sync else None, flags=os.O_CREAT | os.O_WRONLY | os.O_TRUNC)
    os.replace(tmp, ckpt)
    if sync:
        fsync_dir(part)


def _flagged(out: dict) -> list[str]:
    ops = [{"index": 0, "type": "info", "process": NEMESIS, "f": "start-power-loss",
            "value": {"lost": {"n1": crash_summary(out)}}}]
    res = run_checkers(lambda: iter(ops), {"c": UnsyncedCheckpoint(SYNCED_FILES)})["c"]
    return [a["path"] for a in res["anomalies"]]


def test_an_unsynced_replace_comes_back_empty_and_is_flagged(lazy):
    part, ckpt = _partition(lazy)
    _replace(part, ckpt, sync=False)
    out = lazy.crash("n1", torn=False, lost_renames=False)
    assert ckpt.read_bytes() == b""                      # the rename kept, its data dropped
    assert "data/queue-0/leader-epoch-checkpoint" in out["reverted_files"]
    assert _flagged(out) == ["data/queue-0/leader-epoch-checkpoint"]


def test_an_unsynced_replace_whose_rename_is_lost_is_flagged_too(lazy):
    part, ckpt = _partition(lazy)
    _replace(part, ckpt, sync=False)
    out = lazy.crash("n1", torn=False, lost_renames=True)
    assert ckpt.read_bytes() == OLD                      # the old file is back
    assert _flagged(out) == ["data/queue-0/leader-epoch-checkpoint"]


def test_a_synced_replace_survives_and_is_never_flagged(lazy):
    part, ckpt = _partition(lazy)
    _replace(part, ckpt, sync=True)
    segment = part / "00000000000000000000.log"
    write(segment, b"records never fsynced")              # Kafka's segments: no fsync by default
    out = lazy.crash("n1", torn=True, lost_renames=True)
    assert ckpt.read_bytes() == NEW
    assert out["reverted_files"] == ["data/queue-0/00000000000000000000.log"]
    assert _flagged(out) == []
