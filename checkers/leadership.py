"""Leadership over time, from the quorum monitor's DescribeQuorum samples (KIP-595, KIP-996).

Three checkers, each a fold (checkers/fold.py) over the ``describe-quorum``
ops and the nemesis ops; node ids come from node names (``"n2"`` -> 2):

- ``epoch-regression`` (Kafka's simulation invariant MonotonicEpoch): every
  answer carries the node's epoch (a leader's ok value, a non-leader's
  ``fail`` value), and a node's epoch must never go down, restarts included,
  since quorum-state is persisted before every transition that raises it.
- ``stale-leader`` (check quorum, KAFKA-15489): once a node has answered as
  leader of a higher epoch, a leader of a lower one has at most
  1.5 x fetch.timeout.ms left before it resigns (its followers' last Fetch
  reached it no later than that). A node that answered as
  leader of the old epoch at two times further apart than
  :func:`stale_leader_bound_ns` after that, without being paused, killed or
  restarted in between, kept leading without a quorum.
- ``disruptive-election`` (Pre-Vote, KIP-996; Kafka's StableLeadership): a
  new epoch began although its previous leader and a majority of voters
  were up and connected to each other (no nemesis fault touched them) for
  the whole :func:`stable_window_ns` before it. With Pre-Vote a rejoining
  or partitioned voter cannot force that.
"""
from __future__ import annotations

from typing import Any

from history import NEMESIS

from .fault_windows import FaultWindowFold
from .fold import CheckContext, Checker
from .reads import MAX_EXAMPLES, is_int, node_id

#: KIP-595's default fetch timeout (ms), used when the run's config names none
FETCH_TIMEOUT_MS = 2000


def _fetch_timeout_ns(ctx: CheckContext) -> int:
    ms = ctx.config.get("fetch_timeout_ms", FETCH_TIMEOUT_MS) if ctx.config else FETCH_TIMEOUT_MS
    return int(ms) * 1_000_000


def stale_leader_bound_ns(ctx: CheckContext) -> int:
    """How long (ns) a leader of an old epoch may still answer after a newer leader has:
    1.5 x fetch.timeout.ms (the check-quorum window: behind a one-way partition the old
    leader still receives its followers' Fetches until they elect another) plus 1.5 s for
    sampling and scheduling."""
    return int(1.5 * _fetch_timeout_ns(ctx)) + 1_500_000_000


def stable_window_ns(ctx: CheckContext) -> int:
    """How long (ns) before a new epoch its old leader and a majority must have been unharmed
    for the election to count as disruptive: 2 x fetch.timeout.ms + 1 s."""
    return 2 * _fetch_timeout_ns(ctx) + 1_000_000_000


class _Samples(Checker):
    """Base: the describe-quorum answers as ``(invoke ns, completion ns, node, epoch,
    leader id, leading, completion index)`` and the nemesis's fault windows."""

    def __init__(self, ctx: CheckContext):
        self.ctx = ctx
        self.samples: list[tuple[int, int, str, int, int, bool, int]] = []
        self.faults = FaultWindowFold()
        self._invoked: dict[Any, int] = {}

    def feed(self, op: dict) -> None:
        if op["process"] == NEMESIS:
            self.faults.feed(op)
            return
        self.faults.last_time = max(self.faults.last_time, op["time"])
        if op["f"] != "describe-quorum":
            return
        if op["type"] == "invoke":
            self._invoked[op["process"]] = op["time"]
            return
        t0 = self._invoked.pop(op["process"], op["time"])
        v, node = op.get("value"), op.get("node")
        if op["type"] not in ("ok", "fail") or not isinstance(v, dict) or not isinstance(node, str):
            return
        epoch, leader = v.get("LeaderEpoch"), v.get("LeaderId")
        if not is_int(epoch):
            return
        leader = leader if is_int(leader) else -1
        leading = op["type"] == "ok" and leader == node_id(node)
        self.samples.append((t0, op["time"], node, epoch, leader, leading, op["index"]))


class EpochRegression(_Samples):
    """``epoch-regression``: a node answered with an epoch lower than one it answered before.

    Anomaly: ``{"node", "op", "epoch", "earlier_op", "earlier_epoch"}`` (ops
    by completion index), one per node (the first drop).
    """

    def result(self, nodes) -> dict:
        best: dict[str, tuple[int, int]] = {}
        anomalies, reported = [], set()
        for _t0, _t1, node, epoch, _l, _lead, index in self.samples:
            top = best.get(node)
            if top is not None and epoch < top[0] and node not in reported:
                reported.add(node)
                anomalies.append({"node": node, "op": index, "epoch": epoch,
                                  "earlier_op": top[1], "earlier_epoch": top[0]})
            if top is None or epoch > top[0]:
                best[node] = (epoch, index)
        return {"valid": not anomalies, "anomalies": anomalies, "samples": len(self.samples)}


