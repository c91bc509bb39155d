"""Helpers for the Spark tests: analyse a store with the Spark path, and normalise both
paths' anomalies so they can be compared."""
from __future__ import annotations

from pathlib import Path

from checkers.spark import analyze as A
from checkers.spark.runs import find_runs
from harness.run.check import run_target


def analyze_store(spark, root: Path) -> tuple[dict[str, dict], A.Analysis]:
    """Run the Spark analysis on ``root``; returns (the per-run dicts by run name, the Analysis)."""
    analysis = A.analyze(spark, find_runs(str(root), run_target), lin_timeout_s=30)
    return {r["name"]: r for r in analysis.runs}, analysis


def spark_keys(analysis, run_id: int) -> dict[str, set]:
    """The identities of the Spark path's anomalies of one run, by checker."""
    def rows(name):
        t = analysis.tables.get(name)
        return [r for r in (t.to_pylist() if t is not None else []) if r["run"] == run_id]
    return {
        "lost-write": {(r["op"], int(r["value"]), r["offset"]) for r in rows("lost-write")},
        "duplicate": {(int(r["value"]), tuple(r["offsets"])) for r in rows("duplicate")},
        "inconsistent-offsets": {r["offset"] for r in rows("inconsistent-offsets")},
        "nonmonotonic-read": {(r["op"], r["high_watermark"]) for r in rows("nonmonotonic-read")}
        | {("malformed", r["op"]) for r in rows("malformed-read")},
        "phantom": {(int(r["value"]), r["reason"]) for r in rows("phantom")},
        "election-safety": {r["epoch"] for r in rows("election-safety")},
    }


def single_keys(checkers: dict) -> dict[str, set]:
    """The same identities from checkers.log_safety.check_all's ``checkers`` results."""
    c = {k: v["anomalies"] for k, v in checkers.items()}
    return {
        "lost-write": {(a["op"], a["value"], a["offset"]) for a in c["lost-write"]},
        "duplicate": {(a["value"], tuple(a["offsets"])) for a in c["duplicate"]},
        "inconsistent-offsets": {a["offset"] for a in c["inconsistent-offsets"]},
        "nonmonotonic-read": {(a["op"], a["high_watermark"]) if a["kind"] == "nonmonotonic"
                              else ("malformed", a["op"]) for a in c["nonmonotonic-read"]},
        "phantom": {(a["value"], a["reason"]) for a in c["phantom"]},
        "election-safety": {a["epoch"] for a in c["election-safety"]},
    }


def sidecar_keys(side: dict) -> dict[str, set]:
    """The identities of the anomalies a synthetic run's sidecar lists."""
    return {
        "lost-write": {(a["op"], a["value"], a["offset"]) for a in side["lost-write"]},
        "duplicate": {(a["value"], tuple(a["offsets"])) for a in side["duplicate"]},
        "inconsistent-offsets": {a["offset"] for a in side["inconsistent-offsets"]},
        "nonmonotonic-read": {(a["op"], a["high_watermark"]) for a in side["nonmonotonic-read"]},
        "phantom": set(),
        "election-safety": set(),
    }
