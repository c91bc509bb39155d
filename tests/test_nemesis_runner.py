"""The nemesis as a thread of the interpreter: nemesis_generator + NemesisWorker (what
nemesis/runner.py did): faults until stop, healed and recorded at the end."""
import asyncio
import itertools
import random

import pytest

from generator import Interpreter, TimeLimit, nemesis
from nemesis.schedule import nemesis_generator
from nemesis.worker import NemesisWorker
from tests.nemesis_fakes import FakeController, FakeHistory, check_nemesis_pairs

NAMES = ["kill", "partition", "pause"]


def interp(ctl, hist, seed=3, interval=0.02, duration=0.02, mode="serial", names=NAMES, time_limit=None):
    gen = nemesis(nemesis_generator(names, random.Random(seed), mode, interval, duration, n_nodes=5))
    if time_limit is not None:
        gen = TimeLimit(time_limit, gen)
    return Interpreter(gen, {"nemesis": NemesisWorker(ctl, hist)}, itertools.count().__next__, seed)


def check_alternating(ops):
    """Pairs as check_nemesis_pairs; in serial mode starts and stops alternate per family."""
    fs = [inv["f"] for inv, _ in check_nemesis_pairs(ops)]
    for start, stop in zip(fs[::2], fs[1::2]):
        assert start.startswith("start-") and stop == "stop-" + start[len("start-"):]
    return fs


async def run_until(it, done, timeout_s=60.0):
    """Run the interpreter until ``done()`` holds (polled every 5 ms), then set its stop
    event and wait for the heal. No assumption on how fast the machine is: a loaded one only
    takes longer. Raises TimeoutError if ``done()`` never holds within ``timeout_s``."""
    stop = asyncio.Event()
    task = asyncio.create_task(it.run(stop))

    async def until_done():
        while not done() and not task.done():
            await asyncio.sleep(0.005)
    await asyncio.wait_for(until_done(), timeout_s)
    stop.set()
    await asyncio.wait_for(task, 10)


def started(hist) -> list[str]:
    """The fault starts invoked so far, in order."""
    return [o["f"] for o in hist.ops if o["type"] == "invoke" and o["f"].startswith("start-")]


def overlaps(invokes) -> tuple[bool, set[str]]:
    """(whether some fault started while one of another family was still active, the
    families still active after the last of ``invokes``, nemesis invoke ops in order)."""
    active, seen = set(), False
    for o in invokes:
        fam = o["f"].split("-", 1)[1]
        if o["f"].startswith("start-"):
            seen |= bool(active)
            active.add(fam)
        else:
            active.discard(fam)
    return seen, active


def any_overlap(hist) -> bool:
    """Whether some fault has started while one of another family was still active."""
    return overlaps(o for o in hist.ops if o["type"] == "invoke")[0]


def test_runs_faults_until_stop_event():
    hist, ctl = FakeHistory(), FakeController()
    asyncio.run(run_until(interp(ctl, hist), lambda: len(started(hist)) >= 3))
    fs = check_alternating(hist.ops)
    starts = [f for f in fs if f.startswith("start-")]
    assert len(starts) >= 3
    assert set(starts[:3]) == {"start-kill", "start-partition", "start-pause"}
    assert hist.ops[0]["value"]["kind"] and hist.ops[1]["value"]["targets"] == ["n1"]
    assert ctl.calls[-1][0] == "stop" and ctl.slots == {}
    assert all(o["process"] == "nemesis" for o in hist.ops)
    assert not any(t == "MainThread" for t in ctl.threads)


def test_same_seed_same_fault_sequence():
    def once(seed):
        hist = FakeHistory()
        asyncio.run(run_until(interp(FakeController(), hist, seed=seed), lambda: len(started(hist)) >= 4))
        return [(o["f"], o["value"]["kind"]) for o in hist.ops if o["type"] == "invoke"]
    a, b, c = once(11), once(11), once(12)
    n = min(len(a), len(b), len(c))
    assert n >= 4 and a[:n] == b[:n] and a[:n] != c[:n]


