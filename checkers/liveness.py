"""``liveness``: a quorum that stops making progress although it could, judged from the
history alone (the nemesis's ops, the quorum monitor's samples, the clients' writes).

A majority of the voters is *able* while its members are unharmed and can all talk to each
other: no nemesis fault touched them (``checkers/fault_windows.py``: killed, paused, crashed,
wiped, removed, their packets shaped, ...) and no partition cut two of them. *Progress* is a
leader seen (a DescribeQuorum answered ``ok`` by a node naming itself leader) or a write
committed (an ``ok`` append, kv write or cas).

- **Stuck windows.** Within each stretch of time in which some majority was able, every span
  with no progress longer than :func:`bound_ns` is an anomaly: an able majority should elect
  a leader and commit within a few election timeouts (the bound is
  :data:`BOUND_TIMEOUTS` election timeouts; Kafka's own simulation, RaftEventSimulationTest,
  also waits a multiple of the election timeout for a leader). Such a span is how a livelock
  such as the election-timer one (``--unsafe reset-election-timer``) shows; otherwise it only
  lowers availability.
- **Recovery.** After every heal (a moment the last fault holding stopped), the time to the
  first committed write and to the first leader seen; for the final heal (after which no
  fault held before the runner's ``heal`` op) on their own: measured, never judged on their
  own (their spans are judged as windows). The final heal often comes as the clients stop,
  so ``recoveries`` (each heal's, and the slowest) says more.

Only the history up to the runner's ``heal`` op is judged: after it come the workload's final
phase and no clients. Anomaly: ``{"from_ns", "to_ns", "stuck_s", "op": the first monitor
sample completed once the bound had passed (when the span became an anomaly; None: no sample
then), "after_op": the op of the last progress before (None: none), "until_op": the op that
ended it (None: the stretch did), "able": [the nodes of an able majority at its start]}``.
"""
from __future__ import annotations

import bisect
import itertools
from typing import Any, Callable

from history import NEMESIS

from .fault_windows import FaultWindowFold, FaultWindows
from .fold import CheckContext, Checker
from .reads import MAX_EXAMPLES, is_int, node_id

#: the election timeout (ms) when the run's config names none (KIP-595's default)
ELECTION_TIMEOUT_MS = 1000
#: the run config's extra server properties (``kafka_props``) that may set it
ELECTION_TIMEOUT_PROPERTY = "controller.quorum.election.timeout.ms"
#: how many election timeouts an able majority may go without progress: a follower notices a
#: dead leader after its fetch timeout (2 election timeouts), stands within 2 more, a split
#: vote or a lost Pre-Vote costs 2 or so again; 10 leaves room for that twice and a node's restart
BOUND_TIMEOUTS = 10
#: the client ops whose ``ok`` is a committed write
WRITE_FS = frozenset({"append", "write", "cas"})
#: the monitor's op
MONITOR_F = "describe-quorum"


def election_timeout_ms(ctx: CheckContext) -> int:
    """The run's election timeout (ms): the config's ``election_timeout_ms``, else the
    ``controller.quorum.election.timeout.ms`` its extra server properties set, else
    :data:`ELECTION_TIMEOUT_MS`."""
    cfg = ctx.config or {}
    ms = (cfg.get("election_timeout_ms") or (cfg.get("kafka_props") or {}).get(ELECTION_TIMEOUT_PROPERTY)
          or ELECTION_TIMEOUT_MS)
    return int(ms)


def bound_ns(ctx: CheckContext) -> int:
    """How long (ns) an able majority may go without a leader seen or a write committed."""
    return BOUND_TIMEOUTS * election_timeout_ms(ctx) * 1_000_000


def able_majority(nodes: list[str], windows: FaultWindows, t0: int, t1: int) -> list[str] | None:
    """A majority of ``nodes`` none of which was harmed in ``[t0, t1]`` (ns) and no two of
    which were cut from each other then; None when there is none."""
    up = [n for n in nodes if not windows.is_down(n, t0, t1)]
    need = len(nodes) // 2 + 1
    for size in range(len(up), need - 1, -1):
        for group in itertools.combinations(up, size):
            if not any(windows.is_cut(a, b, t0, t1) for a, b in itertools.combinations(group, 2)):
                return list(group)
    return None


