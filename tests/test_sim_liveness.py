"""The simulator's liveness invariant (sim/liveness.py): the election-timer livelock
(``reset-election-timer`` without Pre-Vote) leaves the quorum leaderless after the final heal,
which the invariant catches; Pre-Vote off alone only disrupts."""
import pytest

from sim.api import SimOptions, run_seed
from sim.invariants import InvariantBroken
from sim.liveness import BOUND_TIMEOUTS, LivenessWatch, bound_ms
from sim.runtime import Runtime

LIVELOCK = ("reset-election-timer", "no-pre-vote")


def test_the_election_timer_livelock_fails_liveness():
    o = run_seed(SimOptions(unsafe=LIVELOCK), 5)
    assert (o.ok, o.invariant) == (False, "liveness"), (o.invariant, o.detail)
    assert "no leader committed in its epoch within 8 s of the final heal" in o.detail


@pytest.mark.parametrize("unsafe", [(), ("no-pre-vote",)])
def test_the_same_schedule_recovers_with_the_timer_kept(unsafe):
    o = run_seed(SimOptions(unsafe=unsafe), 5)
    assert o.invariant != "liveness", o.detail


def test_the_bound_is_a_number_of_election_timeouts():
    assert bound_ms(1000) == BOUND_TIMEOUTS * 1000 == 8000


def test_an_op_left_without_completion_breaks_liveness():
    rt = Runtime(1)
    rt.now = 40_000.0
    watch = LivenessWatch(rt, [1, 2, 3], 30_000.0, 1000)
    done = [{"index": 0, "time": 1, "type": "invoke", "process": 3, "f": "append", "value": 1},
            {"index": 1, "time": 2, "type": "info", "process": 3, "f": "append", "value": 1},
            {"index": 2, "time": 3, "type": "invoke", "process": 1001, "f": "describe-quorum", "value": None}]
    watch.check_ops(done)                       # a monitor sample in flight is no client op
    with pytest.raises(InvariantBroken) as e:
        watch.check_ops(done + [{"index": 3, "time": 4, "type": "invoke", "process": 4, "f": "read",
                                 "value": {}}])
    assert e.value.violation.name == "liveness" and "1 client op(s) never completed" in str(e.value)
    with pytest.raises(InvariantBroken):        # no leader seen at all
        watch.check_leader()
    watch.led_at = 37_000.0                     # 7 s after the heal: within 8
    watch.check_leader()
    watch.led_at = 38_500.0
    with pytest.raises(InvariantBroken):
        watch.check_leader()


def test_the_switch_brings_no_pre_vote_along():
    """The livelock shows only in elections without Pre-Vote: the switch implies no-pre-vote
    wherever it is used (kraft/core/unsafe.py IMPLIES), so `simulate --unsafe
    reset-election-timer` alone plants the bug as it was found."""
    from kraft.core.unsafe import Unsafe
    policy = Unsafe.of(("forget-vote", "reset-election-timer"))
    assert policy.switches == {"forget-vote", "reset-election-timer", "no-pre-vote"}
    assert Unsafe.of(("no-pre-vote",)).switches == {"no-pre-vote"}
    assert not Unsafe.of(()).no_pre_vote
