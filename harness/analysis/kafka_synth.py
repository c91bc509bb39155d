"""Synthetic histories of Jepsen's Kafka workload, played against a correct log.

A small deterministic simulation (standard library; every choice from ``seed``) of clients
running Jepsen's Kafka workload (``send`` / ``poll`` / ``txn`` ops of up to ``max_mops``
micro-ops, ``assign`` / ``subscribe`` about 1 op in 64, ``crash`` ops) against a log that
behaves as Kafka's should: each key (topic-partition) is a log whose sends take offsets at once
and become visible when their transaction commits; an abort hides them for good; each
transaction's end takes one more offset per key (its marker); a ``read_committed`` consumer
reads committed records only below the last stable offset (the first offset of a transaction
still open). Transactions run their micro-ops at separate instants, so they interleave.

Outcomes: about 1 in 32 transactions aborts on purpose (``fail``: the offsets and poll results
it got); about 1 in 48 ends ``info`` (its value the invoke's; it committed or not, at random),
after which the thread's process is replaced, as after a ``crash``; a new process resumes from
the offsets its thread's consumer group committed. The final phase: every transaction ended,
``final_threads`` threads crash, assign every key seeking to the beginning, and poll (ops marked
``"final": true``) until they have read each key to its end.

The history is a list of op dicts as history.jsonl holds them (DEVELOPERS.md, "History").
Checked by checkers/kafka_txn, it is valid: tests mutate it to show each anomaly kind, and
``make bench`` times the checker on a large one (harness/bench/txn_checker.py).
"""
from __future__ import annotations

import dataclasses
import heapq
import random
from typing import Callable, Iterator

#: status of a transaction's records
OPEN, COMMITTED, ABORTED = 0, 1, 2


@dataclasses.dataclass(frozen=True)
class SynthOptions:
    """``mops``: micro-ops to issue before the final phase (about; the last op may overrun).
    ``threads``: concurrent clients. ``keys``: topic-partitions, named ``t<topic>-<partition>``
    over ``topics`` topics. ``max_mops``: micro-ops per op (1..). ``poll_fraction``: the chance
    a micro-op is a poll. ``max_poll``: records a poll returns per key at most. ``abort_p``,
    ``info_p``, ``crash_p``, ``sub_p``: chances per op of an abort, an info outcome, a crash op,
    an assign (or ``subscribe`` when ``subscribe``). ``final_threads``: threads that poll
    everything at the end. Times in ns: ``mop_ns`` between micro-ops, ``gap_ns`` between ops."""

    mops: int = 2_000
    threads: int = 6
    keys: int = 8
    topics: int = 2
    max_mops: int = 4
    poll_fraction: float = 0.5
    max_poll: int = 50
    abort_p: float = 1 / 32
    info_p: float = 1 / 48
    crash_p: float = 1 / 200
    sub_p: float = 1 / 64
    subscribe: bool = False
    final_threads: int = 2
    mop_ns: int = 400_000
    gap_ns: int = 300_000


class _Log:
    """One key's log: per offset ``[value or None (a marker), transaction status cell]``."""

    __slots__ = ("entries", "open")

    def __init__(self) -> None:
        self.entries: list[list] = []
        self.open: dict[int, int] = {}        # transaction id -> its first offset here

    def lso(self) -> int:
        """The last stable offset: the first offset of a transaction still open, else the end."""
        return min(self.open.values()) if self.open else len(self.entries)


