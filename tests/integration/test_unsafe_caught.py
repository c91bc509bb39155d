"""The harness catches the bugs that kraft's ``--unsafe`` switches bring back.

Each test runs a real 5-node quorum in Docker with one set of switches from
``kraft/unsafe.py`` turned on, under the fault that exposes it, and asserts
that the checkers judge the run invalid with the anomaly the bug must
produce. Slow (about a minute each) and not in the default suite: run with
``pytest -m slow tests/integration/test_unsafe_caught.py``.

The configurations (seeds included) were found by hand; each was caught
in every repeat tried, and the same configurations without ``--unsafe``
were valid.
"""
from __future__ import annotations

import os

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.slow]

SUBNET = os.environ.get("KRAFT_CHAOS_UNSAFE_SUBNET", "10.79.0.0/24")


def anomaly_counts(results: dict) -> dict[str, int]:
    """The non-zero anomaly counts of a results.json dict, by checker."""
    return {k: n for k, n in results["anomalies"].items() if n}


def assert_lost_writes(results: dict, run_dir) -> None:
    """The run is invalid with lost writes, each really missing from its acked offset."""
    counts = anomaly_counts(results)
    assert results["valid"] is False, (run_dir, counts)
    assert counts.get("lost-write", 0) > 0, (run_dir, counts)
    for a in results["checkers"]["lost-write"]["anomalies"]:
        assert a["found"] is None or a["found"][3] != a["value"]


def test_no_fsync_leader_restart_loses_acked_writes(engine, kraft_chaos_run):
    """no-fsync + leader-restart: a killed leader loses acknowledged records
    it never wrote out, restarts as leader of the same epoch and appends new
    records at those offsets, so the final log misses acknowledged appends and
    replicas hold different records at the same (offset, epoch)."""
    results, run_dir = kraft_chaos_run(
        nodes=5, time_limit=30, nemesis=["kill"], nemesis_interval=2, nemesis_duration=1,
        seed=2, subnet=SUBNET, unsafe=["no-fsync", "leader-restart"])
    # seed 2 loses acknowledged appends; other seeds may show only the
    # split log (same offset and epoch, different records)
    assert_lost_writes(results, run_dir)
    counts = anomaly_counts(results)
    assert counts.get("divergence", 0) + counts.get("inconsistent-offsets", 0) > 0, (run_dir, counts)


def test_no_fsync_crash_loses_acked_writes(engine, kraft_chaos_run):
    """no-fsync alone: records count toward the high watermark while still in
    a process buffer, so crashing a majority (or every node) at once loses
    acknowledged appends; the next leader writes other records at their
    offsets. Process kills of a minority cannot show this (the survivors hold
    the records), hence the ``crash`` fault."""
    results, run_dir = kraft_chaos_run(
        nodes=5, time_limit=30, nemesis=["crash"], nemesis_interval=2, nemesis_duration=1,
        seed=1, subnet=SUBNET, unsafe=["no-fsync"])
    assert_lost_writes(results, run_dir)


def test_no_read_index_gives_stale_reads(engine, kraft_chaos_run):
    """no-read-index: any node answers a "linearizable" read from its own
    high watermark, which lags the leader's (a follower) or is frozen (a
    partitioned leader), so a read misses an append acknowledged before it
    began: a nonmonotonic read. Half the workload's reads go to a random node."""
    results, run_dir = kraft_chaos_run(
        nodes=5, time_limit=30, nemesis=["partition"], nemesis_interval=3, nemesis_duration=8,
        seed=2, subnet=SUBNET, unsafe=["no-read-index"])
    counts = anomaly_counts(results)
    assert results["valid"] is False, (run_dir, counts)
    assert counts.get("nonmonotonic-read", 0) > 0, (run_dir, counts)
    assert set(counts) == {"nonmonotonic-read"}, (run_dir, counts)
