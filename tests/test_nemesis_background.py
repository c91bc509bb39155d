"""Background faults: flapping partitions and rolling restarts run in a thread until stopped."""
import random
import time

import pytest

from clusters.remote import ExecResult
from nemesis.background import RollingRestart
from nemesis.faults import Fault
from nemesis.partition import heal_command
from tests.nemesis_fakes import FakeDB, grudge_of, make_controller

NONE = {f"n{i}": set() for i in range(1, 6)}


def wait_until(cond, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, "background fault made no progress"
        time.sleep(0.005)


def flap_cmds(cluster, node):
    """``"cut"`` / ``"heal"`` for each flap-slot command sent to ``node``, in order."""
    out = []
    for cmd in cluster.remote.execs(node):
        if "-A KC-flap" in cmd:
            out.append("cut")
        elif cmd == heal_command("flap"):
            out.append("heal")
    return out


def test_flap_cuts_and_heals_repeatedly_then_stop_heals():
    cluster, sim, db, c = make_controller(seed=3)
    value = c.start(Fault("flap", "isolate-one", params={"period_ms": 2}))
    assert value == {"kind": "isolate-one", "targets": cluster.nodes, "period_ms": 2}
    assert c.active == {"flap": cluster.nodes}
    wait_until(lambda: flap_cmds(cluster, "n1").count("cut") >= 6)
    out = c.stop(Fault("flap", "isolate-one"))
    assert out["cuts"] >= 6 and out["targets"] == cluster.nodes and "errors" not in out
    assert grudge_of(cluster, sim) == NONE and c.active == {}
    for n in cluster.nodes:           # isolate-one gives every node a rule: cut, heal, cut, heal, ...
        seq = flap_cmds(cluster, n)
        assert seq.count("cut") == out["cuts"] and seq[-1] == "heal"
        cuts = [i for i, x in enumerate(seq) if x == "cut"]
        assert all(seq[i + 1] == "heal" for i in cuts)
    # a fresh grudge each cut: the isolated node changes
    rules = {n: [cmd.count("-A KC-flap") for cmd in cluster.remote.execs(n) if "-A KC-flap" in cmd]
             for n in cluster.nodes}
    isolated = [[n for n in cluster.nodes if rules[n][k] == 4] for k in range(out["cuts"])]
    assert all(len(i) == 1 for i in isolated) and len({i[0] for i in isolated}) > 1
    calls = len(cluster.remote.calls)
    time.sleep(0.02)
    assert len(cluster.remote.calls) == calls, "the flapper kept running after stop"


def test_flap_on_explicit_nodes_cuts_that_group_each_time():
    cluster, sim, db, c = make_controller()
    c.start(Fault("flap", "nodes", targets=("n2",), params={"period_ms": 1}))
    wait_until(lambda: flap_cmds(cluster, "n2").count("cut") >= 3)
    c.stop(Fault("flap", "nodes"))
    cuts = [cmd for cmd in cluster.remote.execs("n2") if "-A KC-flap" in cmd]
    others = {cluster.ip(n) for n in cluster.nodes if n != "n2"}
    assert all({w for w in cmd.split() if w.startswith("10.77.")} == others for cmd in cuts)
    with pytest.raises(ValueError, match="explicit targets"):
        c.start(Fault("flap", "nodes", targets=("n7",)))
    assert c.active == {}


def test_flap_errors_are_reported_by_stop():
    cluster, sim, db, c = make_controller()
    play = cluster.remote.handler
    cluster.remote.handler = lambda node, cmd: (ExecResult(1, "", "iptables: locked")
                                                if node == "n3" and "-A KC-flap" in cmd else play(node, cmd))
    c.start(Fault("flap", "isolate-leader", params={"period_ms": 1}))
    out = c.stop(Fault("flap", "isolate-leader"))
    assert out["cuts"] == 0 and len(out["errors"]) == 1 and "n3" in out["errors"][0]
    assert grudge_of(cluster, sim) == NONE


def test_heal_all_stops_a_flap_and_flushes():
    cluster, sim, db, c = make_controller()
    c.start(Fault("flap", "random-halves", params={"period_ms": 1}))
    wait_until(lambda: flap_cmds(cluster, "n1").count("cut") + flap_cmds(cluster, "n5").count("cut") >= 3)
    assert c.heal_all()["errors"] == {}
    assert grudge_of(cluster, sim) == NONE and c.active == {}
    calls = len(cluster.remote.calls)
    time.sleep(0.02)
    assert len(cluster.remote.calls) == calls


def kills_and_starts(db, nodes):
    return [(m, n) for m, n in db.calls if m in ("kill", "start") and n in nodes]


def test_rolling_restarts_one_node_at_a_time_and_stop_leaves_all_running():
    cluster, sim, db, c = make_controller(seed=8)
    value = c.start(Fault("rolling", "kill", params={"gap_s": 0.001}))
    assert value == {"kind": "kill", "targets": cluster.nodes, "gap_s": 0.001}
    wait_until(lambda: sum(1 for m, _ in db.calls if m == "kill") >= 7)
    out = c.stop(Fault("rolling", "kill"))
    assert out["targets"] == cluster.nodes and "errors" not in out
    assert db.running == set(cluster.nodes) and c.active == {}
    calls = kills_and_starts(db, cluster.nodes)
    kills = [i for i, (m, _) in enumerate(calls) if m == "kill"]
    for i in kills:                       # each kill is followed at once by that node's start
        assert calls[i + 1] == ("start", calls[i][1])
    order = [calls[i][1] for i in kills]
    assert sorted(order[:5]) == cluster.nodes             # a round takes every node once
    assert sorted(order[5:10]) == sorted(set(order[5:10]))
    n = len(db.calls)
    time.sleep(0.02)
    assert len(db.calls) == n, "the rolling restart kept running after stop"


def test_rolling_on_explicit_nodes_touches_only_them():
    cluster, sim, db, c = make_controller()
    value = c.start(Fault("rolling", "nodes", targets=("n4", "n2"), params={"gap_s": 0.001}))
    assert value["targets"] == ["n2", "n4"]
    wait_until(lambda: sum(1 for m, _ in db.calls if m == "kill") >= 4)
    c.stop(Fault("rolling", "nodes"))
    assert {n for m, n in db.calls if m == "kill"} == {"n2", "n4"}
    assert db.running == set(cluster.nodes)
    with pytest.raises(ValueError, match="explicit targets"):
        c.start(Fault("rolling", "nodes", targets=("n0",)))


def test_rolling_restart_alone_finishes_with_every_node_started():
    db = FakeDB(["a", "b", "c"])
    r = RollingRestart(db, ["a", "b", "c"], 0.001, random.Random(1))
    r.start()
    wait_until(lambda: len(r.restarted) >= 4)
    db.running.discard("b")           # as if b had crashed on its own meanwhile
    r.stop()
    assert db.running == {"a", "b", "c"} and r.errors == []
    assert set(r.restarted[:3]) == {"a", "b", "c"}
