"""Faults that need a leader wait for one, within a bound (nemesis/leader_wait.py): the
controller's blocking wait on a fake clock, the membership and wipe faults that skip with the
reason when none comes, and the schedule's wait on the monitor's view (nemesis/windows.py)."""
import asyncio
import random
import types

import pytest

from generator import Interpreter, nemesis
from nemesis.faults import Fault
from nemesis.leader_wait import (SETTLE_S, LeaderGate, Waited, await_leader, leader_voter_state,
                                 merge_wait, needs_leader, tag)
from nemesis.membership import Membership
from nemesis.wipe import guard_wipes
from nemesis.windows import REPLACE_SLOT, family_window
from nemesis.worker import NemesisWorker
from tests.nemesis_fakes import FakeClock, FakeController, FakeHistory, drive, make_controller
from tests.test_nemesis_membership import FakeVoterDB


def leader_after(clock, t, leader="n3"):
    """A find_leader that names ``leader`` once ``clock`` reaches ``t`` s."""
    return lambda: leader if clock.now() >= t else None


# -- the blocking wait -------------------------------------------------------------------------------

def test_await_leader_polls_until_a_leader_comes():
    clock = FakeClock()
    w = await_leader(leader_after(clock, 1.1), 5.0, 0.25, clock.now, clock.sleep)
    assert w.leader == "n3" and w.waited_s == pytest.approx(1.25) and w.looks == 6 and w.waited
    assert w.value() == {"waited_s": 1.25, "leader": True}


def test_await_leader_gives_up_at_the_bound_and_counts_errors_as_none():
    clock = FakeClock()

    def boom():
        raise ConnectionError("refused")
    w = await_leader(boom, 2.0, 0.25, clock.now, clock.sleep)
    assert w.leader is None and w.waited_s == pytest.approx(2.0) and w.value()["leader"] is False


def test_a_leader_there_at_once_is_not_a_wait():
    clock = FakeClock()
    w = await_leader(lambda: "n1", 5.0, 0.25, clock.now, clock.sleep)
    assert w == Waited("n1", 0.0, 1) and not w.waited and clock.slept == []


def test_leader_voter_state_asks_at_once_then_each_time_a_leader_shows():
    clock = FakeClock()
    db = FakeVoterDB()
    real = db.voter_state
    asked = []

    def voter_state():
        asked.append(clock.now())
        if clock.now() < 1.0:
            raise RuntimeError("no quorum node answered DescribeQuorum as leader (3 rounds)")
        return real()
    db.voter_state = voter_state
    state, w, why = leader_voter_state(db, leader_after(clock, 1.0, "n1"), 5.0, 0.25, clock.now, clock.sleep)
    assert state["leader"] == "n1" and why is None and w.waited_s == pytest.approx(1.0)
    assert asked == [0.0, 1.0]                  # once at once, then only when a leader showed
    clock = FakeClock()
    asked.clear()
    state, w, why = leader_voter_state(db, lambda: None, 3.0, 0.5, clock.now, clock.sleep)
    assert state is None and w.leader is None and asked == [0.0]
    assert why == "no leader within 3 s (no quorum node answered DescribeQuorum as leader (3 rounds))"


@pytest.mark.parametrize("family, kind, voter_changes, needed", [
    ("membership", "remove", False, True), ("membership", "nodes", False, False),
    ("wipe", "one", False, False), ("wipe", "one", True, True), ("wipe", "leader", False, True),
    ("kill", "leader", False, True), ("kill", "one", True, False), ("pause", "leader", False, True),
    ("power-loss", "leader", False, True), ("crash", "majority", False, False),
    ("partition", "isolate-leader", False, True), ("partition", "leader-minority", False, True),
    ("partition", "one-way-leader", False, True), ("partition", "leader-diamond", False, True),
    ("partition", "random-halves", False, False), ("flap", "isolate-leader", False, True),
])
def test_which_faults_need_a_leader(family, kind, voter_changes, needed):
    assert needs_leader(family, kind, voter_changes) is needed


# -- the controller ----------------------------------------------------------------------------------

@pytest.mark.parametrize("fault", [Fault("kill", "leader"), Fault("pause", "leader"),
                                   Fault("partition", "isolate-leader")])
def test_a_leader_aimed_fault_waits_for_the_leader_it_aims_at(fault):
    clock = FakeClock()
    _c, _s, db, ctl = make_controller(leader=None, clock=clock, leader_wait_s=5.0)
    ctl.find_leader = leader_after(clock, 2.0, "n4")
    value = ctl.start(fault)
    assert value["targets"] == ["n4"] and "leader_unknown" not in value
    assert value["leader_wait"] == {"waited_s": 2.0, "leader": True}


