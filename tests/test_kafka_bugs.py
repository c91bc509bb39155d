"""Apache Kafka's bug catalogue (harness/catalogue/kafka_bugs.py) and ``kraft-chaos bugs --db kafka``
(harness/bugs/, harness/cli/bugs.py) with a stand-in for real runs: the table's facts, what each entry runs,
scoring on the declared kinds only, the false alarms, the table and bugs.json.
The real runs are in tests/integration/test_kafka_bugs.py (``-m slow``)."""
from __future__ import annotations

import json

import pytest

from harness.catalogue.kafka_bugs import (KAFKA_CATALOGUE, KAFKA_CLASSES, Side, kafka_bug_named,
                                          known_kinds)
from harness.bugs import report, runs as bug_runs
from harness.cli import bugs as bugs_cli
from harness.cli import main as cli
from harness.config.resolved import resolve
from harness.config.run import RunConfig
from harness.config.schedules import SCHEDULES
from history import store
from targets.kafka.releases import release


def test_the_catalogue_has_five_bugs_in_four_classes_each_runnable_on_both_sides():
    assert len(KAFKA_CATALOGUE) >= 5
    assert len({b.klass for b in KAFKA_CATALOGUE}) >= 4
    assert {b.klass for b in KAFKA_CATALOGUE} <= set(KAFKA_CLASSES)
    assert len({b.jira for b in KAFKA_CATALOGUE}) == len(KAFKA_CATALOGUE)
    for b in KAFKA_CATALOGUE:
        assert b.jira.startswith("KAFKA-") and b.cause and b.kinds
        assert SCHEDULES[b.schedule].db == "kafka"
        for side in (b.affected, b.fixed):
            # the release exists in the table and can run the schedule
            cfg = resolve(RunConfig(seed=1, **b.run_fields(side))).flat
            assert cfg.kafka_version == side.version and cfg.db == "kafka"
        kv_a = resolve(RunConfig(seed=1, **b.run_fields(b.affected))).flat
        kv_f = resolve(RunConfig(seed=1, **b.run_fields(b.fixed))).flat
        # the entry says its affected side has it and its fixed side has not
        assert b.affects(b.affected.version, kv_a.kraft_version), b.jira
        assert not b.affects(b.fixed.version, kv_f.kraft_version), b.jira
        # every release it names is one whose jars resolve here
        patches = {p for r in (release(v) for v in (b.affected.version, b.fixed.version)) for p in r.patches}
        assert {b.affected.version, b.fixed.version} <= patches


def test_affected_ranges_follow_the_fixed_patch_of_each_line():
    snap = kafka_bug_named("KAFKA-15312")                  # fixed on 3.5 and from 3.6.0, never on 3.3/3.4
    assert [snap.affects(v, 0) for v in ("3.3.2", "3.4.1", "3.5.1", "3.5.2", "3.6.0", "4.4.0")] == \
        [True, True, True, False, False, False]
    fence = kafka_bug_named("kafka-15489")                  # names in any case
    assert [fence.affects(v, 0) for v in ("3.3.0", "3.6.2", "3.7.0", "3.9.2")] == [True, True, False, False]
    static = kafka_bug_named("KAFKA-14077")                 # static quorums only, never fixed there
    assert static.affects("4.4.0", 0) and not static.affects("3.9.2", 1) and static.fixed_in == ()
    removed = kafka_bug_named("KAFKA-17030")                # KIP-853 only, from 3.9.0
    assert not removed.affects("3.8.1", 0) and removed.affects("3.9.2", 1) and not removed.affects("4.0.0", 1)
    with pytest.raises(ValueError, match="unknown Kafka bug 'KAFKA-1'"):
        kafka_bug_named("KAFKA-1")


def test_what_a_release_is_known_to_show_comes_from_the_catalogue():
    no_elr = {"lost-write": ["KAFKA-15332"], "unseen": ["KAFKA-15332"], "inconsistent-offsets": ["KAFKA-15332"]}
    assert known_kinds("3.6.2", 0) == {"stale-leader": ["KAFKA-15489"], "disruptive-election": ["KAFKA-16164"],
                                       **no_elr, "lost-write": ["KAFKA-14077", "KAFKA-15332"]}
    assert known_kinds("3.9.2", 1) == {"disruptive-election": ["KAFKA-16164", "KAFKA-17030"], **no_elr}
    assert known_kinds("4.0.2", 1) == no_elr and known_kinds("4.1.0", 1) == {}


