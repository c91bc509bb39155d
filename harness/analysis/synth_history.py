"""The model of a synthetic append history (:mod:`harness.analysis.synth`): its options, and one
deterministic pass over its schedule that writes the history's lines, obeying the
injections planned for it.

The model: ``concurrency`` processes run in rounds; in each round every
process invokes one op (append of a fresh int, or a linearizable tail read
of the last ``READ_WINDOW`` offsets) and the round's completions follow in
random order, so ops of one round are concurrent and rounds are ordered in
real time. Appends are ok (offset assigned at completion), fail (never in
the log) or info (in the log or not, at random); a process whose op ended
in info is retired for a new process id. A nemesis op pair every
``NEMESIS_EVERY`` rounds starts a new epoch with a LeaderChange record. The
history ends with the final committed read of the log, in pages of
``page_size`` records (``"to"`` marks a page; see checkers/reads.py).

A pass with no plan is the sizing pass: it records the facts the injections are chosen from
(acknowledged offsets, info appends, tail reads); a pass with an :class:`InjectionPlan`
writes the history with them, and records what the sidecar lists.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import random
from typing import Callable

#: Records a tail read returns (the append workload's read window).
READ_WINDOW = 8
#: Rounds between nemesis events (each starts a new epoch).
NEMESIS_EVERY = 2000

P_READ, P_FAIL, P_INFO, P_READ_FAIL = 0.05, 0.01, 0.005, 0.01


@dataclasses.dataclass(frozen=True)
class SynthOptions:
    """What to generate. ``ops``: history lines (invokes and completions, Jepsen's
    op count), at least 100. The anomaly counts must fit the history (a
    ValueError says which does not). ``date``: the day the run is stamped
    with (UTC), default today."""

    ops: int
    seed: int
    lost: int = 0
    duplicates: int = 0
    inconsistent: int = 0
    stale_reads: int = 0
    concurrency: int = 10
    page_size: int = 50_000
    nemesis: tuple[str, ...] = ("partition", "kill", "pause")
    date: _dt.date | None = None

    def check(self) -> None:
        """Raise ValueError naming the first bad field."""
        if self.ops < 100:
            raise ValueError(f"--ops must be >= 100, got {self.ops}")
        for name in ("lost", "duplicates", "inconsistent", "stale_reads"):
            if getattr(self, name) < 0:
                raise ValueError(f"--{name.replace('_', '-')} must be >= 0, got {getattr(self, name)}")
        if self.concurrency < 1 or self.page_size < 1:
            raise ValueError("concurrency and page size must be >= 1")


class InjectionPlan:
    """The injections, chosen between the two passes (op ids are the ops' sequence numbers)."""

    def __init__(self) -> None:
        self.final_end: int | None = None           # the final log is log[:final_end]
        self.pages = 1                              # pages of the final read
        self.dup_slot: dict[int, int] = {}          # info append op id -> value copied into its slot
        self.swap: dict[int, tuple[int, int]] = {}  # read op id -> (offset, foreign value)
        self.stale: dict[int, int] = {}             # read op id -> reported high watermark


class HistoryPass:
    """One deterministic pass over the schedule; ``emit`` gets each history line (or None)."""

    def __init__(self, opts: SynthOptions, plan: InjectionPlan | None, emit: Callable[[str], None] | None):
        self.o, self.plan, self.emit = opts, plan, emit
        self.rng = random.Random(opts.seed)
        self.index = 0
        self.time = 1_000_000
        self.kind: list[int] = []       # per offset: 0 data, 1 LeaderChange
        self.payload: list[int] = []    # data value, or leader id
        self.epoch_of: list[int] = []
        self.epoch, self.leader = 0, 1
        self.observed = 0                 # the longest prefix any completed op has shown
        # sizing-pass facts
        self.ack_offsets: list[int] = []
        self.ack_values: list[int] = []
        self.info_in_log: list[tuple[int, int]] = []     # (op id, offset)
        self.info_lost_values: list[int] = []
        self.tail_reads: list[tuple[int, int, int, int]] = []   # (op id, from, hw, best before)
        # writing-pass facts, for the sidecar
        self.lost_acks: list[dict] = []
        self.stale_ops: list[dict] = []
        self.final_first_page: int | None = None

    # -- output ---------------------------------------------------------------
    def line(self, text: str) -> int:
        i = self.index
        if self.emit is not None:
            self.emit(text % i)
        self.index += 1
        return i

    def record_json(self, off: int, swap: tuple[int, int] | None = None) -> str:
        """The record at ``off``; ``swap``: (offset, value) shown at that offset instead."""
        if swap is not None and off == swap[0]:
            return f'[{off},{self.epoch_of[off]},"data",{swap[1]}]'
        if self.kind[off]:
            return (f'[{off},{self.epoch_of[off]},"LeaderChange",{{"LeaderId":{self.payload[off]},'
                    f'"Voters":[1,2,3,4,5]}}]')
        return f'[{off},{self.epoch_of[off]},"data",{self.payload[off]}]'

    def records_json(self, start: int, end: int, swap: tuple[int, int] | None = None) -> str:
        return ",".join(self.record_json(o, swap) for o in range(start, end))

    def nemesis(self, f: str, value_json: str) -> None:
        """A nemesis op: invoke (value null), then info with ``value_json``."""
        self.line(f'{{"index":%d,"time":{self.tick()},"type":"invoke","process":"nemesis",'
                  f'"f":"{f}","value":null}}')
        self.line(f'{{"index":%d,"time":{self.tick()},"type":"info","process":"nemesis",'
                  f'"f":"{f}","value":{value_json}}}')

    # -- the log --------------------------------------------------------------
    def new_epoch(self) -> None:
        self.epoch += 1
        self.leader = self.rng.choice([i for i in range(1, 6) if i != self.leader])
        self.kind.append(1)
        self.payload.append(self.leader)
        self.epoch_of.append(self.epoch)

    def log_data(self, value: int) -> int:
        self.kind.append(0)
        self.payload.append(value)
        self.epoch_of.append(self.epoch)
        return len(self.kind) - 1

    def tick(self, lo: int = 50_000, hi: int = 400_000) -> int:
        self.time += self.rng.randint(lo, hi)
        return self.time

    # -- the run --------------------------------------------------------------
    def lines_left_for_final(self, log_len: int) -> int:
        return 2 * max(1, -(-log_len // self.o.page_size))

    def run(self) -> None:
        o, rng = self.o, self.rng
        procs = list(range(o.concurrency))
        next_proc = o.concurrency
        op_id = 0
        rounds = 0
        self.new_epoch()
        nemesis_open: str | None = None
        target = o.ops

        def budget(grow: int = 0) -> int:
            """Lines left for client ops if the log grows by ``grow`` records (same in both passes)."""
            return target - self.index - self.lines_left_for_final(len(self.kind) + grow)

        while True:
            if rounds and rounds % NEMESIS_EVERY == 0:
                if budget(1) < 4 + 2 * o.concurrency:
                    break
                if nemesis_open:
                    self.nemesis(f"stop-{nemesis_open}", "null")
                    nemesis_open = None
                else:
                    nemesis_open = o.nemesis[(rounds // NEMESIS_EVERY // 2) % len(o.nemesis)] \
                        if o.nemesis else None
                    if nemesis_open:
                        self.nemesis(f"start-{nemesis_open}", f'{{"targets":["n{self.leader}"]}}')
                    self.new_epoch()
            n = min(len(procs), budget(len(procs)) // 2)
            if n <= 0:
                n = 1 if budget(1) >= 2 else 0
            if n <= 0:
                break
            rounds += 1
            best_before = self.observed
            log_len = len(self.kind)
            batch = []
            order = list(range(len(procs)))
            rng.shuffle(order)
            for slot in order[:n]:
                proc = procs[slot]
                node = self.leader if rng.random() < 0.9 else rng.randint(1, 5)
                if rng.random() < P_READ:
                    start = max(0, log_len - READ_WINDOW)
                    self.line(f'{{"index":%d,"time":{self.tick(1000, 20000)},"type":"invoke",'
                              f'"process":{proc},"f":"read","value":{{"from":{start},'
                              f'"linearizable":true,"final":false}},"node":"n{node}"}}')
                    batch.append((slot, proc, op_id, "read", start, node))
                else:
                    value = op_id + 1
                    self.line(f'{{"index":%d,"time":{self.tick(1000, 20000)},"type":"invoke",'
                              f'"process":{proc},"f":"append","value":{value},"node":"n{node}"}}')
                    batch.append((slot, proc, op_id, "append", value, node))
                op_id += 1
            rng.shuffle(batch)
            for slot, proc, oid, f, arg, node in batch:
                t = self.tick(200_000, 3_000_000)
                if f == "append":
                    r = rng.random()
                    if r < P_FAIL or node != self.leader:    # only the leader acknowledges
                        self.line(f'{{"index":%d,"time":{t},"type":"fail","process":{proc},'
                                  f'"f":"append","value":{arg},"node":"n{node}",'
                                  f'"error":"NOT_LEADER_OR_FOLLOWER"}}')
                    elif r < P_FAIL + P_INFO:
                        if rng.random() < 0.5:
                            copy = self.plan.dup_slot.get(oid) if self.plan else None
                            off = self.log_data(arg if copy is None else copy)
                            if self.plan is None:
                                self.info_in_log.append((oid, off))
                        elif self.plan is None:
                            self.info_lost_values.append(arg)
                        self.line(f'{{"index":%d,"time":{t},"type":"info","process":{proc},'
                                  f'"f":"append","value":{arg},"node":"n{node}","error":"timeout"}}')
                        procs[slot] = next_proc
                        next_proc += 1
                    else:
                        off = self.log_data(arg)
                        i = self.line(f'{{"index":%d,"time":{t},"type":"ok","process":{proc},'
                                      f'"f":"append","value":{{"value":{arg},"offset":{off},'
                                      f'"epoch":{self.epoch}}},"node":"n{node}"}}')
                        self.observed = max(self.observed, off + 1)
                        if self.plan is None:
                            self.ack_offsets.append(off)
                            self.ack_values.append(arg)
                        elif self.plan.final_end is not None and off >= self.plan.final_end:
                            self.lost_acks.append({"op": i, "value": arg, "offset": off})
                else:
                    start = arg
                    if rng.random() < P_READ_FAIL:
                        self.line(f'{{"index":%d,"time":{t},"type":"fail","process":{proc},'
                                  f'"f":"read","value":{{"from":{start},"linearizable":true,'
                                  f'"final":false}},"node":"n{node}","error":"NOT_LEADER_OR_FOLLOWER"}}')
                        continue
                    hw = len(self.kind)
                    self.observed = max(self.observed, hw)
                    swap = None
                    if self.plan is None:
                        self.tail_reads.append((oid, start, hw, best_before))
                    else:
                        hw = self.plan.stale.get(oid, hw)
                        swap = self.plan.swap.get(oid)
                    start = min(start, hw)
                    records = self.records_json(start, hw, swap)
                    i = self.line(f'{{"index":%d,"time":{t},"type":"ok","process":{proc},"f":"read",'
                                  f'"value":{{"from":{start},"linearizable":true,"final":false,'
                                  f'"high_watermark":{hw},"records":[{records}]}},'
                                  f'"node":"n{node}"}}')
                    if self.plan is not None and oid in self.plan.stale:
                        self.stale_ops.append({"op": i, "high_watermark": hw})
        self.final_read(next_proc)

    def final_read(self, proc: int) -> None:
        """The final committed read in pages, then ops in flight for any lines left over.

        The page count is the sizing pass's (``plan.pages``), so both passes
        write the same number of lines even when the final log is shorter.
        """
        end = len(self.kind)
        pages = self.lines_left_for_final(end) // 2
        if self.plan is not None:
            pages = self.plan.pages
            if self.plan.final_end is not None:
                end = self.plan.final_end
        else:
            self.pages = pages
        node = self.leader
        for p in range(pages):
            start, to = p * end // pages, (p + 1) * end // pages
            base = f'"from":{start},"linearizable":true,"final":true'
            self.line(f'{{"index":%d,"time":{self.tick()},"type":"invoke","process":{proc},"f":"read",'
                      f'"value":{{{base}}},"node":"n{node}"}}')
            i = self.line(f'{{"index":%d,"time":{self.tick()},"type":"ok","process":{proc},"f":"read",'
                          f'"value":{{{base},"high_watermark":{end},"to":{to},'
                          f'"records":[{self.records_json(start, to)}]}},"node":"n{node}"}}')
            if self.final_first_page is None:
                self.final_first_page = i
        while self.index < self.o.ops:     # ops still in flight at the end, one per process
            proc += 1
            self.line(f'{{"index":%d,"time":{self.tick()},"type":"invoke","process":{proc},'
                      f'"f":"read","value":{{"from":0,"linearizable":true,"final":false}},'
                      f'"node":"n{node}"}}')
