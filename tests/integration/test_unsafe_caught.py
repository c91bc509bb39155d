"""The harness catches every catalogued bug: each ``--unsafe`` switch under its schedule.

For each entry of ``harness.catalogue.bugs.CATALOGUE``, one real run (seed
1) of its schedule with its switches on must be judged invalid; the correct
build under the default schedule must be valid. Slow (about a minute a
run, 13 runs) and not in the default suite: ``make test-slow``.
``kraft-chaos bugs`` runs the same with more seeds and prints rates.
"""
from __future__ import annotations

import os

import pytest

from harness.catalogue.bugs import CATALOGUE
from harness.config.schedules import SCHEDULES
from harness.catalogue.detection import anomaly_kinds

pytestmark = [pytest.mark.docker, pytest.mark.slow]

SUBNET = os.environ.get("KRAFT_CHAOS_UNSAFE_SUBNET", "10.79.0.0/24")


def run(kraft_chaos_run, schedule: str, switches=(), seed=1):
    return kraft_chaos_run(**SCHEDULES[schedule].run_config(), seed=seed, subnet=SUBNET,
                           unsafe=list(switches))


@pytest.mark.parametrize("bug", CATALOGUE, ids=[b.name for b in CATALOGUE])
def test_the_bug_is_caught(engine, kraft_chaos_run, bug):
    results, run_dir = run(kraft_chaos_run, bug.schedule, bug.switches)
    assert results["valid"] is False, (bug.name, run_dir, results["anomalies"])
    assert anomaly_kinds(results), run_dir


def test_the_correct_build_under_the_default_schedule_is_valid(engine, kraft_chaos_run):
    results, run_dir = run(kraft_chaos_run, "default")
    assert results["valid"] is True, (run_dir, results["anomalies"])
