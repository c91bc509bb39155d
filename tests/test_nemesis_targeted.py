"""Targeted faults aimed with the quorum monitor's view: ``lag``, ``catchup``, ``elect``, ``batch``."""
import random

import pytest

from nemesis.schedule import nemesis_generator
from nemesis.targeted import AIM_TIMEOUT_S, CATCHUP_DELAY_MS, CATCHUP_LEAD_S, elect_fault, lag_fault, targeted_fault
from nemesis.targets import majority_size
from nemesis.worker import parse_op
from tests.nemesis_fakes import drive, grudge_of, make_controller
from workloads.monitor import NodeSeen, QuorumView


def view(n=5, leader="n1", epoch=3, elections=1, log_end=None, t=0.0, seen=None):
    """A QuorumView of ``n`` nodes all following ``leader`` in ``epoch`` (seen at ``t``);
    ``seen``: overrides per node."""
    nodes = [f"n{i}" for i in range(1, n + 1)]
    lid = int(leader[1:]) if leader else -1
    v = QuorumView(leader=leader, epoch=epoch if leader else -1, elections=elections,
                   nodes={x: NodeSeen(epoch, lid, x == leader, t) for x in nodes},
                   log_end=dict(log_end or {}))
    v.nodes.update(seen or {})
    return v


def kinds_and_targets(ops):
    return [(t, op["f"], op["value"].get("targets"), op["value"].get("slot")) for t, op in ops]


# -- elect ---------------------------------------------------------------------

def apply_all(ops, leader="n1"):
    """Apply ``ops`` in order on a controller over a simulated cluster (each must succeed);
    returns (cluster, sim, db, controller)."""
    cluster, sim, db, c = make_controller(leader=leader)
    for _, op in ops:
        phase, fault = parse_op(op)
        (c.start if phase == "start" else c.stop)(fault)
    return cluster, sim, db, c


def check_elect(ops, target, not_before):
    """The elect fault's ops: it kills ``target`` (a node, or a list of them) first, at once
    after ``not_before``; every fault it starts is stopped; applied to a controller,
    everything is healed in the end."""
    targets = target if isinstance(target, list) else [target]
    (t1, first), rest = ops[0], ops[1:]
    assert first == {"f": "start-kill", "value": {"kind": "nodes", "slot": "elect", "targets": targets}}
    assert not_before <= t1 < not_before + 0.1
    assert {"f": "stop-kill", "value": {"kind": "nodes", "slot": "elect"}} in [op for _, op in rest]
    for _, op in rest:
        assert op["value"].get("targets", targets) == targets
    starts = sorted(op["f"][6:] for _, op in ops if op["f"].startswith("start-"))
    assert starts == sorted(op["f"][5:] for _, op in ops if op["f"].startswith("stop-"))
    cluster, sim, db, c = apply_all(ops)
    assert c.active == {} and db.running == set(cluster.nodes)
    assert grudge_of(cluster, sim) == {n: set() for n in cluster.nodes}


def test_elect_kills_the_node_seen_in_a_higher_epoch_without_a_leader():
    def at(t):
        if t < 2:
            return view(t=t)
        return view(t=t, seen={"n4": NodeSeen(4, -1, False, t)})       # n4 stands or has voted
    check_elect(drive(elect_fault(down_s=3), 100, view=at), "n4", 2)


def test_elect_kills_every_node_seen_electing_since_the_candidate_does_not_show():
    def at(t):
        if t < 2:
            return view(t=t)
        return view(t=t, seen={n: NodeSeen(4, -1, False, t) for n in ("n2", "n4", "n5")})
    check_elect(drive(elect_fault(down_s=3), 100, view=at), ["n2", "n4", "n5"], 2)


def test_elect_kills_the_new_leader():
    def at(t):
        return view(t=t) if t < 5 else view(leader="n3", epoch=4, elections=2, t=t)
    check_elect(drive(elect_fault(down_s=1), 100, view=at), "n3", 5)


def test_elect_ignores_what_was_there_before_it_was_asked():
    # a leader elected before the first ask is no new leader; a stale candidate is no candidate
    def at(t):
        stale = NodeSeen(9, -1, False, t - 5)
        return view(leader="n2", elections=7, t=t, seen={"n5": stale})
    assert drive(elect_fault(down_s=1), 100, view=at) == []


def test_elect_gives_up_after_the_aim_timeout_with_no_fault():
    gen = elect_fault(down_s=1)
    ops = drive(gen, 10 * AIM_TIMEOUT_S, view=lambda t: view(t=t))
    assert ops == []
    assert drive(gen, 10 * AIM_TIMEOUT_S, view=lambda t: view(t=t)) == []        # done for good
    assert drive(elect_fault(down_s=1), 10, view=None) == []


