"""The membership nemesis (nemesis/membership.py) on a fake DB: which voters it picks, the
majority guard, catch-up before an add, what it records; the run-config refusal at
kraft.version 0."""
import random
import types

import pytest

from nemesis.faults import Fault, check_kind
from nemesis.membership import Membership, check_run_config, for_controller, voter_keys, wiped_voters


class FakeVoterDB:
    """Voters ``{id: directory id}``, observers ``{id: [directory id, log end]}``, a leader
    id and a high watermark; add/remove behave like KIP-853's leader (caught-up check,
    DUPLICATE_VOTER, VOTER_NOT_FOUND); every call is logged in ``calls``."""

    def __init__(self, n=3, leader=1, hw=100):
        self.nodes = [f"n{i}" for i in range(1, n + 1)]
        self.voters = {i: f"d{i}" for i in range(1, n + 1)}
        self.observers: dict[int, list] = {}
        self.leader, self.hw, self.calls = leader, hw, []

    def node_id(self, node):
        return int(node[1:])

    def voter_state(self):
        return {"leader": f"n{self.leader}", "leader_id": self.leader, "epoch": 3, "high_watermark": self.hw,
                "voters": [{"id": i, "directory_id": d, "log_end": self.hw} for i, d in sorted(self.voters.items())],
                "observers": [{"id": i, "directory_id": d, "log_end": e} for i, (d, e) in sorted(self.observers.items())]}

    def remove_voter(self, node, directory_id=None):
        nid = self.node_id(node)
        d = directory_id or self.voters.get(nid)
        self.calls.append(("remove", node, d))
        if self.voters.get(nid) != d:
            return {"voter_id": nid, "directory_id": d, "outcome": "fail", "error": "VOTER_NOT_FOUND"}
        del self.voters[nid]
        self.observers.setdefault(nid, [d, self.hw])   # a removed voter keeps fetching as an observer
        if nid == self.leader:
            self.leader = min(self.voters)
        return {"voter_id": nid, "directory_id": d, "outcome": "ok"}

    def add_voter(self, node):
        nid = self.node_id(node)
        d, end = self.observers.get(nid, [None, -1])
        self.calls.append(("add", node, d))
        if nid in self.voters:
            return {"voter_id": nid, "directory_id": d, "outcome": "fail", "error": "DUPLICATE_VOTER"}
        if end < self.hw:
            return {"voter_id": nid, "directory_id": d, "outcome": "info", "error": "REQUEST_TIMED_OUT"}
        self.voters[nid] = d
        del self.observers[nid]
        return {"voter_id": nid, "directory_id": d, "outcome": "ok"}


def member(db, seed=1, **kw):
    return Membership(db, db.nodes, random.Random(seed), catch_up_s=kw.pop("catch_up_s", 2.0), poll_s=0.0,
                      sleep=kw.pop("sleep", lambda s: None), **kw)


def test_kinds_are_registered_with_the_nemesis():
    for kind in ("remove", "remove-leader", "replace", "nodes"):
        check_kind("membership", kind)
    with pytest.raises(ValueError, match="unknown membership kind"):
        check_kind("membership", "shuffle")


def test_remove_picks_a_voter_that_does_not_lead_and_the_stop_adds_it_back():
    for seed in range(10):
        db = FakeVoterDB()
        m = member(db, seed)
        fault = Fault("membership", "remove")
        value = m.start(fault)
        (target,) = value["targets"]
        assert target != "n1" and value["leader"] == "n1"
        assert value["voters_before"] == [[1, "d1"], [2, "d2"], [3, "d3"]]
        assert value["changes"] == [{"op": "remove", "node": target, "voter_id": int(target[1:]),
                                     "directory_id": f"d{target[1:]}", "outcome": "ok"}]
        assert [k for k, _d in value["voters_after"]] == sorted({1, 2, 3} - {int(target[1:])})
        out = m.stop(fault)
        assert out["changes"][0]["op"] == "add" and out["changes"][0]["outcome"] == "ok"
        assert out["voters_after"] == value["voters_before"]


def test_remove_leader_removes_the_leader_itself():
    db = FakeVoterDB(leader=2)
    m = member(db)
    value = m.start(Fault("membership", "remove-leader"))
    assert value["targets"] == ["n2"] and db.calls[0] == ("remove", "n2", "d2")
    assert m.stop(Fault("membership", "remove-leader"))["changes"][0]["outcome"] == "ok"
    assert 2 in db.voters


