"""The quorum core (kraft/quorum/) driven by hand-made events alone: no asyncio, no sockets,
no files. Elections with and without Pre-Vote, check quorum, Fetch validation and
truncation, the high watermark (and its epoch-start rule), read-index, voter changes
one at a time, restart from what the disk holds, and determinism."""
from __future__ import annotations

import pytest

from kraft.core import errors
from kraft.core.events import PersistElection, Received, Replied, SyncDone, SyncLog, TruncateLog, WriteLog
from kraft.core.records import KRAFT_VERSION, LEADER_CHANGE, VOTERS
from kraft.core.states import ElectionState, StateKind
from kraft.quorum import FatalError, TimerKey
from kraft.quorum.client_messages import AddVoterRequest, AppendRequest, ReadIndexRequest, RemoveVoterRequest
from kraft.quorum.messages import (BeginQuorumEpochRequest, EndQuorumEpochRequest, FetchRequest, FetchResponse,
                                   VoteRequest, VoteResponse)
from kraft.rules.voter_set import ReplicaKey, VoterHistory, VoterNode

from .core_driving import Clock, Driver, of, quorum_core, records, replies, sent, voters
from .quorum_sim import SimCluster

LEADER, FOLLOWER, CANDIDATE = StateKind.LEADER, StateKind.FOLLOWER, StateKind.CANDIDATE
PROSPECTIVE, RESIGNED, UNATTACHED = StateKind.PROSPECTIVE, StateKind.RESIGNED, StateKind.UNATTACHED
ELECTION = TimerKey.ELECTION


def grant_all(d: Driver, effects: list) -> list:
    """Answer every Vote request in ``effects`` with a grant, one by one; returns the effects."""
    out = []
    for s in sent(effects, VoteRequest):
        out += d.step(Replied(s.to, s.msg, VoteResponse(errors.NONE, True, s.msg.pre_vote, -1,
                                                        s.msg.candidate_epoch), s.gen))
    return out


def leader(n: int = 3, **kw) -> tuple[Driver, list]:
    """Core 1 elected leader (Pre-Vote, then Vote) by grants; returns the driver and the
    effects of winning."""
    clock = kw.pop("clock", None) or Clock()
    c, fx = quorum_core(1, n, clock=clock, **kw)
    d = Driver(c, clock, fx)
    fx = d.advance(d.timers[ELECTION])
    fx = grant_all(d, fx)
    if c.state.kind is CANDIDATE:
        fx = grant_all(d, fx)
    assert c.state.kind is LEADER
    return d, fx


def fetch(rid: int, offset: int, last_epoch: int, epoch: int, wait: int = 0, echo: int = 0,
          rdir: str | None = None) -> FetchRequest:
    return FetchRequest(rid, rdir, epoch, offset, last_epoch, wait, echo)


# -- elections -----------------------------------------------------------------------------
def test_election_with_pre_vote_persists_before_it_asks_and_announces():
    clock = Clock()
    c, fx = quorum_core(1, 3, clock=clock)
    d = Driver(c, clock, fx)
    assert c.state.kind is UNATTACHED and 100 <= d.timers[ELECTION] < 200       # in [T, 2T)
    fx = d.advance(d.timers[ELECTION])
    assert c.state.kind is PROSPECTIVE and c.epoch == 0 and not of(fx, PersistElection)
    pre = {s.to: s for s in sent(fx, VoteRequest)}
    assert set(pre) == {2, 3} and all(s.msg.pre_vote and s.msg.candidate_epoch == 0 for s in pre.values())
    fx = d.step(Replied(2, pre[2].msg, VoteResponse(errors.NONE, True, True, -1, 0), pre[2].gen))
    assert c.state.kind is CANDIDATE and c.epoch == 1                              # self + 2: a majority
    persist = of(fx, PersistElection)
    assert persist[0].state == ElectionState(1, -1, 1, None)
    votes = {s.to: s for s in sent(fx, VoteRequest)}
    assert fx.index(persist[0]) < fx.index(votes[2])                         # quorum-state first
    d.step(Replied(3, pre[3].msg, VoteResponse(errors.NONE, True, True, -1, 0), pre[3].gen))   # stale gen
    assert c.state.kind is CANDIDATE
    fx = d.step(Replied(3, votes[3].msg, VoteResponse(errors.NONE, True, False, -1, 1), votes[3].gen))
    assert c.state.kind is LEADER
    persist, write, begin = of(fx, PersistElection)[0], of(fx, WriteLog)[0], sent(fx, BeginQuorumEpochRequest)
    assert persist.state == ElectionState(1, 1, 1, None)
    assert write.records[0].type == LEADER_CHANGE and write.records[0].payload["GrantingVoters"] == [1, 3]
    assert of(fx, SyncLog)[0].end == 1 and {s.to for s in begin} == {2, 3}
    assert fx.index(persist) < fx.index(write) < fx.index(begin[0])


