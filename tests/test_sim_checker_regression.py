"""A false disruptive-election the simulator found on the correct build (seed 51): a voter left
the leader's epoch while a packet fault held every node, then kept answering in the new epoch;
the checker judged one of those later answers, whose window no longer held the fault, as the
departure. Each node leaves an epoch once: only its first answer past it is judged
(checkers/leadership.py, DisruptiveElection)."""
from __future__ import annotations

from checkers.leadership import DisruptiveElection

from .test_checkers_leadership import check, nemesis, ordered, sample
from .histories.builder import H


def _history(departure_ms: int, fault: tuple[int, int] | None) -> H:
    """n2 leads epoch 1 from 1 s; n1 and n3 move to epoch 3 (n3 leading) at ``departure_ms``,
    n2 still answering as leader until then; ``fault``: a packet fault on every node."""
    h = H()
    for t in range(100, 12_000, 250):
        if t < 1000:
            for n in ("n1", "n2", "n3"):
                sample(h, n, t + int(n[1:]), 0, -1, False)
        elif t < departure_ms:
            sample(h, "n1", t + 1, 1, 2, False)
            sample(h, "n2", t + 2, 1, 2, True)
            sample(h, "n3", t + 3, 1, 2, False)
        else:
            sample(h, "n1", t + 1, 3, 3, False)
            sample(h, "n2", t + 2, 3, 3, False)
            sample(h, "n3", t + 3, 3, 3, True)
    if fault:
        value = {"kind": "loss", "targets": ["n1", "n2", "n3"]}
        nemesis(h, "start-packet", {"kind": "loss"}, fault[0], value)
        nemesis(h, "stop-packet", {"kind": "loss"}, fault[1], value)
    return ordered(h)


def test_a_departure_under_a_fault_is_not_judged_again_by_its_later_answers():
    r = check(_history(6_000, (2_600, 4_070)), DisruptiveElection)
    assert r["valid"] is True, r["anomalies"]


def test_the_same_departure_without_the_fault_is_still_disruptive():
    r = check(_history(6_000, None), DisruptiveElection)
    assert r["valid"] is False
    assert {a["node"] for a in r["anomalies"]} <= {"n1", "n2", "n3"}
