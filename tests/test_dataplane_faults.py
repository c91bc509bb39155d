"""The data plane's faults and detectors: the ``stop`` family (a clean SIGTERM, restarted at the
stop), the power loss's full list of reverted files, the ``unsynced-checkpoint`` checker that
reads it, and the Kafka catalogue's data-plane entries (KAFKA-15332 / KIP-966, KAFKA-16541)
with their scenarios."""
import random

import pytest

from checkers.fold import CheckContext, RunTarget
from checkers.registry import make_checkers, run_checkers
from checkers.unsynced_checkpoint import UnsyncedCheckpoint
from harness.catalogue.kafka_bugs import kafka_bug_named, known_kinds
from harness.config import scenario
from harness.config.schedules import SCHEDULES
from harness.run.check import run_target
from history import NEMESIS
from nemesis.controller import NemesisController
from nemesis.faults import Fault
from nemesis.power_loss import NAMESPACE_KEPT, crash_summary
from nemesis.stop import STOP_WAIT_S
from tests.nemesis_fakes import FakeCluster, FakeDB
from workloads.registry import workload_checkers


class StoppableDB(FakeDB):
    """A FakeDB whose nodes also shut down cleanly; ``stops``: ``(node, timeout_s)``."""

    def __init__(self, nodes):
        super().__init__(nodes)
        self.stops: list[tuple[str, float | None]] = []

    def stop(self, node, timeout_s=None):
        self._call("stop", node)
        self.stops.append((node, timeout_s))
        was = node in self.running
        self.running.discard(node)
        return was


def test_a_stop_is_a_sigterm_with_a_long_wait_and_restarts_at_its_end():
    cluster = FakeCluster(4)
    db = StoppableDB(cluster.nodes)
    ctl = NemesisController(cluster, db, lambda: "n1", random.Random(1))
    v = ctl.start(Fault("stop", "nodes", slot="stop-b", targets=("n3",)))
    assert v["targets"] == ["n3"] and "no_process" not in v
    assert db.stops == [("n3", STOP_WAIT_S)] and ("kill", "n3") not in db.calls
    assert "n3" not in db.running
    v2 = ctl.start(Fault("stop", "nodes", slot="stop-c", targets=("n4",)))    # a second slot overlaps
    assert v2["targets"] == ["n4"] and ctl.active == {"stop-b": ["n3"], "stop-c": ["n4"]}
    assert ctl.stop(Fault("stop", "nodes", slot="stop-c"))["targets"] == ["n4"]
    assert "n4" in db.running and "n3" not in db.running
    db.running.discard("n2")
    assert ctl.start(Fault("stop", "nodes", slot="x", targets=("n2",)))["no_process"] == ["n2"]


def test_a_stop_on_a_db_without_a_clean_stop_is_a_clear_error():
    cluster = FakeCluster(3)
    ctl = NemesisController(cluster, FakeDB(cluster.nodes), lambda: "n1", random.Random(1))
    with pytest.raises(ValueError, match="clean stop"):
        ctl.start(Fault("stop", "one"))


def test_the_power_loss_keeps_every_reverted_file_and_counts_the_namespace_ops_it_cuts():
    files = [f"data/t-{i}/00000000000000000000.log" for i in range(60)]
    undone = [{"op": "rename", "n": i} for i in range(NAMESPACE_KEPT + 5)]
    out = crash_summary({"dropped_bytes": 7, "torn": None, "reverted_files": files, "namespace_undone": undone,
                    "namespace_kept": 0, "undo_errors": [], "seed": 3})
    assert out["reverted_files"] == files
    assert out["namespace_undone"] == undone[:NAMESPACE_KEPT]
    assert out["namespace_undone_count"] == len(undone) and "seed" not in out
    few = crash_summary({"reverted_files": ["a"], "namespace_undone": undone[:2]})
    assert few == {"reverted_files": ["a"], "namespace_undone": undone[:2]}


def _power_loss(index, lost):
    return [{"index": index, "type": "invoke", "process": NEMESIS, "f": "start-power-loss", "value": {}},
            {"index": index + 1, "type": "info", "process": NEMESIS, "f": "start-power-loss",
             "value": {"kind": "nodes", "targets": sorted(lost), "lost": lost}}]


NAMES = ("leader-epoch-checkpoint", "replication-offset-checkpoint")


def test_a_checkpoint_renamed_into_place_unsynced_is_flagged_and_tmp_files_are_not():
    ops = _power_loss(0, {"n3": {"reverted_files": [
        "data/q-0/00000000000000000000.log", "data/q-0/leader-epoch-checkpoint.tmp",
        "data/q-1/leader-epoch-checkpoint", "metadata/__cluster_metadata-0/leader-epoch-checkpoint"]}})
    ops += _power_loss(2, {"n2": {"reverted_files": ["data/q-0/00000000000000000000.log"]}})
    res = run_checkers(lambda: iter(ops), {"c": UnsyncedCheckpoint(NAMES)})["c"]
    assert res["valid"] is False and res["power_losses"] == 2 and res["reverted_files"] == 5
    assert [(a["op"], a["node"], a["path"]) for a in res["anomalies"]] == [
        (1, "n3", "data/q-1/leader-epoch-checkpoint"),
        (1, "n3", "metadata/__cluster_metadata-0/leader-epoch-checkpoint")]
    assert "renamed into place before its data was fsynced" in res["anomalies"][0]["explanation"]


