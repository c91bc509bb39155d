"""generator.core: what each combinator gives which thread, its Waits, exhaustion and updates."""
import random

import pytest

from generator import (Any, Context, Cycle, Fn, Generator, Limit, Mix, Once, OnThreads, Seq, Sleep, Stagger,
                       TimeLimit, Wait, WaitFor, clients, nemesis)
from generator.core import soonest


def ctx(t=0.0, thread=0, seed=0, view=None):
    return Context(t, thread, thread, random.Random(seed), view)


def op(i, f="write"):
    return {"f": f, "value": i}


class Probe(Generator):
    """Gives ``ops`` in turn (each a dict, a Wait or None) and keeps what ``update`` saw."""

    def __init__(self, *ops):
        self.ops, self.updates = list(ops), []

    def op(self, c):
        return self.ops.pop(0) if self.ops else None

    def update(self, c, invoke, completion):
        self.updates.append((c.thread, invoke["value"], completion["type"]))


def upd(gen, value, thread=0, type_="ok"):
    gen.update(ctx(thread=thread), op(value), {"type": type_, "f": "write", "value": value})


def test_soonest():
    assert soonest([Wait(3), Wait(1.5), Wait(2)]) == Wait(1.5)
    assert soonest([]) is None


def test_fn_is_endless_and_sees_the_context():
    g = Fn(lambda c: {"f": "read", "value": (c.thread, c.time, c.view)})
    assert g.op(ctx(2.5, 3, view="v")) == {"f": "read", "value": (3, 2.5, "v")}
    assert [g.op(ctx(t)) for t in range(100)][-1]["value"][1] == 99


def test_once_gives_a_copy_to_the_first_asker_only():
    src = op(1)
    g = Once(src)
    out = g.op(ctx(thread=4))
    assert out == src and out is not src
    assert g.op(ctx(thread=4)) is None and g.op(ctx(thread=5)) is None


def test_sleep_waits_from_the_first_ask_then_is_done():
    g = Sleep(5)
    assert g.op(ctx(10)) == Wait(15)
    assert g.op(ctx(12, thread=1)) == Wait(15)
    assert g.op(ctx(15)) is None
    assert Sleep(0).op(ctx(3)) is None
    with pytest.raises(ValueError, match="seconds must be >= 0"):
        Sleep(-1)


def test_seq_runs_items_in_order_whoever_asks():
    g = Seq([op(1), Sleep(2), Probe(op(2), op(3)), op(4)])
    assert g.op(ctx(0, thread=0)) == op(1)
    assert g.op(ctx(0, thread=1)) == Wait(2)
    assert g.op(ctx(1, thread=2)) == Wait(2)
    assert g.op(ctx(2, thread=1)) == op(2)
    assert g.op(ctx(2, thread=0)) == op(3)
    assert g.op(ctx(2, thread=0)) == op(4)
    assert g.op(ctx(2)) is None and g.op(ctx(9)) is None


def test_seq_forwards_updates_to_the_current_item_only():
    a, b = Probe(op(1)), Probe(op(2))
    g = Seq([a, b])
    g.op(ctx())
    upd(g, 1)
    assert g.op(ctx()) == op(2)          # a is over
    upd(g, 2)
    assert a.updates == [(0, 1, "ok")] and b.updates == [(0, 2, "ok")]
    assert g.op(ctx()) is None
    upd(g, 3)                             # done: nobody to tell
    assert b.updates == [(0, 2, "ok")]


def test_cycle_makes_a_fresh_generator_each_time():
    made = []

    def make():
        made.append(Seq([op(len(made)), Sleep(1)]))
        return made[-1]
    g = Cycle(make)
    assert g.op(ctx(0)) == op(0) and g.op(ctx(0)) == Wait(1)
    assert g.op(ctx(1)) == op(1) and len(made) == 2
    upd(g, 1)                             # forwarded to the current one (no error for a Seq of these)
    assert [g.op(ctx(t)) for t in (1, 2, 2)] == [Wait(2), op(2), Wait(3)]


def test_cycle_times_and_update_forwarding():
    probes = []

    def make():
        probes.append(Probe(op(len(probes))))
        return probes[-1]
    g = Cycle(make, times=2)
    assert g.op(ctx()) == op(0)
    upd(g, 0)
    assert g.op(ctx()) == op(1)
    upd(g, 1)
    assert g.op(ctx()) is None and g.op(ctx()) is None
    assert [p.updates for p in probes] == [[(0, 0, "ok")], [(0, 1, "ok")]]
    assert Cycle(make, times=0).op(ctx()) is None