@pytest.mark.parametrize("kw", [dict(pre_vote=False), dict(switches=["no-pre-vote"])])
def test_without_pre_vote_the_timeout_bumps_the_epoch_at_once(kw):
    clock = Clock()
    c, fx = quorum_core(1, 3, clock=clock, **kw)
    d = Driver(c, clock, fx)
    fx = d.advance(d.timers[ELECTION])
    assert c.state.kind is CANDIDATE and c.epoch == 1 and of(fx, PersistElection)
    assert not any(s.msg.pre_vote for s in sent(fx, VoteRequest))


def test_a_follower_that_fetched_refuses_pre_votes_and_a_pre_vote_changes_nothing():
    c, fx = quorum_core(2, 3, epochs=[1, 1], election=ElectionState(1, 1, -1))
    assert c.state.kind is FOLLOWER and sent(fx, FetchRequest)[0].to == 1
    ask = VoteRequest(1, 3, None, 2, None, 1, 2, True)
    assert replies(c.step(Received("a", ask)))["a"].vote_granted is True      # no successful fetch yet
    f = sent(fx, FetchRequest)[0]
    c.step(Replied(1, f.msg, FetchResponse(errors.NONE, 0, [], None, 0, 1, 1), f.gen))
    fx = c.step(Received("b", ask))
    assert replies(fx)["b"].vote_granted is False and not of(fx, PersistElection) and c.epoch == 1
    # a standard vote of a higher epoch: Unattached, then the vote, each persisted before the answer
    fx = c.step(Received("c", VoteRequest(2, 3, None, 2, None, 1, 2, False)))
    states = [p.state for p in of(fx, PersistElection)]
    assert states == [ElectionState(2, -1, -1, None), ElectionState(2, -1, 3, None)]
    assert replies(fx)["c"].vote_granted is True and fx.index(of(fx, PersistElection)[-1]) < len(fx) - 1


def test_check_quorum_resigns_a_leader_no_majority_fetches_from():
    d, _ = leader(3)
    t0 = d.core.state.leader_since
    d.advance(t0 + 299)
    assert d.core.state.kind is LEADER
    fx = d.advance(t0 + 301)                             # 1.5 x fetch.timeout.ms without fetches
    assert d.core.state.kind is RESIGNED and {s.to for s in sent(fx, EndQuorumEpochRequest)} == {2, 3}


def test_check_quorum_keeps_a_leader_a_majority_fetches_from():
    d, _ = leader(3)
    for t in range(50, 2000, 50):
        d.advance(t)
        d.step(Received(("f", t), fetch(2, 1, 1, 1)))
    assert d.core.state.kind is LEADER


def test_no_check_quorum_keeps_a_cut_off_leader_forever():
    d, _ = leader(3, switches=["no-check-quorum"])
    d.advance(10_000)
    assert d.core.state.kind is LEADER                         # the bug (KAFKA-15489)


# -- replication -----------------------------------------------------------------------------
def test_leader_answers_diverging_epoch_and_the_follower_truncates_then_fetches_on():
    d, _ = leader(3, epochs=[1, 1, 1, 3, 3], election=ElectionState(3, -1, -1))
    lead = d.core
    assert lead.epoch == 4 and lead.state.log.records[5].type == LEADER_CHANGE
    r = replies(d.step(Received("x", fetch(2, 6, 2, 4))))["x"]
    assert r.diverging == (1, 3) and r.records == []
    f, fx = quorum_core(2, 3, epochs=[1, 1, 1, 2, 2, 2], election=ElectionState(4, 1, -1))
    first = sent(fx, FetchRequest)[0]
    assert (first.msg.fetch_offset, first.msg.last_fetched_epoch) == (6, 2)
    r.leader_id, r.leader_epoch = 1, 4
    fx = f.step(Replied(1, first.msg, r, first.gen))
    assert of(fx, TruncateLog)[0].offset == 3 and f.state.log.end_offset == 3
    again = sent(fx, FetchRequest)[0].msg
    assert (again.fetch_offset, again.last_fetched_epoch) == (3, 1)
    r2 = replies(d.step(Received("y", again)))["y"]
    assert [x.epoch for x in r2.records] == [3, 3, 4]