# -- lag -----------------------------------------------------------------------

LOG_END = {"n1": 100, "n2": 90, "n3": 100, "n4": 95, "n5": 80}


def expected_victims(leader, laggard, log_end, n):
    fresh = sorted((x for x in log_end if x not in (leader, laggard)), key=lambda x: (-log_end[x], x))
    return ([leader] if leader != laggard else []) + fresh[:n - majority_size(n) - 1]


@pytest.mark.parametrize("seed", range(6))
def test_lag_isolates_a_follower_then_kills_the_leader_and_freshest_but_not_the_laggard(seed):
    ops = drive(lag_fault(random.Random(seed), lag_s=10, down_s=4, n_nodes=5), 100,
                view=lambda t: view(log_end=LOG_END, t=t))
    got = kinds_and_targets(ops)
    assert [g[1] for g in got] == ["start-partition", "stop-partition", "start-kill", "start-partition",
                                   "stop-partition", "stop-kill"]
    assert [g[0] for g in got] == [0.0, 10.0, 10.0, 10.0, 14.0, 14.0]
    assert [g[3] for g in got] == ["lag", "lag", "lag", "lag-split", "lag-split", "lag"]
    (laggard,) = got[0][2]
    assert laggard != "n1"
    victims = got[2][2]
    assert laggard not in victims and len(victims) == 5 - majority_size(5)
    assert victims == expected_victims("n1", laggard, LOG_END, 5)
    assert ops[0][1]["value"]["kind"] == "nodes" == ops[2][1]["value"]["kind"]
    # the up-to-date survivors are cut off from each other, not from the laggard
    fresh = sorted(set(LOG_END) - set(victims) - {laggard})
    assert ops[3][1]["value"]["grudge"] == {s: [o for o in fresh if o != s] for s in fresh}


def test_lag_picks_different_followers_with_different_seeds():
    picked = {drive(lag_fault(random.Random(s), 1, 1, 5), 10, view=view(log_end=LOG_END))[0][1]["value"]
              ["targets"][0] for s in range(20)}
    assert len(picked) > 1 and "n1" not in picked


@pytest.mark.parametrize("n", [3, 7])
def test_lag_kills_at_most_n_minus_majority(n):
    log_end = {f"n{i}": 100 - i for i in range(1, n + 1)}
    ops = drive(lag_fault(random.Random(1), 2, 2, n_nodes=n), 50, view=view(n=n, log_end=log_end))
    laggard, victims = ops[0][1]["value"]["targets"][0], ops[2][1]["value"]["targets"]
    assert victims[0] == "n1" and laggard not in victims
    assert len(victims) == n - majority_size(n)
    assert victims == expected_victims("n1", laggard, log_end, n)


def test_lag_waits_for_a_leader_before_aiming():
    def at(t):
        return view(leader=None, t=t) if t < 3 else view(leader="n2", log_end=LOG_END, t=t)
    ops = drive(lag_fault(random.Random(4), 5, 5, 5), 100, view=at)
    assert 3 <= ops[0][0] < 3.2
    assert ops[0][1]["value"]["targets"] != ["n2"] and ops[2][1]["value"]["targets"][0] == "n2"


def test_lag_without_a_leader_at_kill_time_kills_the_freshest_followers():
    def at(t):
        return view(log_end=LOG_END, t=t) if t < 5 else view(leader=None, log_end=LOG_END, t=t)
    ops = drive(lag_fault(random.Random(0), 5, 5, 5), 100, view=at)
    laggard, victims = ops[0][1]["value"]["targets"][0], ops[2][1]["value"]["targets"]
    fresh = sorted((x for x in LOG_END if x != laggard), key=lambda x: (-LOG_END[x], x))
    assert set(victims) == set(fresh[:2]) and laggard not in victims


