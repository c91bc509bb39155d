"""Apache Kafka's own KRaft bugs (``kraft-chaos bugs --db kafka``, harness/catalogue/kafka_bugs.py) on
real clusters: for each entry, its schedule on its affected release shows one of its declared
anomaly kinds, and on its fixed release none of them; and ``bisect`` lands on the release that
fixed KAFKA-15489. Slow (a Kafka run takes 1.5 to 2.5 minutes; 2 to 4 runs per entry) and not
in the default suite: ``make test-slow``. ``kraft-chaos bugs --db kafka`` runs the same with 5
seeds each and prints rates (README, "Apache Kafka's own bugs").
"""
from __future__ import annotations

import os
import shutil

import pytest

from harness.bisect.search import subject
from harness.catalogue.kafka_bugs import KAFKA_CATALOGUE
from harness.catalogue.scoring import run_one
from harness.cli.bisect import run_bisect

pytestmark = [pytest.mark.docker, pytest.mark.kafka, pytest.mark.slow,
              pytest.mark.skipif(shutil.which("mvn") is None, reason="Maven (mvn) resolves Kafka's jars")]

SUBNET = os.environ.get("KRAFT_CHAOS_KAFKA_BUGS_SUBNET", "10.126.0.0/24")


@pytest.mark.parametrize("bug", KAFKA_CATALOGUE, ids=[b.jira for b in KAFKA_CATALOGUE])
def test_the_affected_release_shows_it_and_the_fixed_release_does_not(engine, tmp_path, bug):
    pytest.importorskip("confluent_kafka")
    affected = []
    for seed in (1, 2):          # detected in at least 4 of 5 runs (README): up to two tries
        o = run_one(bug.run_fields(bug.affected), seed, str(tmp_path), kinds=bug.kinds, subnet=SUBNET)
        assert o.error is None, o
        affected.append(o)
        if o.detected:
            break
    assert affected[-1].detected, (bug.jira, bug.affected, [(o.kinds, o.store) for o in affected])
    fixed = run_one(bug.run_fields(bug.fixed), 1, str(tmp_path), kinds=bug.kinds, subnet=SUBNET)
    assert fixed.error is None and not fixed.detected, (bug.jira, bug.fixed, fixed.kinds, fixed.store)


def test_bisect_lands_on_the_release_that_fixed_check_quorum(engine, tmp_path):
    pytest.importorskip("confluent_kafka")
    doc = run_bisect(subject("KAFKA-15489"), ["3.6.2", "3.7.0"], 1, 1, str(tmp_path), subnet=SUBNET,
                     echo=lambda m: None)
    assert (doc["changed_at"], doc["from"], doc["to"]) == ("3.7.0", "invalid", "valid"), doc["results"]