def test_cycle_of_generators_done_at_once_raises_instead_of_spinning():
    with pytest.raises(RuntimeError, match="1000 times"):
        Cycle(lambda: Seq([])).op(ctx())


def test_mix_draws_from_the_threads_rng_with_weights_and_drops_exhausted_ones():
    g = Mix([Fn(lambda c: op("a")), Fn(lambda c: op("b"))], weights=[3, 1])
    picks = [g.op(ctx(seed=s))["value"] for s in range(400)]
    assert 250 < picks.count("a") < 350
    g2 = Mix([Fn(lambda c: op("a")), Fn(lambda c: op("b"))])
    r = random.Random(7)
    seq1 = [g2.op(Context(0, 0, 0, r, None))["value"] for _ in range(30)]
    r = random.Random(7)
    assert seq1 == [g2.op(Context(0, 0, 0, r, None))["value"] for _ in range(30)]
    g3 = Mix([Once(op(1)), Limit(2, Fn(lambda c: op(2)))])
    assert sorted(g3.op(ctx())["value"] for _ in range(3)) == [1, 2, 2]
    assert g3.op(ctx()) is None and g3.gens == []
    with pytest.raises(ValueError, match="one weight per generator"):
        Mix([Once(op(1))], weights=[1, 2])


def test_mix_passes_a_wait_through_and_forwards_updates_to_all():
    a, b = Probe(Wait(5)), Probe(Wait(5))
    g = Mix([a, b])
    assert g.op(ctx()) == Wait(5)
    upd(g, 9)
    assert a.updates == b.updates == [(0, 9, "ok")]


def test_any_gives_the_first_op_else_the_soonest_wait_else_none():
    g = Any([Probe(Wait(9), Wait(9)), Probe(Wait(4), op(1)), Probe(op(2))])
    assert g.op(ctx()) == op(2)                 # first two wait; the third has an op
    assert g.op(ctx()) == op(1)
    assert g.op(ctx()) is None


def test_any_keeps_every_child_for_other_threads_and_forwards_updates():
    a = Probe(op(1), op(2))
    g = Any([clients(Fn(lambda c: op(c.thread))), nemesis(a)])
    assert g.op(ctx(thread=3)) == op(3)
    assert g.op(ctx(thread="nemesis")) == op(1)
    assert g.op(ctx(thread=5)) == op(5)
    assert g.op(ctx(thread="nemesis")) == op(2)
    assert g.op(ctx(thread="nemesis")) is None
    assert g.op(ctx(thread=1)) == op(1)
    upd(g, 1, thread="nemesis")
    upd(g, 2, thread=0)                          # a client's op: not the nemesis generator's
    assert a.updates == [("nemesis", 1, "ok")]
    assert Any([]).op(ctx()) is None


def test_on_threads_clients_and_nemesis():
    g = OnThreads(lambda t: t in (1, 2), Fn(lambda c: op(c.thread)))
    assert [g.op(ctx(thread=t)) for t in (0, 1, 2, "nemesis")] == [None, op(1), op(2), None]
    assert clients(Fn(lambda c: op(0))).op(ctx(thread="nemesis")) is None
    assert clients(Fn(lambda c: op(0))).op(ctx(thread=0)) == op(0)
    assert nemesis(Fn(lambda c: op(0))).op(ctx(thread=0)) is None
    assert nemesis(Fn(lambda c: op(0))).op(ctx(thread="nemesis")) == op(0)


def test_limit_counts_ops_only_and_forwards_updates():
    p = Probe(Wait(1), op(1), op(2), op(3))
    g = Limit(2, p)
    assert [g.op(ctx()) for _ in range(4)] == [Wait(1), op(1), op(2), None]
    upd(g, 2)
    assert p.updates == [(0, 2, "ok")] and p.ops == [op(3)]
    assert Limit(0, Fn(lambda c: op(0))).op(ctx()) is None