def test_what_a_run_is_known_to_show_depends_on_its_workload_where_two_checkers_share_a_name():
    """The metadata workload's lost-write (KAFKA-14077) and the queue's (KAFKA-15332) are one
    name from two checkers; a quorum checker's kind is the same whatever the workload."""
    assert known_kinds("3.6.2", 0, "metadata")["lost-write"] == ["KAFKA-14077"]
    queue = known_kinds("3.6.2", 0, "queue")
    assert queue["lost-write"] == queue["unseen"] == ["KAFKA-15332"]
    assert queue["disruptive-election"] == known_kinds("3.6.2", 0, "metadata")["disruptive-election"] == ["KAFKA-16164"]
    assert "lost-write" not in known_kinds("3.6.2", 0, "txn")        # Jepsen's checker's own lost-write
    assert known_kinds("3.7.2", 0)["unsynced-checkpoint"] == ["KAFKA-16541"]
    assert known_kinds("4.4.0", 1) == {}
    assert "crashed-node" in known_kinds("3.5.1", 0) and "crashed-node" not in known_kinds("3.5.2", 0)


def test_kafka_15653_is_3_6_0_alone_judged_by_server_error_under_a_fault_free_schedule():
    from checkers.kafka_txn import KINDS
    bug = kafka_bug_named("KAFKA-15653")
    assert (bug.klass, bug.kinds, bug.schedule) == ("transactions", ("server-error",), "kafka-txn-none")
    assert (bug.affected, bug.fixed, bug.fixed_in) == (Side("3.6.0", 0), Side("3.6.1", 0), ("3.6.1",))
    assert [bug.affects(v, 0) for v in ("3.5.2", "3.6.0", "3.6.1", "3.6.2", "3.7.0", "4.4.0")] == \
        [False, True, False, False, False, False]
    assert set(bug.kinds) <= set(KINDS)                 # a kind the txn checker reports
    assert known_kinds("3.6.0", 0)["server-error"] == ["KAFKA-15653"] and "server-error" not in known_kinds("3.6.1", 0)
    cfg = resolve(RunConfig(seed=1, **bug.run_fields(bug.affected))).flat
    # no fault at all; compressed, padded values; many transactional producers
    assert cfg.nemesis == [] and cfg.scenario is None and cfg.workload == "txn"
    assert (cfg.compression, cfg.value_bytes) == ("lz4", 1024) and cfg.concurrency >= 10 and cfg.partitions >= 4
    assert cfg.kafka_version == "3.6.0" and resolve(RunConfig(seed=1, **bug.run_fields(bug.fixed))).flat.kafka_version \
        == "3.6.1"


def fake_run(tmp_path, anomalies_by_version: dict[str, dict[str, int]], seen: list):
    """A run_test stand-in: a stored run whose history has ops at 1 s and 3.5 s; its
    anomalies are ``anomalies_by_version[cfg.kafka_version]``, each naming the op at 3.5 s."""
    def run(resolved, progress=False):
        cfg = resolved.flat
        seen.append((cfg.kafka_version, cfg.kraft_version, cfg.seed, cfg.db))
        run_dir = store.create_run_dir(tmp_path, "fake", f"s{len(seen)}")
        (run_dir / "history.jsonl").write_text(
            '{"index":0,"time":1000000000,"type":"invoke","process":0,"f":"append","value":1}\n'
            '{"index":1,"time":3500000000,"type":"ok","process":0,"f":"append","value":{"value":1}}\n')
        found = anomalies_by_version.get(cfg.kafka_version, {})
        results = {"valid": not found, "anomalies": dict(found),
                   "checkers": {k: {"anomalies": [{"op": 1}]} for k in found}}
        return results, run_dir
    return run