class _World:
    def __init__(self, opts: SynthOptions, rng: random.Random, sink: Callable[[dict], None]):
        self.opts, self.rng, self.sink = opts, rng, sink
        per = max(1, opts.keys // opts.topics)
        self.keys = [f"t{i // per}-{i % per}" for i in range(opts.keys)]
        self.logs = {k: _Log() for k in self.keys}
        self.emitted = 0
        self.next_value = 0
        self.next_txn = 0
        self.mops = 0
        self.now = 0

    def emit(self, t: int, type_: str, process: int, f: str, value, **extra) -> None:
        """Record an op at time ``t`` (ns), the next index."""
        self.sink({"index": self.emitted, "time": t, "type": type_, "process": process, "f": f, "value": value,
                   **extra})
        self.emitted += 1

    def poll(self, k: str, pos: int, limit: int) -> tuple[list, int]:
        """Committed records of ``k`` from ``pos`` below the LSO, up to ``limit``; new position."""
        log = self.logs[k]
        end, out = log.lso(), []
        o = pos
        while o < end and len(out) < limit:
            value, cell = log.entries[o]
            if value is not None and cell[0] == COMMITTED:
                out.append([o, value])
            o += 1
        return out, o


def _thread(w: _World, n: int) -> Iterator[int]:
    """One client thread: yields the ns to wait before its next step."""
    o, rng = w.opts, w.rng
    generation = 0
    process = n
    assigned = set(rng.sample(w.keys, max(1, len(w.keys) // 2)))
    group: dict[str, int] = {}            # the thread's consumer group's committed offsets
    pos = dict(group)
    t_wait = o.gap_ns

    def new_process():
        nonlocal generation, process, pos
        generation += 1
        process = n + generation * o.threads
        pos = dict(group)

    while w.mops < o.mops:
        yield rng.randint(1, t_wait)
        r = rng.random()
        if r < o.crash_p:
            w.emit(w.now, "invoke", process, "crash", None)
            yield rng.randint(1, o.mop_ns)
            w.emit(w.now, "info", process, "crash", None)
            new_process()
            continue
        if r < o.crash_p + o.sub_p:
            f = "subscribe" if o.subscribe else "assign"
            keys = sorted(rng.sample(w.keys, rng.randint(1, len(w.keys))))
            w.emit(w.now, "invoke", process, f, keys)
            yield rng.randint(1, o.mop_ns)
            assigned = set(keys)
            pos = {k: pos.get(k, group.get(k, 0)) for k in assigned}
            w.emit(w.now, "ok", process, f, keys)
            continue
        n_mops = rng.randint(1, o.max_mops)
        invoke = []
        for _ in range(n_mops):
            if rng.random() < o.poll_fraction:
                invoke.append(["poll"])
            else:
                invoke.append(["send", rng.choice(w.keys), w.next_value])
                w.next_value += 1
        kinds = {m[0] for m in invoke}
        f = "txn" if len(kinds) > 1 else ("poll" if kinds == {"poll"} else "send")
        w.mops += n_mops
        w.emit(w.now, "invoke", process, f, invoke)
        txn, cell = w.next_txn, [OPEN]
        w.next_txn += 1
        touched: set[str] = set()
        local = dict(pos)
        done = []
        for m in invoke:
            yield rng.randint(1, o.mop_ns)
            if m[0] == "send":
                _s, k, v = m
                log = w.logs[k]
                log.open.setdefault(txn, len(log.entries))
                done.append(["send", k, [len(log.entries), v]])
                log.entries.append([v, cell])
                touched.add(k)
            else:
                got = {}
                for k in sorted(assigned):
                    recs, local[k] = w.poll(k, local.get(k, 0), o.max_poll)
                    if recs:
                        got[k] = recs
                done.append(["poll", got])
        yield rng.randint(1, o.mop_ns)
        r = rng.random()
        outcome = "fail" if r < o.abort_p else ("info" if r < o.abort_p + o.info_p else "ok")
        commits = outcome == "ok" or (outcome == "info" and rng.random() < 0.5)
        cell[0] = COMMITTED if commits else ABORTED
        for k in touched:
            log = w.logs[k]
            del log.open[txn]
            log.entries.append([None, cell])          # the transaction's marker
        if commits:
            group.update({k: p for k, p in local.items()})
        yield rng.randint(1, o.mop_ns)
        if outcome == "info":
            w.emit(w.now, "info", process, f, invoke, error="timeout")
            new_process()
        else:
            w.emit(w.now, outcome, process, f, done, **({"error": "aborted"} if outcome == "fail" else {}))
            if outcome == "ok":
                pos = local


def _final(w: _World, n: int) -> Iterator[int]:
    """A final-phase thread: crash, assign everything from the beginning, poll to the end."""
    o = w.opts
    process = n + 1_000_000 * o.threads
    yield 1
    w.emit(w.now, "invoke", process, "crash", None)
    yield 1
    w.emit(w.now, "info", process, "crash", None)
    process += o.threads
    yield 1
    w.emit(w.now, "invoke", process, "assign", list(w.keys), seek_to_beginning=True)
    yield 1
    w.emit(w.now, "ok", process, "assign", list(w.keys), seek_to_beginning=True)
    pos = {k: 0 for k in w.keys}
    while any(pos[k] < len(w.logs[k].entries) for k in w.keys):
        yield 1
        w.emit(w.now, "invoke", process, "poll", [["poll"]], final=True)
        yield o.mop_ns
        got = {}
        for k in w.keys:
            recs, pos[k] = w.poll(k, pos[k], o.max_poll * 4)
            if recs:
                got[k] = recs
        w.emit(w.now, "ok", process, "poll", [["poll", got]], final=True)


def _run(w: _World, threads: list[Iterator[int]]) -> None:
    heap = [(w.now, i, th) for i, th in enumerate(threads)]
    seq = len(threads)
    while heap:
        t, _i, th = heapq.heappop(heap)
        w.now = t
        try:
            delay = next(th)
        except StopIteration:
            continue
        heapq.heappush(heap, (t + delay, seq, th))
        seq += 1


def synth_history(opts: SynthOptions = SynthOptions(), seed: int = 0,
                  sink: Callable[[dict], None] | None = None) -> list[dict]:
    """A valid Kafka-workload history (module docstring) of about ``opts.mops`` micro-ops,
    then the final polls; the same for the same ``opts`` and ``seed``. Each op goes to
    ``sink`` as it is made (then ``[]`` is returned), or into the list returned."""
    history: list[dict] = []
    w = _World(opts, random.Random(seed), sink or history.append)
    _run(w, [_thread(w, i) for i in range(opts.threads)])
    _run(w, [_final(w, i) for i in range(opts.final_threads)])
    return history
