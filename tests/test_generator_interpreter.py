"""generator.interpreter: threads asking one generator, each handing its ops to its worker."""
import asyncio
import itertools
import types

import pytest

from generator import Any, Fn, Generator, Interpreter, Limit, Once, Seq, Sleep, Wait, clients, nemesis


class FakeWorker:
    """Records each op sent; takes ``delay_s``; the outcome type is ``outcome(op)`` (default ok);
    raises ``raise_on(op)`` when that gives an exception."""

    def __init__(self, shared, thread, delay_s=0.0, outcome=None, raise_on=None):
        self.shared, self.thread, self.delay_s = shared, thread, delay_s
        self.outcome, self.raise_on = outcome or (lambda op: "ok"), raise_on or (lambda op: None)
        self.closed = False

    async def invoke(self, op, process):
        s = self.shared
        s.sent.append((self.thread, process, op))
        s.in_flight += 1
        s.max_in_flight = max(s.max_in_flight, s.in_flight)
        try:
            await asyncio.sleep(self.delay_s)
            err = self.raise_on(op)
            if err is not None:
                raise err
        finally:
            s.in_flight -= 1
        type_ = self.outcome(op)
        s.done.append((self.thread, process, op))
        return types.SimpleNamespace(type=type_, op={"type": type_, "f": op["f"], "value": op.get("value"),
                                                     "process": process})

    async def close(self):
        self.closed = True


def shared():
    return types.SimpleNamespace(sent=[], done=[], in_flight=0, max_in_flight=0)


def setup(gen, threads=(0, 1, 2), seed=1, **kw):
    s = shared()
    workers = {t: FakeWorker(s, t, **kw) for t in threads}
    return s, workers, Interpreter(gen, workers, itertools.count(100).__next__, seed)


def run(interp, stop=None, timeout_s=10.0):
    async def main():
        await asyncio.wait_for(interp.run(stop or asyncio.Event()), timeout_s)
    asyncio.run(main())


def op(v, f="w"):
    return {"f": f, "value": v}


def test_threads_send_in_parallel_and_all_ops_are_sent_once():
    counter = itertools.count()
    s, workers, it = setup(Limit(12, Fn(lambda c: op(next(counter)))), delay_s=0.02)
    run(it)
    assert sorted(o["value"] for _, _, o in s.done) == list(range(12))
    assert s.max_in_flight == 3
    assert {t for t, _, _ in s.sent} == {0, 1, 2}
    assert all(w.closed for w in workers.values())


def test_each_thread_has_one_op_in_flight_and_its_own_process():
    s, workers, it = setup(Limit(30, Fn(lambda c: op(c.thread))), delay_s=0.001)
    run(it)
    assert all(o["value"] == t for t, _, o in s.sent)
    procs = {t: {p for th, p, _ in s.sent if th == t} for t in workers}
    assert all(len(p) == 1 for p in procs.values())
    assert len(set().union(*procs.values())) == 3          # distinct per thread


def test_a_wait_wakes_when_another_threads_op_completes():
    class Gate(Generator):
        """Thread 0 writes once; thread 1 waits (for ages) until that write completed."""

        def __init__(self):
            self.written, self.asked = False, {0: 0, 1: 0}

        def op(self, c):
            self.asked[c.thread] += 1
            if c.thread == 0:
                return op("x") if self.asked[0] == 1 else None
            if self.written:
                self.written = None                  # y once, then done
                return op("y")
            return None if self.written is None or self.asked[1] > 5 else Wait(c.time + 1000)

        def update(self, c, invoke, completion):
            if invoke["value"] == "x":
                self.written = True
    gen = Gate()
    s, workers, it = setup(gen, threads=(0, 1), delay_s=0.05)
    run(it)                                                  # 1000 s would time out
    assert [(t, o["value"]) for t, _, o in s.done] == [(0, "x"), (1, "y")]
    assert gen.asked[1] == 3              # asked at start, woken by the completion, then done


def test_a_wait_wakes_at_its_time():
    s, workers, it = setup(Seq([Sleep(0.05), op(1)]), threads=(0,))
    run(it)
    assert [o for _, _, o in s.done] == [op(1)]