class StaleLeader(_Samples):
    """``stale-leader``: see the module docstring.

    Anomaly: ``{"node", "epoch", "newer_epoch", "since_ns", "first_ns",
    "last_ns", "overstay_s"}``; one per (node, epoch).
    """

    def result(self, nodes) -> dict:
        windows = self.faults.result()
        bound = stale_leader_bound_ns(self.ctx)
        claims = sorted((t1, t0, node, epoch, i) for t0, t1, node, epoch, _l, lead, i in self.samples if lead)
        first_at: dict[int, int] = {}        # epoch -> first completion of a leader claim in it
        for t1, _t0, _n, epoch, _i in claims:
            first_at.setdefault(epoch, t1)
        # H(E): earliest claim of any epoch above E
        epochs = sorted(first_at)
        newer: dict[int, tuple[int, int]] = {}
        best: tuple[int, int] | None = None
        for e in reversed(epochs):
            newer[e] = best if best is not None else (None, None)
            t = first_at[e]
            best = (t, e) if best is None or t < best[0] else best
        by_node_epoch: dict[tuple[str, int], list[tuple[int, int, int]]] = {}
        for t1, t0, node, epoch, i in claims:
            since, _ = newer.get(epoch, (None, None))
            if since is not None and t0 >= since:
                by_node_epoch.setdefault((node, epoch), []).append((t0, t1, i))
        anomalies = []
        for (node, epoch), spans in sorted(by_node_epoch.items()):
            since, e2 = newer[epoch]
            first, first_op = spans[0][1], spans[0][2]
            for t0, _t1, i in spans[1:]:
                if t0 - first > bound and not windows.is_down(node, first, t0):
                    anomalies.append({"node": node, "epoch": epoch, "newer_epoch": e2, "since_ns": since,
                                      "first_op": first_op, "op": i, "overstay_s": round((t0 - first) / 1e9, 3)})
                    break
        return {"valid": not anomalies, "anomalies": anomalies, "bound_s": bound / 1e9}


class DisruptiveElection(_Samples):
    """``disruptive-election``: see the module docstring.

    Anomaly: ``{"epoch", "leader", "previous_epoch", "previous_leader",
    "at_ns", "healthy": [nodes up and connected with the old leader]}``.
    """

    def result(self, nodes) -> dict:
        windows = self.faults.result()
        window = stable_window_ns(self.ctx)
        all_nodes = sorted({s[2] for s in self.samples})
        majority = len(all_nodes) // 2 + 1
        leaders: dict[int, tuple[int, str]] = {}          # epoch -> (first claim ns, node)
        first_op: dict[int, int] = {}
        for _t0, t1, node, epoch, _l, lead, i in sorted(self.samples, key=lambda s: s[1]):
            if lead and epoch not in leaders:
                leaders[epoch] = (t1, node)
                first_op[epoch] = i
        anomalies = []
        ordered = sorted(leaders.items())
        for (e_old, (_t_old, old)), (e_new, (t_new, new)) in zip(ordered, ordered[1:]):
            # the new epoch began at some time after the old leader's last claim, and no later
            # than the first claim of the new one
            last_old = max((t1 for t0, t1, n, e, _l, lead, _i in self.samples if lead and n == old
                            and e == e_old and t1 <= t_new), default=None)
            if last_old is None:
                continue
            t0 = last_old - window
            if t0 < 0 or windows.is_down(old, t0, t_new):
                continue
            healthy = [n for n in all_nodes if n == old or (not windows.is_down(n, t0, t_new)
                                                           and not windows.is_cut(old, n, t0, t_new))]
            if len(healthy) >= majority:
                anomalies.append({"epoch": e_new, "leader": new, "op": first_op[e_new],
                                  "previous_epoch": e_old, "previous_leader": old, "healthy": healthy})
        return {"valid": not anomalies, "anomalies": anomalies[:MAX_EXAMPLES * 10],
                "elections": len(ordered)}


#: the leadership checkers by name
LEADERSHIP_CHECKERS = {"epoch-regression": EpochRegression, "stale-leader": StaleLeader,
                       "disruptive-election": DisruptiveElection}


def check_leadership_file(path, ctx: CheckContext) -> dict[str, dict]:
    """The leadership checkers over a history file, reading only its DescribeQuorum and
    nemesis lines (a substring test before any JSON parse, so a history of millions of
    client ops costs one read of the file). Lines are parsed as ``history.iter_history``
    would, without its index check (the other lines are skipped). Raises
    ``history.HistoryError`` naming the line of a malformed one."""
    import json
    from pathlib import Path

    from history import HistoryError, op_problem
    from .fold import run_checkers

    path = Path(path)

    def ops():
        with open(path, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, start=1):
                if '"describe-quorum"' not in line and '"nemesis"' not in line:
                    continue
                try:
                    op = json.loads(line)
                except ValueError as exc:
                    raise HistoryError(f"{path.name}:{lineno}: truncated or invalid JSON: {exc}") from None
                problem = op_problem(op)
                if problem:
                    raise HistoryError(f"{path.name}:{lineno}: {problem}")
                yield op

    return run_checkers(ops, {name: cls(ctx) for name, cls in LEADERSHIP_CHECKERS.items()})