def test_a_follower_fsyncs_what_it_copied_before_its_next_fetch_reports_it():
    f, fx = quorum_core(2, 3, election=ElectionState(1, 1, -1))
    first = sent(fx, FetchRequest)[0]
    resp = FetchResponse(errors.NONE, 0, records([1, 1]), None, 0, 1, 1)
    fx = f.step(Replied(1, first.msg, resp, first.gen))
    assert of(fx, WriteLog) and of(fx, SyncLog)[0].end == 2 and not sent(fx, FetchRequest)
    fx = f.step(SyncDone(2))
    assert sent(fx, FetchRequest)[0].msg.fetch_offset == 2


def test_truncation_below_the_high_watermark_is_fatal():
    f, fx = quorum_core(2, 3, epochs=[1, 1, 1, 2], election=ElectionState(3, 1, -1))
    first = sent(fx, FetchRequest)[0]
    fx = f.step(Replied(1, first.msg, FetchResponse(errors.NONE, 4, [], None, 0, 1, 3), first.gen))
    assert f.state.hw == 4
    again = sent(fx, FetchRequest)[0]
    with pytest.raises(FatalError):
        f.step(Replied(1, again.msg, FetchResponse(errors.NONE, 4, [], (1, 2), 0, 1, 3), again.gen))
    assert f.state.log.end_offset == 4


def test_high_watermark_waits_for_the_leaders_fsync_and_the_epochs_first_record():
    d, _ = leader(3, epochs=[1, 1], election=ElectionState(1, -1, -1))
    lead = d.core                                       # epoch 2, LeaderChange at offset 2, not fsynced
    d.step(Received("a", fetch(2, 3, 2, 2)))
    assert lead.state.hw == 0                                 # the leader's own copy is not on disk yet
    d.step(SyncDone(3))
    assert lead.state.hw == 3
    d2, _ = leader(3, epochs=[1, 1], election=ElectionState(1, -1, -1))
    d2.step(SyncDone(3))
    d2.step(Received("a", fetch(2, 2, 1, 2)))
    assert d2.core.state.hw == 0                              # a majority has the old records only
    d3, _ = leader(3, epochs=[1, 1], election=ElectionState(1, -1, -1), switches=["early-high-watermark"])
    d3.step(SyncDone(3))
    d3.step(Received("a", fetch(2, 2, 1, 2)))
    assert d3.core.state.hw == 2                              # the bug: before the LeaderChange commits


def test_no_fsync_counts_the_leaders_records_before_they_are_on_disk():
    d, fx = leader(3, switches=["no-fsync"])
    assert not of(fx, SyncLog)
    d.step(Received("a", fetch(2, 1, 1, 1)))
    assert d.core.state.hw == 1                               # no SyncDone ever came


def test_commit_minority_commits_with_two_of_five():
    for switches, expected in (((), 0), (("commit-minority",), 1)):
        d, _ = leader(5, switches=switches)
        d.step(SyncDone(1))
        d.step(Received("a", fetch(2, 1, 1, 1)))
        assert d.core.state.hw == expected


def test_a_parked_fetch_is_answered_when_the_leader_appends():
    d, _ = leader(3)
    d.step(SyncDone(1))
    assert not replies(d.step(Received("p", fetch(2, 1, 1, 1, wait=50))))
    fx = d.step(Received("w", AppendRequest("v")))
    assert [r.payload for r in replies(fx)["p"].records] == ["v"]
    assert "w" not in replies(fx)                       # answered once committed


def test_append_is_answered_once_committed_and_ack_before_commit_answers_on_the_leaders_fsync():
    for switches in ((), ("ack-before-commit",)):
        d, _ = leader(3, switches=switches)
        d.step(SyncDone(1))
        d.step(Received("a", fetch(2, 1, 1, 1)))       # the LeaderChange commits
        d.step(Received("w", AppendRequest("v")))
        fx = d.advance(d.clock.t + 5)                  # the append linger: fsync
        assert of(fx, SyncLog)[0].end == 2
        fx = d.step(SyncDone(2))
        if switches:
            assert replies(fx)["w"].error_code == errors.NONE and d.core.state.hw == 1   # the bug
        else:
            assert "w" not in replies(fx)
            fx = d.step(Received("b", fetch(2, 2, 1, 1)))
            assert replies(fx)["w"].offset == 1 and d.core.state.hw == 2