def test_never_a_majority_removed_at_once():
    db = FakeVoterDB(n=3)
    m = member(db)
    first = m.start(Fault("membership", "remove", slot="m1"))
    second = m.start(Fault("membership", "remove", slot="m2"))
    (skip,) = second["changes"]
    assert "fewer than a majority (2) of the original 3" in skip["skipped"]
    assert len(db.voters) == 2 and [c[0] for c in db.calls] == ["remove"]
    assert m.stop(Fault("membership", "remove", slot="m2")) == {"changes": []}
    assert m.stop(Fault("membership", "remove", slot="m1"))["changes"][0]["outcome"] == "ok"
    assert first["targets"] and len(db.voters) == 3


def test_five_voters_may_lose_two_but_not_three():
    db = FakeVoterDB(n=5)
    m = member(db)
    outs = [m.start(Fault("membership", "nodes", slot=f"s{n}", targets=(n,), params={"action": "remove"}))
            for n in ("n2", "n3", "n4")]
    assert [o["changes"][0].get("outcome") for o in outs[:2]] == ["ok", "ok"]
    assert "skipped" in outs[2]["changes"][0] and 4 in db.voters


def test_replace_swaps_a_wiped_voters_key_once_it_caught_up():
    db = FakeVoterDB()
    db.observers[3] = ["new3", 40]               # wiped: fetches under a new directory id, behind
    assert wiped_voters(db.voter_state(), db.nodes, db.node_id) == ["n3"]
    polls = []

    def sleep(_s):                              # it catches up after a few polls
        polls.append(1)
        if len(polls) == 3:
            db.observers[3][1] = db.hw
    m = member(db, sleep=sleep)
    value = m.start(Fault("membership", "replace"))
    assert value["targets"] == ["n3"]
    remove, add = value["changes"]
    assert remove == {"op": "remove", "node": "n3", "voter_id": 3, "directory_id": "d3", "outcome": "ok"}
    assert add["op"] == "add" and add["outcome"] == "ok" and add["directory_id"] == "new3" and add["attempts"] == 1
    assert value["voters_after"] == [[1, "d1"], [2, "d2"], [3, "new3"]]
    assert len(polls) >= 3
    assert m.stop(Fault("membership", "replace")) == {"changes": []}


def test_replace_with_no_wiped_voter_records_why():
    db = FakeVoterDB()
    value = member(db).start(Fault("membership", "replace"))
    assert value["targets"] == [] and value["changes"] == [{"op": "replace", "skipped": "no node to change"}]
    assert db.calls == []


def test_add_of_a_node_that_never_catches_up_gives_up_after_the_catch_up_time():
    db = FakeVoterDB()
    db.remove_voter("n3")
    db.observers[3][1] = 5
    t = [0.0]

    def sleep(s):
        t[0] += 0.5
    m = member(db, clock=lambda: t[0], sleep=sleep, catch_up_s=2.0)
    value = m.start(Fault("membership", "nodes", targets=("n3",), params={"action": "add"}))
    (add,) = value["changes"]
    assert add == {"op": "add", "node": "n3", "skipped": "not caught up within 2 s"}


def test_explicit_targets_and_action_are_checked():
    m = member(FakeVoterDB())
    with pytest.raises(ValueError, match="action"):
        m.start(Fault("membership", "nodes", targets=("n2",), params={"action": "swap"}))
    with pytest.raises(ValueError, match="explicit targets"):
        m.start(Fault("membership", "nodes", targets=("n9",), params={"action": "add"}))


def test_rpc_errors_are_recorded_not_raised():
    db = FakeVoterDB()

    def boom(node, directory_id=None):
        raise RuntimeError("tool exited 1")
    db.remove_voter = boom
    value = member(db).start(Fault("membership", "nodes", targets=("n2",), params={"action": "remove"}))
    assert value["changes"][0]["outcome"] == "error" and "tool exited 1" in value["changes"][0]["message"]