def test_a_leader_aimed_fault_with_no_leader_in_time_falls_back_and_says_so():
    clock = FakeClock()
    _c, _s, db, ctl = make_controller(leader=None, clock=clock, leader_wait_s=3.0)
    value = ctl.start(Fault("kill", "leader"))
    assert value["leader_unknown"] is True and len(value["targets"]) == 1
    assert value["leader_wait"] == {"waited_s": 3.0, "leader": False}
    assert db.running == set(ctl.nodes) - set(value["targets"])


def test_no_wait_for_a_leader_the_faults_cannot_touch():
    """--nemesis-targets clients: the faults touch brokers only; the quorum's leader is none."""
    clock = FakeClock()
    _c, _s, db, ctl = make_controller(leader=None, clock=clock, leader_wait_s=5.0, nodes=["n4", "n5"])
    db.quorum_nodes = lambda: ["n1", "n2", "n3"]
    value = ctl.start(Fault("kill", "leader"))
    assert value["leader_unknown"] is True and "leader_wait" not in value and clock.now() == 0.0
    ops = drive(family_window(Fault("kill", "leader"), 2.0, aim_at_leader=False), 10, view=View(None))
    assert [(t, op["f"]) for t, op in ops] == [(0.0, "start-kill"), (2.0, "stop-kill")]
    ops = drive(family_window(Fault("membership", "remove"), 2.0, aim_at_leader=False, leader_wait_s=3.0), 10,
                view=View(None))
    assert ops[0][0] == pytest.approx(3.0, abs=0.06)       # a voter change still waits


def test_faults_that_need_no_leader_never_wait():
    clock = FakeClock()
    _c, _s, db, ctl = make_controller(leader=None, clock=clock, leader_wait_s=5.0)
    for fault in (Fault("kill", "one"), Fault("partition", "random-halves", slot="p2"), Fault("crash", "majority")):
        assert "leader_wait" not in ctl.start(fault)
    assert clock.now() == 0.0


def member(db, clock, **kw):
    return Membership(db, db.nodes, random.Random(1), poll_s=0.25, clock=clock.now, sleep=clock.sleep, **kw)


def test_membership_waits_for_a_leader_then_changes_the_voters():
    clock = FakeClock()
    db = FakeVoterDB()
    real = db.voter_state
    db.voter_state = lambda: real() if clock.now() >= 1.5 else (_ for _ in ()).throw(
        RuntimeError("no quorum node answered DescribeQuorum as leader (3 rounds)"))
    m = member(db, clock, find_leader=leader_after(clock, 1.5, "n1"), leader_wait_s=10.0)
    value = m.start(Fault("membership", "remove"))
    assert value["changes"][0]["outcome"] == "ok" and len(db.voters) == 2
    assert value["leader_wait"] == {"waited_s": 1.5, "leader": True}


def test_membership_with_no_leader_in_time_is_skipped_with_the_reason():
    clock = FakeClock()
    db = FakeVoterDB()
    db.voter_state = lambda: (_ for _ in ()).throw(RuntimeError("no quorum node answered"))
    m = member(db, clock, find_leader=lambda: None, leader_wait_s=4.0)
    value = m.start(Fault("membership", "remove-leader"))
    assert value == {"targets": [], "changes": [], "leader_wait": {"waited_s": 4.0, "leader": False},
                     "skipped": "no leader within 4 s (no quorum node answered)"}
    assert db.calls == [] and m.stop(Fault("membership", "remove-leader")) == {"changes": []}


def test_a_removal_refused_for_now_is_asked_again():
    clock = FakeClock()
    db = FakeVoterDB()
    real = db.remove_voter
    refusals = [2]

    def remove_voter(node, directory_id=None):   # the new leader's epoch is not committed yet
        if refusals[0]:
            refusals[0] -= 1
            return {"voter_id": int(node[1:]), "directory_id": directory_id, "outcome": "info",
                    "error": "REQUEST_TIMED_OUT"}
        return real(node, directory_id)
    db.remove_voter = remove_voter
    value = member(db, clock).start(Fault("membership", "nodes", targets=("n2",), params={"action": "remove"}))
    (change,) = value["changes"]
    assert change["outcome"] == "ok" and change["attempts"] == 3 and 2 not in db.voters