def test_no_fetch_validation_sends_records_instead_of_diverging():
    d, _ = leader(3, epochs=[1, 1], election=ElectionState(1, -1, -1), switches=["no-fetch-validation"])
    r = replies(d.step(Received("x", fetch(2, 2, 1, 2))))["x"]   # a follower whose epoch 1 ends later
    assert r.diverging is None and r.error_code == errors.NONE


# -- read-index ---------------------------------------------------------------------------------
def committed_leader(**kw) -> Driver:
    d, _ = leader(3, **kw)
    d.step(SyncDone(1))
    d.step(Received("c", fetch(2, 1, 1, 1)))
    assert d.core.leader_epoch_committed()
    return d


def test_read_index_waits_for_a_majority_to_echo_the_round():
    d = committed_leader()
    d.step(Received("p", fetch(2, 1, 1, 1, wait=50)))                # parked
    fx = d.step(Received("r", ReadIndexRequest()))
    assert replies(fx)["p"].read_round == 1 and "r" not in replies(fx)    # answered at once with the round
    assert "r" not in replies(d.step(Received("late", fetch(2, 1, 1, 1, echo=0))))   # sent before the read
    assert replies(d.step(Received("echo", fetch(2, 1, 1, 1, echo=1))))["r"].index == 1


def test_read_index_times_out_without_a_majority():
    d = committed_leader()
    d.step(Received("r", ReadIndexRequest(100)))
    fx = d.advance(d.clock.t + 101)
    assert replies(fx)["r"].error_code == errors.REQUEST_TIMED_OUT


def test_lease_read_answers_without_a_round_and_no_read_index_on_any_node():
    d = committed_leader(switches=["lease-read"])
    assert replies(d.step(Received("r", ReadIndexRequest())))["r"].index == 1   # the bug
    f, _ = quorum_core(2, 3, election=ElectionState(1, 1, -1), switches=["no-read-index"])
    assert replies(f.step(Received("r", ReadIndexRequest())))["r"].error_code == errors.NONE
    g, _ = quorum_core(2, 3, election=ElectionState(1, 1, -1))
    assert replies(g.step(Received("r", ReadIndexRequest())))["r"].error_code == errors.NOT_LEADER_OR_FOLLOWER


# -- voter changes (KIP-853), one at a time ----------------------------------------------------------------
def test_voter_changes_one_at_a_time():
    d, fx = leader(3, history=VoterHistory(voters(3, dirs=True), 1), directory_id="d1")
    lead = d.core
    assert [r.type for r in lead.state.log.records] == [LEADER_CHANGE, KRAFT_VERSION, VOTERS]
    d.step(SyncDone(3))
    d.step(Received("c", fetch(2, 3, 1, 1, rdir="d2")))
    assert lead.state.hw == 3
    new = VoterNode(4, "d4", "h", 9004)
    r = replies(d.step(Received("a", AddVoterRequest(new))))["a"]
    assert r.error_code == errors.REQUEST_TIMED_OUT and "lagging" in r.message      # never fetched
    d.step(Received("o", fetch(4, 3, 1, 1, rdir="d4")))                              # caught up observer
    fx = d.step(Received("b", AddVoterRequest(new)))
    assert "b" not in replies(fx) and lead.voters.ids == [1, 2, 3, 4]                # in effect at once
    r = replies(d.step(Received("c2", RemoveVoterRequest(ReplicaKey(2, "d2")))))["c2"]
    assert r.error_code == errors.REQUEST_TIMED_OUT and "latest voter change" in r.message
    d.advance(d.clock.t + 5)
    d.step(SyncDone(4))
    d.step(Received("f2", fetch(2, 4, 1, 1, rdir="d2")))
    assert "b" not in replies(d.effects) and lead.state.hw == 3       # 2 of the 4 new voters: not yet
    fx = d.step(Received("f4", fetch(4, 4, 1, 1, rdir="d4")))
    assert replies(fx)["b"].error_code == errors.NONE and lead.state.hw == 4