def test_lag_ops_applied_by_the_controller():
    ops = drive(lag_fault(random.Random(2), 1, 1, 5), 10, view=view(log_end=LOG_END))
    laggard = ops[0][1]["value"]["targets"][0]
    states = []
    for k in range(1, len(ops) + 1):
        cluster, sim, db, c = apply_all(ops[:k])
        states.append((grudge_of(cluster, sim, "KC-lag"), set(db.running)))
    cut = {n: ({x for x in cluster.nodes if x != laggard} if n == laggard else {laggard})
           for n in cluster.nodes}
    healed = {n: set() for n in cluster.nodes}
    victims = set(ops[2][1]["value"]["targets"])
    fresh = set(cluster.nodes) - victims - {laggard}
    split = {n: (fresh - {n} if n in fresh else set()) for n in cluster.nodes}
    up = set(cluster.nodes)
    assert states == [(cut, up), (healed, up), (healed, up - victims), (healed, up - victims),
                      (healed, up - victims), (healed, up)]
    assert [grudge_of(*apply_all(ops[:k])[:2], "KC-lag-split") for k in (4, 5)] == [split, healed]
    assert c.active == {}


@pytest.mark.parametrize("seed", range(3))
def test_catchup_mutes_the_victims_then_brings_the_laggard_back_slowly_while_they_are_down(seed):
    ops = drive(targeted_fault("catchup", random.Random(seed), 10, 5), 100,
                view=lambda t: view(log_end=LOG_END, t=t))
    got = kinds_and_targets(ops)
    lead = CATCHUP_LEAD_S
    assert [(g[0], g[1], g[3]) for g in got] == [
        (0.0, "start-partition", "lag"), (10.0, "start-partition", "lag-lead"),
        (10.0 + lead, "start-packet", "lag-slow"), (10.0 + lead, "stop-partition", "lag"),
        (10.0 + lead, "start-kill", "lag"), (20.0 + lead, "stop-kill", "lag"),
        (20.0 + lead, "stop-partition", "lag-lead"), (20.0 + lead, "stop-packet", "lag-slow")]
    (laggard,) = got[0][2]
    victims = got[4][2]
    assert victims == expected_victims("n1", laggard, LOG_END, 5) and laggard not in victims
    mute, slow = ops[1][1]["value"], ops[2][1]["value"]
    survivors = sorted(set(LOG_END) - set(victims) - {laggard})
    assert mute["targets"] == victims and mute["grudge"] == {n: victims for n in survivors}
    assert slow["targets"] == [laggard] and "to" not in slow
    assert (slow["kind"], slow["effect"], slow["delay_ms"], slow["jitter_ms"]) == ("nodes", "delay",
                                                                                 CATCHUP_DELAY_MS, 0)


def test_catchup_ops_applied_by_the_controller_leave_nothing_behind():
    ops = drive(targeted_fault("catchup", random.Random(1), 1, 5), 10, view=view(log_end=LOG_END))
    cluster, sim, db, c = apply_all(ops)
    assert c.active == {} and db.running == set(cluster.nodes)
    assert grudge_of(cluster, sim) == {n: set() for n in cluster.nodes}


def test_an_unknown_targeted_fault_is_refused_by_name():
    with pytest.raises(ValueError, match="unknown targeted fault 'nope': choose from lag, catchup"):
        targeted_fault("nope", random.Random(1), 1, 5)


def test_serial_mode_runs_targeted_faults_between_calm_intervals():
    gen = nemesis_generator(["lag", "elect"], random.Random(3), "serial", 2, 4, n_nodes=5)

    def at(t):             # a new leader every 10 s
        k = int(t // 10)
        return view(leader=f"n{k % 5 + 1}", epoch=3 + k, elections=1 + k, log_end=LOG_END, t=t)
    ops = drive(gen, 200, view=at)
    fs = [op["f"] for _, op in ops]
    assert fs.count("start-partition") >= 2 and fs.count("start-kill") >= 4
    assert all(op["value"]["slot"].startswith(("lag", "elect")) for _, op in ops)
    elect_kills = [(t, op) for t, op in ops if op["f"] == "start-kill" and op["value"]["slot"] == "elect"]
    assert elect_kills and all(op["value"]["targets"] == [at(t).leader] for t, op in elect_kills)


# -- batch ---------------------------------------------------------------------

def test_batch_kills_the_leader_while_records_are_past_its_high_watermark():
    from nemesis.targeted import batch_fault

    def at(t):
        v = view(t=t, log_end={"n1": 10, "n2": 10, "n3": 9})
        v.high_watermark = 10 if t < 3 else 8         # from 3 s, two records not yet committed
        return v
    ops = drive(batch_fault(down_s=1), 100, view=at)
    (t1, start), (t2, stop) = ops
    assert start == {"f": "start-kill", "value": {"kind": "nodes", "slot": "batch", "targets": ["n1"]}}
    assert 3 <= t1 < 3.1 and 0.99 <= t2 - t1 < 1.1
    assert stop == {"f": "stop-kill", "value": {"kind": "nodes", "slot": "batch"}}
