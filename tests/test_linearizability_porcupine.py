"""Porcupine's labelled histories: the same verdict on every file (issue 3, section 4).

The data is ../shared/data/porcupine (Jepsen etcd logs and kv logs), beside
the repository.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from checkers.linearizability import check_file

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "porcupine"
LINEARIZABLE = {2, 5, 7, 18, 25, 31, 38, 45, 48, 49, 51, 53, 56, 67, 75, 76, 80, 87, 92, 98, 100, 101, 102}
ETCD = [n for n in range(103) if n != 95]  # etcd_095.log is empty (the cluster never started)

pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason=f"porcupine's test data not at {DATA}")


def test_the_corpus_is_what_the_issue_lists():
    logs = sorted(p.name for p in (DATA / "jepsen").glob("etcd_*.log") if p.stat().st_size > 0)
    assert len(logs) == 102
    assert (DATA / "jepsen" / "etcd_095.log").stat().st_size == 0


@pytest.mark.parametrize("n", ETCD)
def test_etcd_log(n):
    r = check_file(DATA / "jepsen" / f"etcd_{n:03d}.log", model="register", fmt="jepsen-log")
    assert r["valid"] is (n in LINEARIZABLE)
    if not r["valid"]:
        # the explanation names an op that cannot be placed and what it needed
        (a,) = r["anomalies"]
        assert a["op"]["desc"] and a["needs"]


@pytest.mark.parametrize("name", ["c01-ok", "c01-bad", "c10-ok", "c10-bad", "c50-ok", "c50-bad"])
def test_kv_log_by_key(name):
    r = check_file(DATA / "kv" / f"{name}.txt", model="kv", fmt="kv-log", partitioned=True)
    assert r["valid"] is name.endswith("-ok")
    assert r["partitions"] > 1  # one per key
    if not r["valid"]:
        assert len(r["illegal_partitions"]) == 1  # stops at the first illegal key


@pytest.mark.parametrize("name", ["c01-ok", "c01-bad", "c10-ok", "c10-bad"])
def test_kv_log_without_partitioning(name):
    r = check_file(DATA / "kv" / f"{name}.txt", model="kv", fmt="kv-log", partitioned=False)
    assert r["valid"] is name.endswith("-ok")
    assert r["partitions"] == 1