# -- restart from what the disk holds ----------------------------------------------------------------
def test_a_leader_restarts_resigned_unless_leader_restart():
    for switches, kind in (((), RESIGNED), (("leader-restart",), LEADER)):
        c, fx = quorum_core(1, 3, epochs=[1, 1], election=ElectionState(1, 1, 1), switches=switches)
        assert c.state.kind is kind and c.epoch == 1
    # the bug (KAFKA-10527): the restarted leader writes a new record at an offset of its epoch that
    # a follower already holds with another value, and the follower's fetch does not diverge
    c, _ = quorum_core(1, 3, epochs=[1, 1], election=ElectionState(1, 1, 1), switches=["leader-restart"])
    c.step(Received("w", AppendRequest("new")))
    r = replies(c.step(Received("f", fetch(2, 3, 1, 1))))["f"]       # the follower has "old" at 2
    assert c.state.log.records[2].payload == "new" and r.diverging is None and r.error_code == errors.NONE


def test_a_vote_survives_a_restart_unless_forget_vote():
    for switches, second in (((), False), (("forget-vote",), True)):
        c, _ = quorum_core(1, 3, switches=switches)
        fx = c.step(Received("v", VoteRequest(5, 2, None, 1, None, 0, 0, False)))
        assert replies(fx)["v"].vote_granted
        persisted = [p.state for p in of(fx, PersistElection)]
        disk = persisted[-1] if persisted else ElectionState()
        again, _ = quorum_core(1, 3, election=disk, switches=switches)           # restart from disk
        r = replies(again.step(Received("v", VoteRequest(5, 3, None, 1, None, 0, 0, False))))["v"]
        assert r.vote_granted is second            # the bug: two votes in epoch 5


def test_vote_after_failed_prevote_bumps_the_epoch_and_vote_ignores_offset_elects_a_shorter_log():
    for switches, kind in (((), UNATTACHED), (("vote-after-failed-prevote",), CANDIDATE)):
        clock = Clock()
        c, fx = quorum_core(1, 3, clock=clock, switches=switches)
        d = Driver(c, clock, fx)
        for s in sent(d.advance(d.timers[ELECTION]), VoteRequest):
            d.step(Replied(s.to, s.msg, VoteResponse(errors.NONE, False, True, -1, 0), s.gen))
        assert c.state.kind is kind
    for switches, granted in (((), False), (("vote-ignores-offset",), True)):
        c, _ = quorum_core(1, 3, epochs=[1, 1, 1], switches=switches)
        r = replies(c.step(Received("v", VoteRequest(2, 2, None, 1, None, 1, 2, False))))["v"]
        assert r.vote_granted is granted


def test_restart_from_disk_keeps_every_acknowledged_append():
    c = SimCluster(3, seed=4)
    c.run_for(1000)
    lead = c.leader()
    toks = [c.client(lead.id, AppendRequest(i)) for i in range(20)]
    c.run_for(200)
    acked = {c.replies[t].offset: i for i, t in enumerate(toks) if t in c.replies and c.replies[t].error_code == 0}
    assert len(acked) == 20
    old = lead.id
    c.crash(old)
    c.run_for(1000)
    again = c.start(old)
    assert again.state.kind is RESIGNED and again.epoch == lead.epoch
    c.run_for(2000)
    new = c.leader()
    assert new is not None and new.epoch > lead.epoch
    assert all(new.state.log.records[o].payload == v for o, v in acked.items())
    assert all(o < new.state.hw for o in acked)


# -- determinism -----------------------------------------------------------------------------------
def trace(seed: int) -> list:
    c = SimCluster(5, seed=seed)
    out = []
    for step in range(60):
        c.run_for(37)
        if step == 20:
            c.crash(c.leader().id if c.leader() else 1)
        if step == 30:
            c.isolate(2)
        if step == 45:
            c.heal()
            for i in c.ids:
                if c.cores[i] is None:
                    c.start(i)
        lead = c.leader()
        if lead is not None:
            c.client(lead.id, AppendRequest(step))
    out.append([(t, i, e.kind, e.election) for t, i, e in c.transitions])
    out.append(sorted((k, repr(v)) for k, v in c.replies.items()))
    out.append({i: (x.state.log.records, x.state.hw) for i, x in c.cores.items() if x})
    out.append(c.events)
    return out


def test_the_same_events_with_the_same_seed_give_the_same_run():
    assert trace(11) == trace(11)
    assert trace(11) != trace(12)


