"""`--workload kv` through the CLI and the runner, and `check` on hand-made kv stores.

The real linearizability checker judges the hand-made histories; one test
makes it crash to show the run keeps its other verdicts.
"""
from __future__ import annotations

import json

import pytest

from harness.cli import main as cli
from harness.config.resolved import resolve
from harness.config.run import RunConfig
from harness.run import runner
from history import store
from history import HistoryWriter
from kraft.state_machines.kv import cas_command, put_command
from tests.test_cli import write_node_log


def write_kv_store(root, workload="kv", stale=False):
    """A hand-made kv run: a leader sample, writes, reads, a cas and a cas-mismatch, node logs.

    With ``stale``, the read after the write of 3 returns nil (a stale read)."""
    run = store.create_run_dir(root, f"{workload}-none", "20250101T000000.000Z")
    h = HistoryWriter(run / "history.jsonl")
    dq = h.invoke(100, "describe-quorum", None, node="n1")
    h.complete(dq, "ok", {"LeaderId": 1, "LeaderEpoch": 1, "HighWatermark": 1,
                          "CurrentVoters": [], "Observers": []})
    nem = h.invoke("nemesis", "start-kill", {"kind": "one", "targets": ["n3"]})
    h.complete(nem, "info", {"kind": "one", "targets": ["n3"]})
    inv = h.invoke(0, "write", ["k0", 3], node="n1")
    h.complete(inv, "ok", ["k0", 3], offset=1, epoch=1)
    inv = h.invoke(0, "read", ["k0", None], node="n1")
    h.complete(inv, "ok", ["k0", None if stale else 3], applied_offset=2)
    inv = h.invoke(1, "cas", ["k0", [3, 4]], node="n1")
    h.complete(inv, "ok", ["k0", [3, 4]], offset=2, epoch=1)
    inv = h.invoke(1, "cas", ["k0", [3, 1]], node="n1")
    h.complete(inv, "fail", ["k0", [3, 1]], error="cas-mismatch")
    inv = h.invoke(2, "write", ["k1", 0], node="n2")
    h.complete(inv, "fail", ["k1", 0], error="NOT_LEADER_OR_FOLLOWER")
    h.close()
    lc = [0, 1, "LeaderChange", {"LeaderId": 1, "Voters": [1, 2, 3], "GrantingVoters": [1, 2]}]
    records = [lc, [1, 1, "data", put_command("k0", 3)], [2, 1, "data", cas_command("k0", 3, 4)],
               [3, 1, "data", cas_command("k0", 3, 1)]]
    for n in ("n1", "n2", "n3"):
        write_node_log(run / "nodes" / n / "data", records)
        (run / "nodes" / n / "data" / "high-watermark").write_text("4")
    store.write_test_json(run, {"nodes": 3, "workload": workload}, 5, f"kraft-chaos run --workload {workload}")
    return run


def test_check_a_kv_run_checks_linearizability_by_key(tmp_path, capsys):
    run = write_kv_store(tmp_path)
    assert cli.main(["check", str(run)]) == 0
    out = capsys.readouterr().out
    results = json.loads((run / "results.json").read_text())
    assert results["valid"] is True
    lin = results["checkers"]["linearizability"]
    # the kv client ops only: write, read, cas by k0, cas-mismatch and the failed write dropped
    assert lin["valid"] is True and lin["partitions"] == 1 and lin["ops"] == 3
    assert lin["failed_ops_dropped"] == 2
    assert set(results["checkers"]) == {"linearizability", "election-safety", "divergence",
                                        "epoch-regression", "stale-leader", "disruptive-election",
                                        "crashed-node", "liveness"}
    assert results["checkers"]["divergence"]["valid"] is True
    assert results["anomalies"] == {"linearizability": 0, "election-safety": 0, "divergence": 0,
                                    "epoch-regression": 0, "stale-leader": 0, "disruptive-election": 0,
                                    "crashed-node": 0, "liveness": 0}
    stats = results["stats"]
    assert stats["counts"]["cas"] == {"ok": 1, "fail": 1, "info": 0} and stats["cas_mismatches"] == 1
    assert "append_availability" not in stats
    assert "verdict: VALID" in out
    assert "read ok=1 fail=0 info=0; write ok=1 fail=1 info=0; cas ok=1 fail=1 (cas-mismatch 1) info=0" in out
    assert "elections: 1 leader(s) seen, highest epoch 1" in out
    assert not (run / "linearizability.html").exists()