def test_controller_branch_records_targets_and_stops(monkeypatch):
    from tests.nemesis_fakes import make_controller
    *_rest, ctl = make_controller(3, leader="n1")         # as FakeVoterDB's leader
    db = FakeVoterDB()
    ctl.db = db
    m = for_controller(ctl)
    m.sleep, m.poll_s = (lambda s: None), 0.0
    value = ctl.start(Fault("membership", "remove"))
    assert value["kind"] == "remove" and len(value["targets"]) == 1 and len(db.voters) == 2
    assert ctl.active == {"membership": value["targets"]}
    out = ctl.stop(Fault("membership", "remove"))
    assert out["targets"] == value["targets"] and out["changes"][0]["outcome"] == "ok" and len(db.voters) == 3


def test_voter_keys_sorted():
    assert voter_keys({"voters": [{"id": 2, "directory_id": "b"}, {"id": 1, "directory_id": "a"}]}) == [
        [1, "a"], [2, "b"]]


@pytest.mark.parametrize("cfg, refused", [
    (dict(db="kraft", kraft_version=None, nemesis=["membership"]), True),
    (dict(db="kraft", kraft_version=0, nemesis=["kill", "membership:remove+replace"]), True),
    (dict(db="kraft", kraft_version=1, nemesis=["membership"]), False),
    (dict(db="kafka", kraft_version=None, nemesis=["membership", "wipe"]), False),
    (dict(db="kafka", kraft_version=0, nemesis=["membership"]), True),
    (dict(db="kraft", kraft_version=0, nemesis=["kill"]), False),
    (dict(db="kraft", kraft_version=0, nemesis=[], scenario=[{"nemesis": "start-membership"}]), True),
])
def test_membership_is_refused_at_kraft_version_0(cfg, refused):
    config = types.SimpleNamespace(**{"scenario": None, **cfg})
    if refused:
        with pytest.raises(ValueError, match="not supported at kraft.version 0"):
            check_run_config(config)
    else:
        check_run_config(config)


def test_random_wipes_at_kraft_version_1_keep_a_majority_of_voter_keys():
    from nemesis.wipe import guard_wipes
    db = FakeVoterDB(n=5)
    db.kraft_version = 1
    db.observers[5] = ["new5", 10]                 # n5 already wiped: its key is lost
    ctl = types.SimpleNamespace(db=db, nodes=db.nodes, active_faults=lambda: [Fault("wipe", "one", slot="w2")],
                                active={"w2": ["n4"]})       # n4 held down by another wipe
    value = {}
    assert guard_wipes(ctl, Fault("wipe", "minority"), ["n2", "n3"], value) == []
    assert set(value["wipe_skipped"]) == {"n2", "n3"} and "fewer than a majority (3)" in value["wipe_skipped"]["n2"]
    ctl.active = {}
    value = {}
    assert guard_wipes(ctl, Fault("wipe", "minority"), ["n2", "n3"], value) == ["n2"]
    assert guard_wipes(ctl, Fault("wipe", "one"), ["n5"], {}) == ["n5"]          # not a live key
    assert guard_wipes(ctl, Fault("wipe", "nodes", targets=("n1", "n2", "n3")), ["n1", "n2", "n3"], {}) == [
        "n1", "n2", "n3"]                                                       # scenarios: as asked
    db.kraft_version = 0
    assert guard_wipes(ctl, Fault("wipe", "minority"), ["n2", "n3"], {}) == ["n2", "n3"]


def test_a_node_the_stop_could_not_add_back_is_added_by_the_next_start():
    db = FakeVoterDB()
    m = member(db, catch_up_s=0.0)
    m.start(Fault("membership", "nodes", targets=("n3",), params={"action": "remove"}))
    del db.observers[3]                                   # killed: not fetching
    out = m.stop(Fault("membership", "nodes"))
    assert "not an observer" in out["changes"][0]["skipped"]
    db.observers[3] = ["d3", db.hw]                       # back
    value = m.start(Fault("membership", "replace"))
    assert value["added_back"][0]["outcome"] == "ok" and 3 in db.voters


def test_cli_refuses_membership_at_kraft_version_0_with_exit_3(tmp_path, capsys):
    from harness.cli.main import main
    assert main(["run", "--nemesis", "membership:remove+replace", "--time-limit", "5", "--store", str(tmp_path),
                 "--no-progress"]) == 3
    assert "not supported at kraft.version 0" in capsys.readouterr().err
