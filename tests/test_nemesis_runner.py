import asyncio
import random
import threading
import time

from nemesis.runner import run_nemesis
from nemesis.schedule import FaultSchedule


class FakeHistory:
    def __init__(self):
        self.ops = []

    def invoke(self, process, f, value, node=None):
        op = {"index": len(self.ops), "type": "invoke", "process": process, "f": f, "value": value}
        self.ops.append(op)
        return op

    def complete(self, invoke_op, type, value, error=None):
        op = {"index": len(self.ops), "type": type, "process": invoke_op["process"],
              "f": invoke_op["f"], "value": value}
        if error is not None:
            op["error"] = error
        self.ops.append(op)
        return op


class FakeController:
    def __init__(self, fail_start=False, slow_stop_s=0.0):
        self.calls = []
        self.fail_start = fail_start
        self.slow_stop_s = slow_stop_s
        self.threads = set()

    def start(self, fault):
        self.threads.add(threading.current_thread().name)
        self.calls.append(("start", fault.name))
        if self.fail_start:
            raise RuntimeError("n2: iptables missing")
        return {"kind": fault.kind, "targets": ["n1"]}

    def stop(self, fault):
        time.sleep(self.slow_stop_s)
        self.calls.append(("stop", fault.name))
        return {"kind": fault.kind, "targets": ["n1"]}


def schedule(seed=3, interval=0.02, duration=0.02):
    return FaultSchedule(["kill", "partition", "pause"], random.Random(seed), interval, duration)


def check_pairs(ops):
    """Every invoke is followed by its info; starts and stops alternate for the same name."""
    assert len(ops) % 2 == 0
    for inv, done in zip(ops[::2], ops[1::2]):
        assert inv["type"] == "invoke" and done["type"] == "info"
        assert inv["f"] == done["f"] and inv["process"] == "nemesis" == done["process"]
    fs = [o["f"] for o in ops[::2]]
    for start, stop in zip(fs[::2], fs[1::2]):
        assert start.startswith("start-") and stop == "stop-" + start[len("start-"):]


def test_runs_faults_until_stop_event():
    async def main():
        hist, ctl, stop = FakeHistory(), FakeController(), asyncio.Event()
        seen = []
        task = asyncio.create_task(run_nemesis(ctl, schedule(), hist, stop, seen.append))
        await asyncio.sleep(0.25)
        stop.set()
        await asyncio.wait_for(task, 2)
        return hist, ctl, seen
    hist, ctl, seen = asyncio.run(main())
    check_pairs(hist.ops)
    starts = [o for o in hist.ops if o["f"].startswith("start-") and o["type"] == "invoke"]
    assert len(starts) >= 3
    assert {o["f"] for o in starts[:3]} == {"start-kill", "start-partition", "start-pause"}
    assert starts[0]["value"]["kind"] and hist.ops[1]["value"]["targets"] == ["n1"]
    assert seen[-1] is None and [s for s in seen if s] == [o["f"][len("start-"):] for o in starts]
    assert seen[1] is None
    assert ctl.calls[-1][0] == "stop"
    assert all(not t.startswith("MainThread") for t in ctl.threads)


def test_same_seed_same_fault_sequence():
    def run():
        async def main():
            hist, stop = FakeHistory(), asyncio.Event()
            task = asyncio.create_task(run_nemesis(FakeController(), schedule(seed=11), hist, stop))
            await asyncio.sleep(0.2)
            stop.set()
            await task
            return [(o["f"], o["value"]["kind"]) for o in hist.ops if o["type"] == "invoke"]
        return asyncio.run(main())
    a, b = run(), run()
    n = min(len(a), len(b))
    assert n >= 4 and a[:n] == b[:n]


def test_stop_event_during_fault_heals_at_once():
    async def main():
        hist, ctl, stop = FakeHistory(), FakeController(), asyncio.Event()
        task = asyncio.create_task(run_nemesis(ctl, schedule(interval=0.01, duration=30), hist, stop))
        await asyncio.sleep(0.1)
        t0 = time.monotonic()
        stop.set()
        await asyncio.wait_for(task, 2)
        return hist, ctl, time.monotonic() - t0
    hist, ctl, took = asyncio.run(main())
    assert took < 1
    check_pairs(hist.ops)
    assert [c[0] for c in ctl.calls] == ["start", "stop"]


def run_then_cancel(ctl, sched, after_s: float):
    """Run the nemesis, cancel it after ``after_s`` seconds; returns the fake history."""
    async def main():
        hist = FakeHistory()
        task = asyncio.create_task(run_nemesis(ctl, sched, hist, asyncio.Event()))
        await asyncio.sleep(after_s)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        return hist
    return asyncio.run(main())


def test_cancel_during_fault_heals():
    ctl = FakeController()
    hist = run_then_cancel(ctl, schedule(interval=0.01, duration=30), 0.1)
    check_pairs(hist.ops)
    assert [c[0] for c in ctl.calls] == ["start", "stop"]


def test_cancel_during_stop_records_it_once():
    ctl = FakeController(slow_stop_s=0.3)
    hist = run_then_cancel(ctl, schedule(interval=0.01, duration=0.01), 0.15)  # inside the slow stop
    check_pairs(hist.ops)
    assert [c[0] for c in ctl.calls] == ["start", "stop"]


def test_failed_start_is_info_with_error_and_still_stopped():
    async def main():
        hist, ctl, stop = FakeHistory(), FakeController(fail_start=True), asyncio.Event()
        task = asyncio.create_task(run_nemesis(ctl, schedule(interval=0.01, duration=0.01), hist, stop))
        await asyncio.sleep(0.05)
        stop.set()
        await task
        return hist
    hist = asyncio.run(main())
    check_pairs(hist.ops)
    assert hist.ops[1]["error"] == "n2: iptables missing"
    assert hist.ops[1]["value"] == {"kind": hist.ops[0]["value"]["kind"]}


def test_stop_event_before_first_fault_records_nothing():
    async def main():
        hist, ctl, stop = FakeHistory(), FakeController(), asyncio.Event()
        stop.set()
        await run_nemesis(ctl, schedule(interval=30), hist, stop)
        return hist, ctl
    hist, ctl = asyncio.run(main())
    assert hist.ops == [] and ctl.calls == []