def test_a_removal_that_timed_out_but_applied_says_so():
    clock = FakeClock()
    db = FakeVoterDB()
    real = db.remove_voter

    def remove_voter(node, directory_id=None):   # appended, not committed in time
        real(node, directory_id)
        return {"voter_id": int(node[1:]), "directory_id": directory_id, "outcome": "info",
                "error": "REQUEST_TIMED_OUT"}
    db.remove_voter = remove_voter
    value = member(db, clock).start(Fault("membership", "nodes", targets=("n3",), params={"action": "remove"}))
    (change,) = value["changes"]
    assert change["outcome"] == "info" and change["voter_now"] is False and change["attempts"] == 1


def test_a_removal_refused_until_the_bound_records_the_last_answer():
    clock = FakeClock()
    db = FakeVoterDB()
    db.remove_voter = lambda node, d=None: {"voter_id": 2, "directory_id": d, "outcome": "info",
                                            "error": "REQUEST_TIMED_OUT"}
    value = member(db, clock, change_s=1.0).start(
        Fault("membership", "nodes", targets=("n2",), params={"action": "remove"}))
    (change,) = value["changes"]
    assert change["error"] == "REQUEST_TIMED_OUT" and change["attempts"] == 4 and "voter_now" not in change   # at 0, .25, .5, .75 s


def test_an_add_back_with_no_leader_gives_up_after_the_leader_wait_not_the_catch_up_time():
    clock = FakeClock()
    db = FakeVoterDB()
    db.remove_voter("n3")
    asked = []
    db.voter_state = lambda: asked.append(1)         # never asked: find_leader says none
    m = member(db, clock, find_leader=lambda: None, leader_wait_s=2.0, catch_up_s=20.0)
    m._add_back["membership"] = ["n3"]
    out = m.stop(Fault("membership", "remove"))
    assert out["changes"] == [{"op": "add", "node": "n3", "skipped": "no leader within 2 s"}]
    assert clock.now() == pytest.approx(2.0) and asked == []


def test_a_replacement_skips_a_node_already_a_voter_under_its_new_directory_id():
    clock = FakeClock()
    db = FakeVoterDB()
    db.voters[1] = "new1"                             # wiped, then added back under its new id
    db.observers[2] = ["new2", db.hw]                 # wiped, fetching under its new id
    value = member(db, clock).start(Fault("membership", "nodes", targets=("n1", "n2"), params={
        "action": "replace", "directory_ids": {"n1": "new1", "n2": "new2"}}))
    assert value["changes"][0] == {"op": "replace", "node": "n1",
                                   "skipped": "already a voter under its new directory id"}
    assert [(c["op"], c["outcome"], c["directory_id"]) for c in value["changes"][1:]] == [
        ("remove", "ok", "d2"), ("add", "ok", "new2")]
    assert db.voters == {1: "new1", 2: "new2", 3: "d3"}


def test_random_wipes_at_kraft_version_1_wait_for_the_leader_to_count_keys():
    clock = FakeClock()
    db = FakeVoterDB(n=5)
    db.kraft_version = 1
    real = db.voter_state
    db.voter_state = lambda: real() if clock.now() >= 2.0 else (_ for _ in ()).throw(RuntimeError("none"))
    ctl = types.SimpleNamespace(db=db, nodes=db.nodes, active_faults=lambda: [], active={},
                                _leader=leader_after(clock, 2.0, "n1"), leader_wait_s=5.0, poll_s=0.5,
                                clock=clock.now, sleep=clock.sleep)
    value = {}
    assert guard_wipes(ctl, Fault("wipe", "one"), ["n2"], value) == ["n2"]
    assert value == {"leader_wait": {"waited_s": 2.0, "leader": True}}
    clock.t = -10.0
    value = {}
    assert guard_wipes(ctl, Fault("wipe", "one"), ["n2"], value) == []
    assert value["wipe_skipped"] == {"n2": "no leader to count live voter keys: no leader within 5 s (none)"}
    assert value["leader_wait"] == {"waited_s": 5.0, "leader": False}


# -- the schedule's wait -----------------------------------------------------------------------------

class View:
    """A monitor view: ``leader``, ``log_end``, ``high_watermark`` and ``elections`` seen."""

    def __init__(self, leader=None, log_end=None, hw=100, elections=0):
        self.leader, self.log_end, self.high_watermark, self.nodes = leader, log_end or {}, hw, {}
        self.elections, self.epoch = elections, elections