def test_segments_alone_or_no_declared_names_are_valid():
    ops = _power_loss(0, {"n3": {"reverted_files": ["data/q-0/00000000000000000000.log"]}})
    ops += [{"index": 5, "type": "info", "process": NEMESIS, "f": "start-kill", "value": {"lost": "x"}}]
    assert run_checkers(lambda: iter(ops), {"c": UnsyncedCheckpoint(NAMES)})["c"]["valid"] is True
    flagged = _power_loss(0, {"n3": {"reverted_files": ["data/q-1/leader-epoch-checkpoint"]}})
    assert run_checkers(lambda: iter(flagged), {"c": UnsyncedCheckpoint(())})["c"]["valid"] is True


def test_the_checker_reads_its_names_from_the_runs_target():
    kafka, kraft = run_target({"db": "kafka"}), run_target({"db": "kraft"})
    assert "leader-epoch-checkpoint" in kafka.synced_files and kraft.synced_files == ()
    ops = _power_loss(0, {"n3": {"reverted_files": ["data/q-1/leader-epoch-checkpoint"]}})
    checker = make_checkers(["unsynced-checkpoint"], CheckContext(target=kafka))
    assert run_checkers(lambda: iter(ops), checker)["unsynced-checkpoint"]["valid"] is False
    assert make_checkers(["unsynced-checkpoint"], CheckContext(target=RunTarget()))["unsynced-checkpoint"].names == set()
    assert "unsynced-checkpoint" in workload_checkers("queue") and "unsynced-checkpoint" in workload_checkers("metadata")


def _steps(schedule):
    sched = SCHEDULES[schedule]
    return scenario.load(scenario.builtin_scenarios()[sched.scenario])


def test_the_elr_entry_stops_two_followers_cleanly_then_power_loses_the_last_isr_member():
    bug = kafka_bug_named("KAFKA-15332")
    assert bug.affects("4.0.2", 1) and bug.affects("3.9.2", 1) and not bug.affects("4.1.0", 1)
    assert (bug.affected.version, bug.fixed.version) == ("4.0.2", "4.1.0")
    assert "lost-write" in known_kinds("4.0.2", 1) and "lost-write" not in known_kinds("4.1.0", 1)
    assert "unseen" in known_kinds("4.0.2", 1) and "unseen" not in known_kinds("4.1.0", 1)
    doc = _steps(bug.schedule)
    run, steps = doc["run"], doc["steps"]
    assert run["workload"] == "queue" and run["min_insync_replicas"] == 2 and run["acks"] == -1
    assert run["replication_factor"] == run["brokers"] == 3 and run["unclean_leader_election"] is False
    faults = [(s["nemesis"], s["value"]) for s in steps if "nemesis" in s]
    names = [f for f, _v in faults]
    assert names == ["start-stop", "start-stop", "start-power-loss", "stop-power-loss", "stop-stop", "stop-stop"]
    stopped = [v["targets"][0] for f, v in faults[:2]]
    lost = faults[2][1]["targets"]
    brokers = {f"n{i}" for i in range(run["nodes"] + 1, run["nodes"] + run["brokers"] + 1)}
    assert set(stopped) | set(lost) == brokers and len(set(stopped) | set(lost)) == 3   # every broker once
    assert {faults[4][1]["slot"], faults[5][1]["slot"]} == {v["slot"] for _f, v in faults[:2]}
    assert faults[4][1]["slot"] == faults[1][1]["slot"]          # the last stopped restarts first


def test_the_epoch_checkpoint_entry_kills_restarts_then_power_loses_one_broker():
    bug = kafka_bug_named("KAFKA-16541")
    assert [bug.affects(v, 0) for v in ("3.6.2", "3.7.0", "3.7.2", "3.8.0", "3.9.2")] == \
        [False, True, True, False, False]
    assert bug.kinds == ("unsynced-checkpoint",) and bug.fixed.version == "3.8.0"
    doc = _steps(bug.schedule)
    faults = [(s["nemesis"], s["value"]) for s in doc["steps"] if "nemesis" in s]
    assert [f for f, _v in faults] == ["start-kill", "stop-kill", "start-power-loss", "stop-power-loss"]
    assert faults[0][1]["targets"] == faults[2][1]["targets"] and len(faults[2][1]["targets"]) == 1
    assert faults[2][1]["lost_renames"] is False
    at = next(i for i, s in enumerate(doc["steps"]) if s.get("nemesis") == "start-power-loss")
    restart = next(i for i, s in enumerate(doc["steps"]) if s.get("nemesis") == "stop-kill")
    assert sum(s.get("sleep", 0) for s in doc["steps"][restart:at]) >= 20      # its logs loaded


def test_the_broker_power_schedule_hits_one_broker_at_a_time():
    fields = SCHEDULES["kafka-broker-power"].run_config()
    assert fields["nemesis"] == ["power-loss:one"] and fields["nemesis_mode"] == "serial"
    assert fields["nemesis_targets"] == "clients" and fields["nemesis_interval"] >= 20