class Liveness(Checker):
    """``liveness``: see the module docstring."""

    def __init__(self, ctx: CheckContext | None = None):
        self.ctx = ctx or CheckContext()
        self.faults = FaultWindowFold()
        self.voters: set[str] = set()
        self.progress: list[tuple[int, int, str]] = []    # (ns, op index, "leader" | "write")
        self.samples: list[tuple[int, int]] = []          # (ns, op index) of monitor completions
        self.first_ns: int | None = None
        self.last_ns = 0
        self.heal_ns: int | None = None

    def feed(self, op: dict) -> None:
        t = op["time"]
        if self.first_ns is None:
            self.first_ns = t
        if self.heal_ns is not None:
            return                                 # the final phase: not judged
        self.last_ns = t
        if op["process"] == NEMESIS:
            if op["f"] == "heal":
                self.heal_ns = t
                return
            self.faults.feed(op)
            return
        self.faults.last_time = max(self.faults.last_time, t)
        f, node = op["f"], op.get("node")
        if f == MONITOR_F:
            if isinstance(node, str):
                self.voters.add(node)
            if op["type"] != "invoke":
                self.samples.append((t, op["index"]))
            if op["type"] == "ok" and _leads(op.get("value"), node):
                self.progress.append((t, op["index"], "leader"))
        elif op["type"] == "ok" and f in WRITE_FS:
            self.progress.append((t, op["index"], "write"))

    def result(self, nodes) -> dict:
        windows = self.faults.result()
        end = self.heal_ns if self.heal_ns is not None else self.last_ns
        start = self.first_ns if self.first_ns is not None else 0
        voters = sorted(self.voters)
        bound = bound_ns(self.ctx)
        out: dict[str, Any] = {"bound_s": bound / 1e9, "voters": voters}
        if not voters:
            return {**out, "valid": "unknown", "anomalies": [],
                    "note": "no DescribeQuorum samples: the voters are unknown"}
        able = _able_stretches(voters, windows, start, end)
        progress = sorted(self.progress)
        anomalies = []
        for a, b, _group in able:
            anomalies.extend(_stuck(a, b, progress, bound, lambda t: able_majority(voters, windows, t, t)))
        for x in anomalies:
            i = bisect.bisect_left(self.samples, (x["from_ns"] + bound, -1))
            x["op"] = self.samples[i][1] if i < len(self.samples) else None
        heals = _heals(windows, start, end)
        out.update(_recovery(heals[-1] if heals else None, progress))
        out["recoveries"] = [_recovery(h, progress) for h in heals]
        out["slowest_recovery_s"] = max((r["heal_to_write_s"] for r in out["recoveries"]
                                         if r["heal_to_write_s"] is not None), default=None)
        out["able_s"] = round(sum(b - a for a, b, _ in able) / 1e9, 3)
        out["longest_stuck_s"] = max((x["stuck_s"] for x in anomalies), default=None)
        return {**out, "valid": not anomalies, "anomalies": anomalies[:MAX_EXAMPLES * 10]}


def _leads(value: Any, node: Any) -> bool:
    """A DescribeQuorum body in which ``node`` names itself leader."""
    return (isinstance(value, dict) and is_int(value.get("LeaderId")) and isinstance(node, str)
            and value["LeaderId"] == node_id(node))


def _boundaries(windows: FaultWindows, start: int, end: int) -> list[int]:
    """Every time in ``(start, end)`` (ns) a fault began or ended, with ``start`` and ``end``."""
    times = {start, end}
    for spans in itertools.chain(windows.down.values(), windows.cuts.values()):
        for a, b in spans:
            times.update(t for t in (a, b) if start < t < end)
    return sorted(times)


def _able_stretches(voters: list[str], windows: FaultWindows, start: int,
                    end: int) -> list[tuple[int, int, list[str]]]:
    """The stretches ``(from ns, to ns, an able majority at its start)`` of ``[start, end]``
    in which some majority of ``voters`` was able throughout; a fault's own start and end
    times count as harmed."""
    out: list[tuple[int, int, list[str]]] = []
    times = _boundaries(windows, start, end)
    for a, b in zip(times, times[1:]):
        if b - a <= 2:
            continue
        group = able_majority(voters, windows, a + 1, b - 1)
        if group is None:
            continue
        if out and out[-1][1] >= a - 1:
            out[-1] = (out[-1][0], b, out[-1][2])
        else:
            out.append((a, b, group))
    return out


def _stuck(a: int, b: int, progress: list[tuple[int, int, str]], bound: int,
           able_at: Callable[[int], list[str] | None]) -> list[dict]:
    """The spans of ``[a, b]`` (ns) longer than ``bound`` without progress; ``able_at(t)``
    names an able majority at ``t`` (ns)."""
    out = []
    i = bisect.bisect_right(progress, (a, float("inf")))
    last, last_op = a, progress[i - 1][1] if i else None
    for t, index, _kind in progress[i:]:
        if t > b:
            break
        if t - last > bound:
            out.append(_anomaly(last, t, last_op, index, able_at(last)))
        last, last_op = t, index
    if b - last > bound:
        out.append(_anomaly(last, b, last_op, None, able_at(last)))
    return out


def _anomaly(t0: int, t1: int, after_op: int | None, until_op: int | None, group: list[str]) -> dict:
    return {"from_ns": t0, "to_ns": t1, "stuck_s": round((t1 - t0) / 1e9, 3), "after_op": after_op,
            "until_op": until_op, "able": group}


def _heals(windows: FaultWindows, start: int, end: int) -> list[int]:
    """Every moment (ns) in ``(start, end)`` at which the last fault holding stopped, in order
    (the fault intervals merged; one still holding at ``end`` gives none there)."""
    spans = sorted(span for spans in itertools.chain(windows.down.values(), windows.cuts.values())
                   for span in spans)
    out: list[int] = []
    cur_end: int | None = None
    for a, b in spans:
        if cur_end is not None and a > cur_end:
            out.append(cur_end)
            cur_end = b
        else:
            cur_end = b if cur_end is None else max(cur_end, b)
    if cur_end is not None and cur_end < end:
        out.append(cur_end)
    return [t for t in out if start < t < end]


def _recovery(heal: int | None, progress: list[tuple[int, int, str]]) -> dict:
    """Seconds from ``heal`` (ns; under ``final_heal_ns``) to the first committed write and
    to the first leader seen after it (None: none came before the runner's heal op, or
    ``heal`` is None: no heal)."""
    out: dict[str, Any] = {"final_heal_ns": heal, "heal_to_write_s": None, "heal_to_leader_s": None}
    if heal is None:
        return out
    for t, _i, kind in progress[bisect.bisect_left(progress, (heal, -1)):]:
        key = "heal_to_write_s" if kind == "write" else "heal_to_leader_s"
        if out[key] is None:
            out[key] = round((t - heal) / 1e9, 3)
        if out["heal_to_write_s"] is not None and out["heal_to_leader_s"] is not None:
            break
    return out
