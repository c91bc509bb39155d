"""The search agrees with a brute-force oracle on thousands of random small histories.

Random histories over a few processes, with overlapping ops, crashed ops
(open to +infinity) and wrong outputs, for every model; partitioned and
unpartitioned kv checks must agree as well (P-compositionality).
"""
from __future__ import annotations

import random

import pytest

from checkers.linearizability.checker import check_operations
from checkers.linearizability.models import make_model
from checkers.linearizability.operation import UNKNOWN, Operation

from .linearizability_oracle import brute_force

VALUES = [None, 0, 1, 2]


def random_intervals(rng: random.Random, n: int, processes: int):
    """n (process, call, ret) intervals, each process sequential; ret None = crashed."""
    t = {p: 0 for p in range(processes)}
    out = []
    for _ in range(n):
        p = rng.randrange(processes)
        call = t[p] + rng.randint(0, 3)
        ret = call + rng.randint(0, 6)
        crashed = rng.random() < 0.15
        out.append((p, call, None if crashed else ret))
        t[p] = 10**6 if crashed else ret + 1  # a crashed process never issues again
    return [x for x in out if x[1] < 10**6]


def register_ops(rng: random.Random, n: int, keys=(None,)) -> list[Operation]:
    ops = []
    for p, call, ret in random_intervals(rng, n, 3):
        f = rng.choice(["read", "write", "cas"])
        key = rng.choice(keys)
        if f == "read":
            out = UNKNOWN if ret is None else rng.choice(VALUES)
            ops.append(Operation(p, f, None, out, call, ret, key=key))
        elif f == "write":
            ops.append(Operation(p, f, rng.choice(VALUES[1:]), None, call, ret, key=key))
        else:
            out = UNKNOWN if ret is None else rng.choice([True, True, False])
            ops.append(Operation(p, f, (rng.choice(VALUES), rng.choice(VALUES[1:])), out, call, ret, key=key))
    return ops


@pytest.mark.parametrize("seed", range(6))
def test_register_matches_oracle(seed):
    rng = random.Random(seed)
    model = make_model("register")
    verdicts = {True: 0, False: 0}
    for _ in range(400):
        ops = register_ops(rng, rng.randint(1, 7))
        expected = brute_force(model, ops)
        got = check_operations(model, ops, explain=False).valid
        assert got is expected, ops
        verdicts[expected] += 1
    assert verdicts[True] > 20 and verdicts[False] > 20  # both outcomes exercised


@pytest.mark.parametrize("seed", range(4))
def test_kv_partitioned_and_whole_match_oracle(seed):
    rng = random.Random(100 + seed)
    model = make_model("kv")
    for _ in range(300):
        ops = register_ops(rng, rng.randint(1, 7), keys=("a", "b"))
        expected = brute_force(model, ops, per_key=True)
        assert check_operations(model, ops, partitioned=True, explain=False).valid is expected, ops
        assert check_operations(model, ops, partitioned=False, explain=False).valid is expected, ops


def test_kv_append_matches_oracle():
    rng = random.Random(7)
    model = make_model("kv", initial="")
    for _ in range(400):
        ops = []
        for p, call, ret in random_intervals(rng, rng.randint(1, 6), 3):
            key = rng.choice("xy")
            if rng.random() < 0.5:
                ops.append(Operation(p, "append", rng.choice("ab"), None, call, ret, key=key))
            else:
                out = UNKNOWN if ret is None else rng.choice(["", "a", "b", "ab", "ba", "aa"])
                ops.append(Operation(p, "get", None, out, call, ret, key=key))
        expected = brute_force(model, ops, per_key=True)
        assert check_operations(model, ops, partitioned=False, explain=False).valid is expected, ops
        assert check_operations(model, ops, partitioned=True, explain=False).valid is expected, ops


def test_queue_mutex_and_log_match_oracle():
    rng = random.Random(11)
    queue, mutex, log = make_model("fifo-queue"), make_model("mutex"), make_model("log")
    for _ in range(300):
        iv = random_intervals(rng, rng.randint(1, 6), 3)
        q_ops = [Operation(p, "enqueue", rng.randint(1, 3), None, c, r) if rng.random() < 0.5 else
                 Operation(p, "dequeue", None, UNKNOWN if r is None else rng.choice([None, 1, 2, 3]), c, r)
                 for p, c, r in iv]
        assert check_operations(queue, q_ops, explain=False).valid is brute_force(queue, q_ops), q_ops
        m_ops = [Operation(p, rng.choice(["acquire", "release"]), None, None, c, r) for p, c, r in iv]
        assert check_operations(mutex, m_ops, explain=False).valid is brute_force(mutex, m_ops), m_ops
        l_ops = []
        for p, c, r in iv:
            if rng.random() < 0.6:
                l_ops.append(Operation(p, "append", rng.randint(1, 3), UNKNOWN if r is None else rng.randint(0, 2), c, r))
            else:
                start = rng.randint(0, 1)
                l_ops.append(Operation(p, "read", start, UNKNOWN if r is None else
                                       tuple(rng.randint(1, 3) for _ in range(rng.randint(0, 2))), c, r))
        assert check_operations(log, l_ops, explain=False).valid is brute_force(log, l_ops), l_ops
