"""A brute-force linearizability oracle for small histories (tests only).

Tries every order of the ops that respects real time (a before b when a
returned before b was called), where each crashed op (``ret is None``) may
also be left out, and accepts if the model accepts one. Exponential: keep
histories to about 8 ops.
"""
from __future__ import annotations

from checkers.linearizability.model import ILLEGAL, Model
from checkers.linearizability.operation import Operation


def brute_force(model: Model, ops: list[Operation], per_key: bool = False) -> bool:
    """True iff ``ops`` is linearizable for ``model``; ``per_key`` keeps one state per ``op.key``."""
    n = len(ops)

    def precedes(a: Operation, b: Operation) -> bool:
        return a.ret is not None and a.ret < b.call

    def search(done: frozenset, state) -> bool:
        if all(i in done or ops[i].ret is None for i in range(n)):
            return True
        for i in range(n):
            if i in done:
                continue
            # every op that must precede i is done
            if any(j not in done and precedes(ops[j], ops[i]) for j in range(n)):
                continue
            if per_key:
                cur = state.get(ops[i].key, model.init())
                nxt = model.step(cur, ops[i])
                if nxt is ILLEGAL:
                    continue
                new_state = dict(state)
                new_state[ops[i].key] = nxt
            else:
                new_state = model.step(state, ops[i])
                if new_state is ILLEGAL:
                    continue
            if search(done | {i}, new_state):
                return True
        # a crashed op may never take effect: drop one that is still pending
        return False

    def search_with_drops(done: frozenset, state) -> bool:
        return search(done, state)

    # dropping crashed ops: try every subset of crashed ops as "never happened"
    crashed = [i for i, o in enumerate(ops) if o.ret is None]
    start = {} if per_key else model.init()
    for mask in range(1 << len(crashed)):
        dropped = frozenset(crashed[k] for k in range(len(crashed)) if mask >> k & 1)
        if search(dropped, start):
            return True
    return False