def test_the_gate_waits_on_the_view_and_the_start_says_how_long():
    gate = LeaderGate(10.0, poll_s=0.5)
    view = lambda t: View("n2" if t >= 3.0 else None)      # noqa: E731
    ops = drive(family_window(Fault("membership", "remove"), 2.0, leader_wait_s=10.0), 20, view=view)
    (t0, start), (t1, stop) = ops
    assert t0 == pytest.approx(3.0, abs=0.06) and t1 == pytest.approx(t0 + 2.0) and stop["f"] == "stop-membership"
    assert start == {"f": "start-membership", "value": {"kind": "remove"}, "leader_wait_s": round(t0, 3)}
    # a fault that strikes the leader lets it lead a moment first: the voter changes go first
    (t0, start), _stop = drive(family_window(Fault("kill", "leader"), 2.0, leader_wait_s=10.0), 20, view=view)
    assert t0 == pytest.approx(3.0 + SETTLE_S, abs=0.11) and start["leader_wait_s"] == round(t0, 3)
    assert drive(gate, 1, view=View("n1")) == [] and gate.waited == Waited("n1", 0.0, 1)
    assert tag({"f": "start-kill", "value": {}}, gate) == {"f": "start-kill", "value": {}}   # no wait


def test_a_leader_change_starts_the_settling_again():
    gate = LeaderGate(20.0, poll_s=0.5, settle_s=2.0)
    view = lambda t: View("n1" if t < 1.5 else "n2" if t < 3.0 else "n3")      # noqa: E731
    assert drive(gate, 30, view=view) == []
    assert gate.waited.leader == "n3" and gate.waited.waited_s == pytest.approx(5.0)
    gate = LeaderGate(4.0, poll_s=0.5, settle_s=2.0)
    drive(gate, 30, view=lambda t: View(f"n{int(t) % 5 + 1}"))     # a new leader every second
    assert gate.waited.leader is None and gate.waited.waited_s == pytest.approx(4.0)


def test_the_gate_gives_up_at_its_bound_and_the_fault_still_starts():
    (t0, start), _stop = drive(family_window(Fault("membership", "remove"), 2.0, leader_wait_s=6.0), 30,
                               view=View(None))
    assert t0 == pytest.approx(6.0) and start["leader_wait_s"] == 6.0 and start["leader_seen"] is False


def test_no_view_no_wait():
    ops = drive(family_window(Fault("kill", "leader"), 2.0), 10, view=None)
    assert [(t, op["f"]) for t, op in ops] == [(0.0, "start-kill"), (2.0, "stop-kill")]
    assert "leader_wait_s" not in ops[0][1]


def test_merge_wait_adds_the_schedules_wait_to_the_controllers():
    op = {"f": "start-membership", "value": {"kind": "remove"}, "leader_wait_s": 3.0}
    assert merge_wait({"targets": ["n2"]}, op) == {"targets": ["n2"], "leader_wait": {
        "waited_s": 3.0, "leader": True, "schedule_s": 3.0}}
    assert merge_wait({"leader_wait": {"waited_s": 1.0, "leader": False}}, {**op, "leader_seen": False}) == {
        "leader_wait": {"waited_s": 4.0, "leader": False, "schedule_s": 3.0}}
    assert merge_wait({"targets": []}, {"f": "start-kill"}) == {"targets": []}


def test_the_worker_records_the_schedules_wait_in_the_start():
    hist, ctl = FakeHistory(), FakeController()
    worker = NemesisWorker(ctl, hist)
    asyncio.run(worker.invoke({"f": "start-kill", "value": {"kind": "leader"}, "leader_wait_s": 2.5}))
    inv, done = hist.ops
    assert inv["value"] == {"kind": "leader"}
    assert done["value"] == {"kind": "leader", "targets": ["n1"], "leader_wait": {
        "waited_s": 2.5, "leader": True, "schedule_s": 2.5}}


def test_a_removal_is_added_back_once_the_removed_node_caught_up():
    def complete(op):
        if op["f"] == "start-membership":
            return {"type": "info", "f": op["f"], "value": {"kind": "remove", "targets": ["n3"], "changes": [
                {"op": "remove", "node": "n3", "outcome": "ok"}]}}
        return {"type": "info", "f": op["f"], "value": op["value"]}
    view = lambda t: View("n1", {"n3": 100 if t >= 7.0 else 40})      # noqa: E731
    ops = drive(family_window(Fault("membership", "remove"), 2.0), 60, view=view, complete=complete)
    assert [op["f"] for _t, op in ops] == ["start-membership", "stop-membership"]
    assert [t for t, _op in ops] == pytest.approx([0.0, 7.0], abs=0.11)


def test_a_skipped_removal_stops_at_once():
    ops = drive(family_window(Fault("membership", "remove"), 2.0), 60, view=View("n1"))
    assert [(t, op["f"]) for t, op in ops] == [(0.0, "start-membership"), (2.0, "stop-membership")]


