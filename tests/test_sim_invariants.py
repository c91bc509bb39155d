"""The simulator's named invariants (sim/invariants.py) on hand-made node states."""
from __future__ import annotations

import types

import pytest

from kraft.core.events import StateChanged, WriteLog
from kraft.core.records import DATA, VOTERS, Record
from kraft.core.states import ElectionState, StateKind
from kraft.rules.voter_set import VoterSet
from sim.invariants import InvariantBroken, QuorumInvariants
from sim.quorum_nodes import initial_voters


def node(i: int, life: int = 0):
    return types.SimpleNamespace(id=i, life=life)


def core(epoch: int, hw: int, epochs, kind=StateKind.FOLLOWER, voters: VoterSet | None = None):
    log = types.SimpleNamespace(records=[Record(o, e, DATA, o) for o, e in enumerate(epochs)])
    history = types.SimpleNamespace(latest=voters or initial_voters([1, 2, 3], 0))
    state = types.SimpleNamespace(hw=hw, log=log, kind=kind, history=history)
    return types.SimpleNamespace(epoch=epoch, state=state)


def leader_change(epoch: int) -> StateChanged:
    return StateChanged(StateKind.CANDIDATE, StateKind.LEADER, ElectionState(epoch, 1))


def broken(fn) -> str:
    with pytest.raises(InvariantBroken) as e:
        fn()
    return e.value.violation.name


def test_two_leaders_in_one_epoch():
    inv = QuorumInvariants(lambda: 0.0)
    inv.after_step(node(1), core(3, 0, [], StateKind.LEADER), [leader_change(3)])
    assert broken(lambda: inv.after_step(node(2), core(3, 0, [], StateKind.LEADER),
                                         [leader_change(3)])) == "election-safety"


def test_high_watermark_going_back_within_one_life():
    inv = QuorumInvariants(lambda: 0.0)
    inv.after_step(node(1), core(1, 2, [1, 1, 1]), [])
    inv.after_step(node(1, life=1), core(1, 0, [1, 1, 1]), [])       # a restart starts from 0
    inv.after_step(node(1, life=1), core(1, 3, [1, 1, 1]), [])
    assert broken(lambda: inv.after_step(node(1, life=1), core(1, 1, [1, 1, 1]), [])) == "hw-monotonic"


def test_committed_records_differ_between_nodes():
    inv = QuorumInvariants(lambda: 0.0)
    inv.after_step(node(1), core(2, 2, [1, 1]), [])
    assert broken(lambda: inv.after_step(node(2), core(2, 2, [1, 2]), [])) == "committed-agreement"


def test_a_new_leader_without_a_committed_record():
    inv = QuorumInvariants(lambda: 0.0)
    inv.after_step(node(1), core(1, 3, [1, 1, 1]), [])
    assert broken(lambda: inv.after_step(node(2), core(2, 0, [1, 1], StateKind.LEADER),
                                         [leader_change(2)])) == "committed-lost"


def test_a_leader_writing_a_voter_set_two_voters_away():
    inv = QuorumInvariants(lambda: 0.0)
    voters = initial_voters([1, 2, 3], 1)
    c = core(1, 0, [], StateKind.LEADER, voters)
    inv.after_step(node(1), c, [leader_change(1)])
    one_off = VoterSet(voters.voters[:2])
    inv.after_step(node(1), c, [WriteLog([Record(1, 1, VOTERS, one_off.to_payload())])])
    two_off = VoterSet(voters.voters[:1] + initial_voters([4], 1).voters)
    assert broken(lambda: inv.after_step(node(1), c, [WriteLog([Record(2, 1, VOTERS, two_off.to_payload())])])
                  ) == "voter-change"
