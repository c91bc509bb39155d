"""The power-loss nemesis on a real cluster: the nodes' data dirs on lazyfs, unsynced writes
dropped at every fault. The correct build stays valid; ``--unsafe no-fsync`` loses
acknowledged writes; nothing is left mounted afterwards."""
from __future__ import annotations

import json
import os

import pytest

from clusters.lazyfs.mounts import lazyfs_mounts

pytestmark = [pytest.mark.docker]

SUBNET = os.environ.get("KRAFT_CHAOS_POWER_SUBNET", "10.88.0.0/24")
FAULTS = dict(nemesis=["power-loss"], nemesis_interval=2.0, nemesis_duration=1.5, time_limit=25,
              nodes=3, subnet=SUBNET)


def power_losses(run_dir) -> list[dict]:
    ops = (json.loads(line) for line in (run_dir / "history.jsonl").open())
    return [o["value"] for o in ops if o["f"] == "start-power-loss" and o["type"] != "invoke"]


@pytest.mark.slow      # about 100 s; tests/test_nemesis_power_loss.py and tests/test_lazyfs_*.py test the fault without a run
def test_the_correct_build_survives_power_loss_and_no_fsync_does_not(engine, kraft_chaos_run):
    before = set(lazyfs_mounts())
    results, run_dir = kraft_chaos_run(**FAULTS, seed=2)
    losses = power_losses(run_dir)
    assert losses and all(set(v["lost"]) == set(v["targets"]) for v in losses)
    assert results["valid"] is True, (run_dir, results["anomalies"])
    assert set(lazyfs_mounts()) == before                     # every disk unmounted
    results, run_dir = kraft_chaos_run(**FAULTS, seed=2, unsafe=["no-fsync"])
    assert results["valid"] is False and results["anomalies"]["lost-write"] > 0, run_dir
    assert set(lazyfs_mounts()) == before