def test_stop_event_during_a_fault_ends_at_once_and_heals():
    hist, ctl = FakeHistory(), FakeController()

    async def main():
        stop = asyncio.Event()
        task = asyncio.create_task(interp(ctl, hist, interval=0.01, duration=600).run(stop))
        await asyncio.sleep(0.1)
        stop.set()
        await asyncio.wait_for(task, 10)        # well before the fault's 600 s
    asyncio.run(main())
    check_alternating(hist.ops)
    assert [c[0] for c in ctl.calls] == ["start", "stop"]


def test_the_time_limit_ends_the_nemesis_and_heals():
    hist, ctl = FakeHistory(), FakeController()
    asyncio.run(asyncio.wait_for(interp(ctl, hist, interval=0.01, duration=600, time_limit=0.1)
                                 .run(asyncio.Event()), 10))
    check_alternating(hist.ops)
    assert [c[0] for c in ctl.calls] == ["start", "stop"]


def run_then_cancel(ctl, after_s, **kw):
    """Run the nemesis, cancel it after ``after_s`` seconds; returns the fake history."""
    async def main():
        hist = FakeHistory()
        task = asyncio.create_task(interp(ctl, hist, **kw).run(asyncio.Event()))
        await asyncio.sleep(after_s)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return hist
    return asyncio.run(main())


def test_cancel_during_fault_heals():
    ctl = FakeController()
    hist = run_then_cancel(ctl, 0.1, interval=0.01, duration=600)
    check_alternating(hist.ops)
    assert [c[0] for c in ctl.calls] == ["start", "stop"]


def test_cancel_during_stop_records_it_once():
    ctl = FakeController(stop_s=0.3)
    hist = run_then_cancel(ctl, 0.15, interval=0.01, duration=0.01)     # inside the slow stop
    check_alternating(hist.ops)
    assert [c[0] for c in ctl.calls] == ["start", "stop"] and ctl.max_in_flight == 1


def test_cancel_during_start_records_it_then_stops_it():
    ctl = FakeController(start_s=0.3)
    hist = run_then_cancel(ctl, 0.1, interval=0.01, duration=600)
    check_alternating(hist.ops)
    assert [c[0] for c in ctl.calls] == ["start", "stop"] and ctl.max_in_flight == 1


def test_failed_start_is_info_with_error_and_still_stopped():
    hist, ctl = FakeHistory(), FakeController(fail_start=True)
    asyncio.run(run_until(interp(ctl, hist, interval=0.01, duration=0.01), lambda: len(hist.ops) >= 2))
    check_alternating(hist.ops)
    assert hist.ops[1]["error"] == "n2: iptables missing"
    assert hist.ops[1]["value"] == {"kind": hist.ops[0]["value"]["kind"]}
    assert hist.ops[2]["f"] == "stop-" + hist.ops[0]["f"][len("start-"):]


def test_stop_event_before_first_fault_records_nothing():
    async def main():
        hist, ctl, stop = FakeHistory(), FakeController(), asyncio.Event()
        stop.set()
        await interp(ctl, hist, interval=30).run(stop)
        return hist, ctl
    hist, ctl = asyncio.run(main())
    assert hist.ops == [] and ctl.calls == []


def test_overlap_mode_never_has_two_nemesis_ops_in_flight():
    hist, ctl = FakeHistory(), FakeController(start_s=0.005, stop_s=0.005)
    names = ["kill", "partition", "pause", "packet", "flap"]
    asyncio.run(run_until(interp(ctl, hist, mode="overlap", names=names, interval=0.02, duration=0.05),
                          lambda: any_overlap(hist) and len(started(hist)) >= 5))
    pairs = check_nemesis_pairs(hist.ops)
    assert ctl.max_in_flight == 1
    # faults of different families overlapped: some start came while another was active
    overlapped, active = overlaps(inv for inv, _ in pairs)
    assert overlapped and active == set() and ctl.slots == {}
