"""``kraft-chaos scenario disk-loss-timeline`` (harness/catalogue/families.py): its variants, the runs
it makes of them, and its table, with the runs stood in for (the real runs are in
tests/integration/test_disk_loss_timeline.py)."""
from __future__ import annotations

import pytest

from harness.catalogue import families as timeline
from harness.config.resolved import resolve
from harness.config.scenario import load


def test_the_five_variants_are_built_in_and_load():
    vs = {v.letter: v for v in timeline.variants()}
    assert sorted(vs) == list("abcde")
    assert [vs[x].expects_loss for x in "abcde"] == [True, True, False, True, False]
    for v in vs.values():
        doc = load(v.path)
        assert doc["run"]["nodes"] == 3 and doc["steps"][0]["bind"] == ["S1", "S2", "S3"]
        assert any(s.get("nemesis") == "start-wipe" for s in doc["steps"])
    assert load(vs["a"].path)["run"]["unsafe"] == ["no-pre-vote"]
    assert load(vs["b"].path)["run"]["unsafe"] == ["vote-after-failed-prevote"]
    assert (load(vs["d"].path)["run"]["kraft_version"], load(vs["e"].path)["run"]["kraft_version"]) == (0, 1)


def test_kafka_runs_drop_our_switches_and_use_combined_nodes():
    c = {v.letter: v for v in timeline.variants()}["c"]
    cfg = timeline.variant_config(c, "kafka", 4, "/tmp/nowhere")
    assert (cfg.db, cfg.workload, cfg.kafka_topology, cfg.nodes, cfg.seed) == ("kafka", "metadata", "combined", 3, 4)
    assert cfg.unsafe == [] and cfg.fetch_max_records is None and cfg.scenario
    assert timeline.variant_config(c, "kraft", 4, "/tmp/nowhere").fetch_max_records == 1


def test_run_timeline_counts_lost_writes_per_run_and_keeps_going_after_an_error(tmp_path):
    calls = []

    def fake_run(resolved, progress=False):
        cfg = resolved.flat
        calls.append((cfg.seed, tuple(cfg.unsafe)))
        if cfg.seed == 2 and cfg.unsafe:
            raise RuntimeError("cluster fell over")
        lost = 7 if cfg.unsafe else 0
        return ({"valid": not lost, "anomalies": {"lost-write": lost, "divergence": 0}},
                tmp_path / f"run{len(calls)}")

    doc = timeline.run_timeline("kraft", "ac", 2, 1, str(tmp_path), echo=lambda m: None, run=fake_run)
    assert calls == [(1, ("no-pre-vote",)), (2, ("no-pre-vote",)), (1, ()), (2, ())]
    a, c = doc["variants"]
    assert (a["lost_total"], a["runs_with_loss"], a["runs"][1]["verdict"]) == (7, 1, "error")
    assert a["runs"][0]["anomalies"] == {"lost-write": 7} and "cluster fell over" in a["runs"][1]["error"]
    assert (c["lost_total"], c["runs_with_loss"]) == (0, 0)
    assert not timeline.differs(a) and not timeline.differs(c)
    table = timeline.format_table(doc)
    assert "no Pre-Vote" in table and "1/2" in table and "0/2" in table
    path = timeline.write_doc(doc, tmp_path / "out")
    assert path.name == "scenario.json" and '"letter": "a"' in path.read_text()


def test_a_variant_the_target_does_not_run_is_refused():
    with pytest.raises(ValueError, match="variant.s. b of disk-loss-timeline do not run on --db kafka: "
                                         "choose from a, c, d, e"):
        timeline.run_timeline("kafka", "ab", 1, 1, "/tmp/x", run=lambda *a, **k: None)
    with pytest.raises(ValueError, match="unknown scenario family 'nope'"):
        timeline.run_timeline("kraft", "a", 1, 1, "/tmp/x", run=lambda *a, **k: None, family_name="nope")


def test_a_familys_loss_is_the_sum_of_its_loss_checkers():
    results = {"anomalies": {"lost-write": 3, "unseen": 4, "divergence": 9}}
    assert timeline.lost_writes(results) == 3
    assert timeline.lost_writes(results, timeline.family("isr-shrink-loss").loss_checkers) == 4
    assert timeline.lost_writes({"anomalies": {"unseen": "n/a"}}, ("unseen",)) == 0


def test_a_familys_loss_reads_the_old_names_of_stored_runs():
    """A run stored before the queue's kinds had Jepsen's names counts its queue-lost."""
    old = {"anomalies": {"lost-write": 3, "queue-lost": 4, "divergence": 9}}
    assert timeline.lost_writes(old, timeline.family("isr-shrink-loss").loss_checkers) == 4
    assert timeline.lost_writes(old, ("queue-lost",)) == 4


def test_on_kafka_variant_a_runs_its_own_file_on_the_newest_release_without_pre_vote():
    """Part 5 of issue 25: variant a (no Pre-Vote) on the newest 3.9.x, S2 held behind by a
    pause (a Kafka follower catches up in one Fetch); c to e stay on the default 4.x."""
    from targets.kafka.releases import RELEASES, release
    kafka = {v.letter: v for v in timeline.variants(db="kafka")}
    assert kafka["a"].path.name == "disk-loss-timeline-a-kafka.toml" and kafka["a"].expects_loss
    assert {v.letter: v for v in timeline.variants()}["a"].path.name == "disk-loss-timeline-a.toml"
    cfg = timeline.variant_config(kafka["a"], "kafka", 3, "/tmp/nowhere")
    newest_without = [r for r in RELEASES if not r.pre_vote][-1].newest
    assert (cfg.db, cfg.kafka_version, cfg.kraft_version, cfg.workload) == ("kafka", newest_without, 0, "metadata")
    assert not release(cfg.kafka_version).pre_vote and cfg.unsafe == [] and cfg.fetch_max_records is None
    steps = [s.get("nemesis") for s in cfg.scenario]
    assert "start-pause" in steps and "start-wipe" in steps
    resolve(cfg)          # a run the registries and the release accept
    for letter in "cde":
        c = resolve(timeline.variant_config(kafka[letter], "kafka", 3, "/tmp/nowhere")).flat
        assert release(c.kafka_version).pre_vote