def test_info_gives_a_client_thread_a_fresh_process_but_the_nemesis_stays_nemesis():
    gen = Any([clients(Limit(6, Fn(lambda c: op(len(s.sent))))), nemesis(Limit(3, Fn(lambda c: op("n"))))])
    s, workers, it = setup(gen, threads=(0, "nemesis"), outcome=lambda o: "info")
    run(it)
    client = [p for t, p, _ in s.sent if t == 0]
    assert len(client) == 6 and len(set(client)) == 6 and all(isinstance(p, int) for p in client)
    assert [p for t, p, _ in s.sent if t == "nemesis"] == ["nemesis"] * 3


def test_ok_and_fail_keep_the_process():
    n = itertools.count()
    s, workers, it = setup(Limit(6, Fn(lambda c: op(next(n)))), threads=(0,),
                           outcome=lambda o: "fail" if o["value"] % 2 else "ok")
    run(it)
    assert len({p for _, p, _ in s.sent}) == 1


def test_stop_ends_an_endless_generator_and_in_flight_ops_finish():
    s, workers, it = setup(Fn(lambda c: op(0)), delay_s=0.01)

    async def main():
        stop = asyncio.Event()
        task = asyncio.create_task(it.run(stop))
        await asyncio.sleep(0.1)
        stop.set()
        await asyncio.wait_for(task, 10)
    asyncio.run(main())
    assert len(s.sent) >= 3 and len(s.sent) == len(s.done) and s.in_flight == 0
    assert all(w.closed for w in workers.values())


def test_stop_wakes_threads_waiting_for_ages():
    s, workers, it = setup(Fn(lambda c: Wait(c.time + 1000)))

    async def main():
        stop = asyncio.Event()
        task = asyncio.create_task(it.run(stop))
        await asyncio.sleep(0.05)
        stop.set()
        await asyncio.wait_for(task, 10)
    asyncio.run(main())
    assert s.sent == [] and all(w.closed for w in workers.values())


def test_a_worker_exception_propagates_and_every_worker_is_closed():
    s, workers, it = setup(Fn(lambda c: op(c.thread)), delay_s=0.01,
                           raise_on=lambda o: ValueError("kv workload has no op 'w'") if o["value"] == 1 else None)
    with pytest.raises(ValueError, match="no op 'w'"):
        run(it)
    assert all(w.closed for w in workers.values())
    assert s.in_flight == 0                     # the other threads were cancelled, not left running


def test_a_generator_exception_propagates():
    def boom(c):
        raise RuntimeError("bad generator")
    s, workers, it = setup(Fn(boom))
    with pytest.raises(RuntimeError, match="bad generator"):
        run(it)
    assert all(w.closed for w in workers.values())


def test_cancellation_closes_the_workers():
    s, workers, it = setup(Fn(lambda c: op(0)), delay_s=10)

    async def main():
        task = asyncio.create_task(it.run(asyncio.Event()))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    asyncio.run(main())
    assert all(w.closed for w in workers.values()) and s.done == []


def test_updates_see_the_invoke_and_completion_with_the_threads_context():
    seen = []

    class G(Generator):
        def op(self, c):
            return op(c.thread)

        def update(self, c, invoke, completion):
            seen.append((c.thread, c.process, invoke["value"], completion["type"], completion["process"]))
    s, workers, it = setup(Limit(4, G()), threads=(0, 1))
    run(it)
    assert len(seen) == 4
    assert all(th == v and proc == cproc and t == "ok" for th, proc, v, t, cproc in seen)


def test_view_on_op_and_seeded_thread_rngs():
    def once(seed):
        ops, views = [], iter(range(1000))
        s = shared()
        workers = {t: FakeWorker(s, t) for t in (0, 1)}
        gen = Limit(10, Fn(lambda c: op((c.thread, c.view, round(c.rng.random(), 9)))))
        it = Interpreter(gen, workers, itertools.count().__next__, seed, view=lambda: next(views),
                         on_op=lambda thread, o: ops.append((thread, o)))
        run(it)
        assert [(t, o) for t, _, o in s.sent] == ops            # told before each op is sent
        return sorted(o["value"] for _, o in ops)
    a, b, c = once(5), once(5), once(6)
    assert len(a) == 10 and len({v[1] for v in a}) == 10        # view read at each ask
    assert [(t, r) for t, _, r in a] == [(t, r) for t, _, r in b]
    assert [r for _, _, r in a] != [r for _, _, r in c]


def test_nothing_to_do_ends_at_once():
    s, workers, it = setup(Once(op(1)))
    run(it)
    assert len(s.done) == 1 and all(w.closed for w in workers.values())