def test_a_stale_read_makes_the_run_invalid(tmp_path, capsys):
    run = write_kv_store(tmp_path, stale=True)
    assert cli.main(["check", str(run)]) == 1
    out = capsys.readouterr().out
    assert "verdict: INVALID" in out and "linearizability: 1" in out
    (a,) = json.loads((run / "results.json").read_text())["checkers"]["linearizability"]["anomalies"]
    assert a["key"] == "k0" and a["op"]["desc"] == "read('k0') -> nil" and a["needs"] == "value = nil"
    assert (run / "linearizability.html").is_file()


def test_a_crashing_checker_leaves_the_verdict_unknown(tmp_path, monkeypatch, capsys):
    import checkers.linearizability

    def check_history(*a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr(checkers.linearizability, "check_history", check_history)
    run = write_kv_store(tmp_path)
    assert cli.main(["check", str(run)]) == 2
    out = capsys.readouterr().out
    assert "checker failed: RuntimeError: boom" in out and "verdict: UNKNOWN" in out


def test_an_append_run_still_gets_the_log_safety_checkers(tmp_path, capsys):
    from tests.test_cli import write_store
    run = write_store(tmp_path)          # test.json without a workload: append
    assert cli.main(["check", str(run)]) == 0
    checkers = json.loads((run / "results.json").read_text())["checkers"]
    assert "lost-write" in checkers and "linearizability" not in checkers


def test_an_unknown_workload_in_test_json_is_bad_input(tmp_path, capsys):
    run = write_kv_store(tmp_path, workload="bank")
    assert cli.main(["check", str(run)]) == 3
    assert "unknown workload 'bank': choose from append, kv" in capsys.readouterr().err


def test_run_accepts_workload_kv(tmp_path, monkeypatch, capsys):
    """--workload kv goes through to the runner (stopped here by a missing engine: exit 4)."""
    from clusters.errors import ClusterError
    import clusters.engine

    def no_engine(*a, **k):
        raise ClusterError("no engine here")

    monkeypatch.setattr(clusters.engine, "connect_engine", no_engine)
    assert cli.build_parser().parse_args(["run", "--workload", "kv"]).workload == "kv"
    code = cli.main(["run", "--workload", "kv", "--cluster", "docker", "--store", str(tmp_path), "--seed", "3",
                     "--no-progress", "--time-limit", "1", "--subnet", "10.81.0.0/24"])
    captured = capsys.readouterr()
    assert code == 4 and "no engine here" in captured.err
    (test_json,) = tmp_path.glob("kv-*/*/test.json")
    test = json.loads(test_json.read_text())
    assert test["config"]["workload"] == "kv" and "--workload kv" in test["command"]


def test_a_run_config_naming_an_unknown_workload_is_refused():
    with pytest.raises(ValueError, match="unknown workload 'bank': choose from append, kv"):
        resolve(RunConfig(seed=1, workload="bank"))


def test_the_runner_builds_the_configured_workload(tmp_path):
    from workloads.append import AppendWorkload
    from workloads.kv import KvWorkload
    from targets.kraft_client import kraft_client
    from workloads.topology import Topology

    topo = Topology(("n1",), {"n1": ("127.0.0.1", 1)}, {"n1": 1}, kraft_client)
    for name, cls in (("kv", KvWorkload), ("append", AppendWorkload)):
        r = runner._Run(resolve(RunConfig(seed=1, workload=name, concurrency=4, rate=20)), tmp_path, False)
        wl = r._make_workload(topo)
        assert isinstance(wl, cls) and (wl.options.concurrency, wl.options.rate) == (4, 20)
