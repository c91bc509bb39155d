"""The final reads of the quorum's log that end every simulated schedule, which the membership
checker judges voter changes by: made for every workload (by a reader of its own when the
workload's clients make none), their linearizable one tried again when a leader steps down
just after the heal, and kept out of the kv linearizability checker's ops. Each seed here
ended with verdict "unknown" (the membership checker: "membership ops but no final committed
log to judge them by") before."""
from __future__ import annotations

from checkers.fold import CheckContext
from checkers.registry import check_all_folds, is_kv_op
from history.node_data import NodeData
from harness.simulation.judge import judge_history
from sim.api import SimOptions
from sim.schedule import run_schedule
from workloads.registry import workload_spec


def _membership(r, opts: SimOptions) -> dict:
    """The membership checker's result over schedule ``r``'s history, as the judge runs it."""
    config = {"workload": opts.workload_name, "db": "kraft", "kraft_version": opts.kraft_version,
              "unsafe": [], "brokers": opts.brokers, "simulated": True}
    data = {n: NodeData(n, recs, hw) for n, (recs, hw) in r.nodes.items()}
    raw = check_all_folds(lambda: iter(r.ops), workload_spec(opts.workload_name).checkers, data,
                          CheckContext(None, config), statistics=False)
    return raw["checkers"]["membership"]


def _final_reads(r, linearizable: bool) -> list[dict]:
    return [op for op in r.ops if op["f"] == "read" and op["type"] != "invoke" and isinstance(op["value"], dict)
            and op["value"].get("final") and op["value"]["linearizable"] is linearizable]


def test_a_kv_schedule_with_voter_changes_is_judged_by_the_quorum_log():
    """Seed 34 of the swarm: the kv workload at kraft.version 1 with three admin clients."""
    opts = SimOptions(voters=3, kraft_version=1, workload="kv",
                      families=("packet", "kill", "pause", "clock", "membership"),
                      fetch_max_records=1, admin_clients=3, fault_max_ms=12000.0).check()
    r = run_schedule(opts, 34, judge=judge_history, keep=True)
    assert r.ok and r.verdict is True, r.first
    client_ops = [op for op in r.ops if op["process"] != "nemesis" and isinstance(op["process"], int)
                  and op["process"] < 10_000]
    assert not any(isinstance(op["value"], dict) for op in client_ops if op["f"] == "read")  # kv clients: none
    assert [op["type"] for op in _final_reads(r, True)][-1] == "ok"
    m = _membership(r, opts)
    assert m["valid"] is True and m["applicable"] and m["membership_ops"] > 0 and m["voter_sets"] >= 1


def test_the_final_linearizable_read_is_tried_again_when_the_leader_steps_down():
    """Seed 19 of the swarm (queue, kraft.version 1, a wipe): the leader the settling found
    stepped down 0.4 s later (a vote of a higher epoch), refusing the final read; it is tried
    again on the hinted leader, else another node, until one answers."""
    opts = SimOptions(voters=3, brokers=3, kraft_version=1, workload="queue", families=("partition", "packet", "wipe"),
                      read_fraction=0.5, fetch_max_records=100, fault_max_ms=12000.0).check()
    r = run_schedule(opts, 19, judge=judge_history, keep=True)
    assert r.ok and r.verdict is True, r.first
    reads = _final_reads(r, True)
    assert [op["type"] for op in reads][0] == "fail" and reads[-1]["type"] == "ok"
    assert reads[0]["error"] == "NOT_LEADER_OR_FOLLOWER" and reads[-1]["node"] != reads[0]["node"]
    assert _membership(r, opts)["voter_sets"] >= 1


def test_the_kv_linearizability_checker_reads_client_ops_not_the_final_log_reads():
    final = {"index": 3, "type": "ok", "process": 10_000, "f": "read",
             "value": {"from": 0, "linearizable": True, "final": True, "high_watermark": 1, "records": []}}
    read = {"index": 1, "type": "ok", "process": 0, "f": "read", "value": ["k0", 2]}
    assert is_kv_op(read) and is_kv_op({**read, "f": "cas", "value": ["k0", [1, 2]]})
    assert not is_kv_op(final) and not is_kv_op({**read, "process": "nemesis"})
    assert not is_kv_op({**read, "f": "append"})