def test_every_unsafe_switch_is_a_policy_field_the_cores_consult():
    import dataclasses
    from pathlib import Path

    from kraft.core import unsafe
    fields = {f.name for f in dataclasses.fields(unsafe.Unsafe)}
    assert fields == {n.replace("-", "_") for n in unsafe.SWITCHES}
    root = Path(unsafe.__file__).parents[1]      # kraft/ (unsafe is kraft/core/unsafe.py; storage: recovery)
    source = "".join(p.read_text() for d in ("quorum", "replication", "storage") for p in (root / d).glob("*.py"))
    assert {f for f in fields if f"policy.{f}" not in source} == set()
    assert unsafe.Unsafe.of(["lease-read"]).lease_read and unsafe.Unsafe.of(["lease-read"]).switches == {"lease-read"}
    with pytest.raises(ValueError, match="unknown unsafe switch"):
        unsafe.Unsafe.of(["lease"])


def test_the_readme_example_drives_a_three_node_cluster(capsys):
    from pathlib import Path
    text = (Path(__file__).parent.parent / "kraft" / "README.md").read_text()
    section = text[text.index("## The cores"):]
    code = section[section.index("```python\n") + 10:section.index("\n```", section.index("```python"))]
    exec(compile(code, "kraft/README.md", "exec"), {"__name__": "readme_example"})
    leader_id, epoch, response = capsys.readouterr().out.split(" ", 2)
    assert epoch == "1" and response.startswith("AppendResponse(error_code=0, offset=1, epoch=1")


def test_the_cores_import_neither_asyncio_nor_socket():
    import subprocess
    import sys
    code = ("import sys, kraft.quorum, kraft.replication; "
            "print(sorted(m for m in ('asyncio', 'socket', 'selectors', 'ssl') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def power_loss_keeps_acknowledged_appends(switches=()) -> bool:
    """Three voters acknowledge 20 appends; all lose power and restart from what their disks
    durably hold; True iff a new leader still has every acknowledged append."""
    from kraft.core.unsafe import Unsafe
    c = SimCluster(3, seed=5, policy=Unsafe.of(switches))
    c.run_for(1000)
    lead = c.leader()
    toks = [c.client(lead.id, AppendRequest(f"v{i}")) for i in range(20)]
    c.run_for(300)
    acked = {c.replies[t].offset: f"v{i}" for i, t in enumerate(toks) if c.replies[t].error_code == 0}
    assert len(acked) == 20
    for i in c.ids:
        c.crash(i)
    for i in c.ids:
        c.start(i)
    c.run_for(3000)
    new = c.leader()
    recs = new.state.log.records
    return all(o < len(recs) and recs[o].payload == v for o, v in acked.items())


def test_a_power_loss_keeps_acknowledged_appends_unless_no_fsync():
    assert power_loss_keeps_acknowledged_appends()
    assert not power_loss_keeps_acknowledged_appends(["no-fsync"])     # the bug (KAFKA-10533)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_safety_under_crashes_and_partitions_in_virtual_time(seed):
    """Random crashes (power losses), restarts, isolations and heals: at most one leader per
    epoch, committed prefixes agree, every acknowledged append is in the final leader's
    committed log."""
    import random
    rng = random.Random(seed)
    c = SimCluster(5, seed=seed)
    leaders: dict[int, int] = {}
    for step in range(250):
        c.run_for(20)
        r = rng.random()
        if r < 0.03:
            c.crash(rng.choice(c.ids))
        elif r < 0.08:
            for i in c.ids:
                if c.cores[i] is None:
                    c.start(i)
        elif r < 0.10:
            c.isolate(rng.choice(c.ids))
        elif r < 0.14:
            c.heal()
        if (lead := c.leader()) is not None:
            c.client(lead.id, AppendRequest(step))
        for _, i, ch in c.transitions:
            if ch.kind is LEADER:
                assert leaders.setdefault(ch.election.epoch, i) == i
        c.transitions.clear()
        live = [x for x in c.cores.values() if x is not None]
        for a in live:
            for b in live:
                n = min(a.state.hw, b.state.hw)
                assert a.state.log.records[:n] == b.state.log.records[:n]
    c.heal()
    for i in c.ids:
        if c.cores[i] is None:
            c.start(i)
    c.run_for(3000)
    final = c.leader()
    ok = [m for m in c.replies.values() if m.error_code == errors.NONE]
    assert ok and all(m.offset < final.state.hw and final.state.log.records[m.offset].epoch == m.epoch for m in ok)