def test_runs_are_scored_on_the_declared_kinds_only(tmp_path):
    """KAFKA-15489's fixed release shows disruptive-election (3.7 has no Pre-Vote): reported,
    but not a false alarm; its affected release's stale-leader is a detection."""
    seen: list = []
    run = fake_run(tmp_path, {"3.6.2": {"stale-leader": 2, "disruptive-election": 1},
                              "3.7.0": {"disruptive-election": 3}}, seen)
    doc = bug_runs.run_kafka_bugs([kafka_bug_named("KAFKA-15489")], runs=2, fixed_runs=2, seed=5,
                              root=str(tmp_path), budget_s=150, echo=lambda m: None, run=run)
    assert seen == [("3.6.2", 0, 5, "kafka"), ("3.6.2", 0, 6, "kafka"), ("3.7.0", 0, 5, "kafka"),
                    ("3.7.0", 0, 6, "kafka")]
    (b,) = doc["bugs"]
    a, f = b["affected"], b["fixed"]
    assert (a["detected"], a["runs"], a["median_detect_s"]) == (2, 2, 2.5)
    assert a["kinds"] == {"stale-leader": 2, "disruptive-election": 2}
    assert (f["detected"], f["false_alarms"], f["all_kinds"]) == (0, 0, {"disruptive-election": 2})
    assert all(o["valid"] is False and not o["detected"] for o in f["outcomes"])
    assert b["kinds_declared"] == ["stale-leader"] and b["command"].startswith("kraft-chaos bugs --db kafka --only KAFKA-15489")
    table = report.format_table(doc)
    assert "KAFKA-15489" in table and "3.6.2 kv0" in table and "2/2" in table and "0/2" in table
    assert "false alarms (fixed releases showing a declared kind): 0/2" in table
    (row,) = report.kafka_markdown_rows(doc)
    assert row.startswith("| KAFKA-15489 | leader fencing and check quorum |")
    assert "| 3.6.2 (kraft.version 0) | 3.7.0 (kraft.version 0) | `kafka-fence` | stale-leader | 2/2 | 2.5 | 0/2 |" in row
    assert report.KAFKA_MARKDOWN_HEADER.splitlines()[0].count("|") == row.count("|")      # one cell per column
    report.write_chart(doc, tmp_path / "bugs.png")
    assert (tmp_path / "bugs.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_fixed_release_that_shows_the_declared_kind_is_a_false_alarm(tmp_path):
    run = fake_run(tmp_path, {"3.5.1": {"crashed-node": 1}, "3.5.2": {"crashed-node": 1}}, [])
    doc = bug_runs.run_kafka_bugs([kafka_bug_named("KAFKA-15312")], runs=1, fixed_runs=1, seed=1,
                              root=str(tmp_path), budget_s=150, echo=lambda m: None, run=run)
    assert doc["bugs"][0]["fixed"]["false_alarms"] == 1
    assert "<- false alarms" in report.format_table(doc)


def test_the_time_to_detect_is_the_first_op_of_a_declared_kind(tmp_path):
    """A run whose only anomaly is undeclared has no time to detect."""
    from harness.catalogue.scoring import run_one
    run = fake_run(tmp_path, {"3.7.0": {"disruptive-election": 1}}, [])
    fields = kafka_bug_named("KAFKA-15489").run_fields(Side("3.7.0", 0))
    o = run_one(fields, 1, str(tmp_path), kinds=("stale-leader",), run=run)
    assert o.valid is False and o.kinds == ["disruptive-election"] and not o.detected and o.detect_s is None
    o = run_one(fields, 1, str(tmp_path), kinds=("disruptive-election",), run=run)
    assert o.detected and o.detect_s == 2.5


def test_each_run_holds_the_lock_file_and_no_longer(tmp_path):
    import fcntl
    lock = tmp_path / "cluster.lock"
    held = []

    def run(cfg, progress=False):
        with open(lock) as fh:       # a second holder cannot take it while the run goes on
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held.append(False)
            except BlockingIOError:
                held.append(True)
        return fake_run(tmp_path, {}, [])(cfg)

    bug_runs.run_kafka_bugs([kafka_bug_named("KAFKA-16164")], runs=1, fixed_runs=1, seed=1, root=str(tmp_path),
                        budget_s=150, echo=lambda m: None, run=run, lock=str(lock))
    assert held == [True, True]
    with open(lock) as fh:           # free between and after the runs
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_cli_kafka_catalogue_writes_bugs_json_and_refuses_kraft_only_options(tmp_path, monkeypatch, capsys):
    assert cli.main(["bugs", "--db", "kafka", "--only", "no-fsync"]) == 3
    assert "unknown Kafka bug 'no-fsync'" in capsys.readouterr().err
    assert cli.main(["bugs", "--db", "kafka", "--schedule", "default"]) == 3
    seen = {}

    def fake(bugs_, runs, fixed_runs, *a, **k):
        seen.update(names=[b.jira for b in bugs_], runs=runs, fixed_runs=fixed_runs, lock=k["lock"])
        return {"db": "kafka", "runs_per_bug": runs, "bugs": [
            {"name": "KAFKA-15489", "jira": "KAFKA-15489", "class": "c", "schedule": "kafka-fence",
             "kinds_declared": ["stale-leader"],
             "affected": {"version": "3.6.2", "kraft_version": 0, "runs": 1, "detected": 1, "median_detect_s": 9.0,
                          "all_kinds": {"stale-leader": 1}, "errors": 0},
             "fixed": {"version": "3.7.0", "kraft_version": 0, "runs": 1, "detected": 0, "false_alarms": 0,
                       "median_detect_s": None, "all_kinds": {}, "errors": 0}}]}
    monkeypatch.setattr(bugs_cli, "run_kafka_bugs", fake)
    assert cli.main(["bugs", "--db", "kafka", "--only", "KAFKA-15489", "--runs", "1", "--lock", "/tmp/l",
                     "--out", str(tmp_path / "o")]) == 0
    assert seen == {"names": ["KAFKA-15489"], "runs": 1, "fixed_runs": 1, "lock": "/tmp/l"}
    doc = json.loads((tmp_path / "o" / "bugs.json").read_text())
    assert doc["db"] == "kafka" and (tmp_path / "o" / "bugs.png").is_file()


def test_the_kafka_default_schedule_is_make_run_db_kafkas():
    """``kafka-default`` (what ``hunt`` and users run against any release) is the Makefile's
    ``make run DB=kafka``: the same nemeses, mode, timing, workload and length."""
    import re
    import shlex
    from pathlib import Path
    text = (Path(__file__).resolve().parents[1] / "Makefile").read_text()
    args = shlex.split(re.search(r"KAFKA_RUN_ARGS := (.*?)\n(?!\t)", text, re.S).group(1).replace("\\\n", " "))
    flags = dict(zip(args[::2], args[1::2]))
    fields = SCHEDULES["kafka-default"].run_config()
    assert fields["db"] == flags["--db"] == "kafka" and fields["workload"] == flags["--workload"]
    assert ",".join(fields["nemesis"]) == flags["--nemesis"] and fields["nemesis_mode"] == flags["--nemesis-mode"]
    assert (fields["time_limit"], fields["nemesis_interval"], fields["nemesis_duration"]) == \
        (float(flags["--time-limit"]), float(flags["--nemesis-interval"]), float(flags["--nemesis-duration"]))


def test_every_kafka_schedule_runs_on_kafka_and_fits_the_budget():
    kafka = {n: s for n, s in SCHEDULES.items() if s.db == "kafka"}
    assert {"kafka-default", "kafka-fence", "kafka-rejoin", "kafka-power"} <= set(kafka)
    for name, sched in kafka.items():
        cfg = resolve(RunConfig(seed=1, **sched.run_config())).flat
        # the quorum's schedules run the metadata workload, the data plane's the queue or txn workload
        assert cfg.db == "kafka" and cfg.workload in ("metadata", "queue", "txn"), name
        assert sched.time_limit + bug_runs.OVERHEAD_S <= bug_runs.DEFAULT_BUDGET_S, name
    assert all(s.db == "kraft" for n, s in SCHEDULES.items() if not n.startswith("kafka-"))


def test_no_kafka_schedule_makes_metadata_segments_smaller_than_a_fetch():
    """A Kafka follower appends a whole Fetch response (up to KafkaRaftClient's 8 MiB) at once and
    Kafka refuses an append larger than ``metadata.log.segment.bytes``: kafka-power once set 16 KiB
    segments, and every release's controllers died of RecordBatchTooLargeException while catching
    up after a power loss, a crash the catalogue counted for KAFKA-15312. Cleaning to the latest
    snapshot needs rolled segments: kafka-power rolls them by time."""
    from harness.config.schedules import KRAFT_MAX_FETCH_BYTES
    for name, sched in SCHEDULES.items():
        props = dict(sched.run_config().get("kafka_props") or {})
        for key in ("metadata.log.segment.bytes", "metadata.log.segment.min.bytes"):
            assert int(props.get(key, KRAFT_MAX_FETCH_BYTES)) >= KRAFT_MAX_FETCH_BYTES, (name, key)
    power = dict(SCHEDULES["kafka-power"].run_config()["kafka_props"])
    assert int(power["metadata.log.segment.ms"]) <= 5000 and power["metadata.max.retention.bytes"] == "1"
    assert int(power["metadata.log.max.snapshot.interval.ms"]) <= 5000


def test_kafka_snapshot_power_loses_a_followers_power_after_its_first_cleaning_keeping_renames():
    """KAFKA-15312 needs a restart that must load a snapshot whose data was never fsynced: the
    log cleaned up to that snapshot (Kafka's cleaner first runs 60 s into a controller's life),
    then a power loss that keeps the rename and the deleted segments (directory operations) and
    drops the unsynced file data. kafka-power's coin-flipped lost renames and 20 s spacing
    never did both on a cleaned node (0/1 on 3.5.1)."""
    from harness.config import scenario
    sched = SCHEDULES["kafka-snapshot-power"]
    doc = scenario.load(scenario.builtin_scenarios()[sched.scenario])
    steps = doc["steps"]
    at = next(i for i, s in enumerate(steps) if s.get("nemesis") == "start-power-loss")
    assert sum(s.get("sleep", 0) for s in steps[:at]) >= 60 + 5
    value = steps[at]["value"]
    assert value["torn"] is False and value["lost_renames"] is False
    assert value["kind"] == "nodes" and value["targets"] == ["S2"]
    assert any(s.get("nemesis") == "stop-power-loss" for s in steps[at:])
    props = dict(sched.run_config()["kafka_props"])
    assert props["metadata.max.retention.bytes"] == "1" and int(props["metadata.log.segment.ms"]) <= 5000
    assert kafka_bug_named("KAFKA-15312").schedule == "kafka-snapshot-power"