def test_a_wipe_at_kraft_version_1_is_followed_by_the_replacement_of_its_voters():
    def complete(op):
        v = dict(op["value"])
        if op["f"] == "start-wipe":
            v.update(targets=["n2", "n4"], wiped={"n2": {"new_directory_id": "x2"}, "n4": {"new_directory_id": "x4"}})
        return {"type": "info", "f": op["f"], "value": v}
    view = lambda t: View("n1", {"n2": 100, "n4": 100 if t >= 9.0 else 10})      # noqa: E731
    ops = drive(family_window(Fault("wipe", "minority"), 3.0, voter_changes=True, replace_wiped=True), 60,
                view=view, complete=complete)
    assert [op["f"] for _t, op in ops] == ["start-wipe", "stop-wipe", "start-membership", "stop-membership"]
    assert [t for t, _op in ops] == pytest.approx([0.0, 3.0, 9.0, 10.0], abs=0.11)
    replace = ops[2][1]["value"]
    assert replace == {"kind": "nodes", "slot": REPLACE_SLOT, "targets": ["n2", "n4"], "action": "replace",
                       "directory_ids": {"n2": "x2", "n4": "x4"}}
    # a wiped broker (faults on the brokers too) is no voter: only the quorum nodes are replaced
    def complete_with_broker(op):
        v = dict(op["value"])
        if op["f"] == "start-wipe":
            v.update(targets=["n2", "n4"], wiped={"n2": {"new_directory_id": "x2", "quorum_node": True},
                                                  "n4": {"new_directory_id": "x4", "quorum_node": False}})
        return {"type": "info", "f": op["f"], "value": v}
    ops = drive(family_window(Fault("wipe", "minority"), 3.0, voter_changes=True, replace_wiped=True), 60,
                view=view, complete=complete_with_broker)
    assert [op["f"] for _t, op in ops] == ["start-wipe", "stop-wipe", "start-membership", "stop-membership"]
    assert ops[2][1]["value"]["targets"] == ["n2"] and ops[2][1]["value"]["directory_ids"] == {"n2": "x2"}
    # a wipe of brokers alone is followed by no replacement
    def complete_brokers_only(op):
        v = dict(op["value"])
        if op["f"] == "start-wipe":
            v.update(targets=["n4"], wiped={"n4": {"new_directory_id": "x4", "quorum_node": False}})
        return {"type": "info", "f": op["f"], "value": v}
    ops = drive(family_window(Fault("wipe", "minority"), 3.0, voter_changes=True, replace_wiped=True), 60,
                view=view, complete=complete_brokers_only)
    assert [op["f"] for _t, op in ops] == ["start-wipe", "stop-wipe"]
    # without membership in the schedule, or at kraft.version 0, a wipe is only a wipe
    ops = drive(family_window(Fault("wipe", "minority"), 3.0, voter_changes=True), 60, view=view,
                complete=complete)
    assert [op["f"] for _t, op in ops] == ["start-wipe", "stop-wipe"]


def test_the_nemesis_thread_serves_other_timelines_while_a_fault_waits():
    from generator import Any
    hist = FakeHistory()
    ctl = FakeController()
    view = View(None)
    gen = nemesis(Any([family_window(Fault("membership", "remove"), 0.05, leader_wait_s=0.5),
                       family_window(Fault("kill", "one"), 0.05)]))
    interp = Interpreter(gen, {"nemesis": NemesisWorker(ctl, hist)}, iter(range(10 ** 6)).__next__, 1,
                         view=lambda: view)

    async def main():
        stop = asyncio.Event()
        task = asyncio.create_task(interp.run(stop))
        await asyncio.sleep(2.0)
        stop.set()
        await asyncio.wait_for(task, 5)
    asyncio.run(main())
    fs = [op["f"] for op in hist.ops if op["type"] == "invoke"]
    assert fs[:2] == ["start-kill", "stop-kill"] and fs.index("start-membership") >= 2


def test_when_a_leader_comes_the_voter_changes_start_before_the_faults_that_strike_it():
    from nemesis.schedule import nemesis_generator
    gen = nemesis_generator(["elect", "kill:leader", "membership:remove"], random.Random(3), "overlap",
                            interval_s=0.0, duration_s=1.0, n_nodes=5)
    view = lambda t: View("n2", elections=1) if t >= 1.0 else View(None)       # noqa: E731
    ops = drive(gen, 1.5, view=view)
    assert [(op["f"], op["value"].get("slot")) for _t, op in ops][:2] == [
        ("start-membership", None), ("start-kill", "elect")]         # then elect's; kill:leader lets it lead
