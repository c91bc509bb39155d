"""A short real run of the membership nemesis (KIP-853) on our quorum at kraft.version 1:
voters removed and added back (and wiped voters replaced) under kills, judged valid, with
the membership checker having compared the sampled voter sets with the committed ones."""
from __future__ import annotations

import json

import pytest

from history import read_history

pytestmark = pytest.mark.docker

SUBNET = "10.72.0.0/24"


@pytest.mark.slow      # about 50 s; tests/test_nemesis_membership.py and tests/test_kraft_membership.py test voter changes without a run
def test_membership_run_at_kraft_version_1_is_valid(engine, kraft_chaos_run):
    results, run_dir = kraft_chaos_run(nodes=3, time_limit=40, nemesis=["membership", "kill"], kraft_version=1,
                                       nemesis_interval=3, nemesis_duration=6, nemesis_mode="serial",
                                       concurrency=5, rate=50, subnet=SUBNET, seed=5)
    history = read_history(run_dir / "history.jsonl")
    starts = [op for op in history if op["f"] == "start-membership" and op["type"] == "info"]
    assert starts, "no membership fault ran"
    changes = [c for op in starts for c in (op["value"] or {}).get("changes", [])]
    assert any(c.get("outcome") == "ok" for c in changes), changes
    assert results["valid"] is True, json.dumps(results["anomalies"])
    member = results["checkers"]["membership"]
    assert member["applicable"] is True and member["samples"] > 0 and member["voter_sets"] >= 1