def test_time_limit_from_the_first_ask_and_clips_waits():
    p = Probe(op(1), Wait(100), Wait(3))
    g = TimeLimit(5, p)
    assert g.op(ctx(10)) == op(1)
    assert g.op(ctx(11)) == Wait(15)             # clipped to the limit
    assert g.op(ctx(12)) == Wait(3)              # sooner ones pass
    upd(g, 1)
    assert p.updates == [(0, 1, "ok")]
    assert g.op(ctx(15)) is None and g.op(ctx(16)) is None
    assert TimeLimit(1, Fn(lambda c: None)).op(ctx()) is None


def test_stagger_spaces_ops_at_the_rate_on_average():
    g = Stagger(10, Fn(lambda c: op(c.time)))
    rng, t, times = random.Random(1), 0.0, []
    while len(times) < 2000:
        out = g.op(Context(t, 0, 0, rng, None))
        if isinstance(out, Wait):
            assert out.until > t
            t = out.until
        else:
            times.append(t)
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert all(0 <= x < 0.2 for x in gaps)
    assert 9 < len(times) / times[-1] < 11


def test_stagger_does_not_bank_idle_time():
    g = Stagger(10, Fn(lambda c: op(0)))
    rng = random.Random(2)
    first = g.op(Context(0, 0, 0, rng, None))
    assert isinstance(first, Wait) and g.op(Context(first.until, 0, 0, rng, None)) == op(0)
    # nobody asked for 100 s (1000 periods); then only about one period's worth may come at once
    bursts = []
    for k in range(1, 51):
        burst = 0
        while isinstance(g.op(Context(100.0 * k, 0, 0, rng, None)), dict):
            burst += 1
        bursts.append(burst)
    assert max(bursts) < 10 and sum(bursts) / len(bursts) < 3


def test_stagger_passes_inner_waits_and_none_and_rejects_bad_rates():
    g = Stagger(1000, Probe(Wait(7), None))
    outs = [g.op(ctx(t)) for t in (1, 2, 3)]
    assert Wait(7) in outs and outs[-1] is None
    for bad in (0, -1, float("nan")):
        with pytest.raises(ValueError, match="rate must be > 0"):
            Stagger(bad, Once(op(0)))


def test_wait_for_polls_until_the_condition_holds():
    g = WaitFor(lambda c: c.view == "ready", timeout_s=10, poll_s=0.5)
    assert g.op(ctx(1)) == Wait(1.5)
    assert g.op(ctx(1.5)) == Wait(2.0)
    assert g.op(ctx(2, view="ready")) is None


def test_wait_for_times_out_and_calls_on_timeout():
    seen = []
    g = WaitFor(lambda c: False, timeout_s=2, poll_s=5, on_timeout=lambda c: seen.append(c.time))
    assert g.op(ctx(1)) == Wait(3)               # the poll is clipped to the timeout
    assert g.op(ctx(3)) is None and seen == [3]

    def fail(c):
        raise AssertionError("no leader")
    with pytest.raises(AssertionError, match="no leader"):
        s = Seq([WaitFor(lambda c: False, 1, on_timeout=fail), op(1)])
        s.op(ctx(0))
        s.op(ctx(1))
    with pytest.raises(ValueError, match="timeout_s must be > 0"):
        WaitFor(lambda c: True, 0)


def test_a_jepsen_like_composition():
    """Clients write at a pace for 10 s while the nemesis starts and stops a fault."""
    gen = TimeLimit(10, Any([clients(Stagger(5, Fn(lambda c: op(c.thread)))),
                             nemesis(Cycle(lambda: Seq([Sleep(2), {"f": "start"}, Sleep(1), {"f": "stop"}])))]))
    t, out, rng = 0.0, [], random.Random(0)
    while True:
        waits = []
        for thread in (0, 1, "nemesis"):
            a = gen.op(Context(t, thread, thread, rng, None))
            while isinstance(a, dict):           # ops complete at once; the thread asks again
                out.append((t, thread, a["f"]))
                a = gen.op(Context(t, thread, thread, rng, None))
            if isinstance(a, Wait):
                waits.append(a.until)
        if not waits:
            break
        t = min(waits)
    nem = [(x, f) for x, th, f in out if th == "nemesis"]
    assert [f for _, f in nem] == ["start", "stop"] * 3           # the 4th would start at 11
    assert [x for x, _ in nem][:4] == [2, 3, 5, 6]
    assert all(x < 10 for x, _, _ in out)
    assert 30 < sum(1 for _, th, _ in out if th != "nemesis") < 70
