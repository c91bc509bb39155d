"""Leadership over time, from the quorum monitor's DescribeQuorum samples (KIP-595, KIP-996).

Three checkers, each a fold (checkers/fold.py) over the ``describe-quorum``
ops and the nemesis ops; node ids come from node names (``"n2"`` -> 2):

- ``epoch-regression`` (Kafka's simulation invariant MonotonicEpoch): every
  answer carries the node's epoch (a leader's ok value, a non-leader's
  ``fail`` value), and a node's epoch must never go down, restarts included,
  since quorum-state is persisted before every transition that raises it.
  A disk the nemesis wiped (``start-wipe``) starts a new replica, with a new
  directory id and no quorum-state: its epochs are judged afresh, and
  answers that may have come from either disk are left out. What a wiped
  voter can break (a second vote, lost writes) is for election-safety and
  lost-write to find.
- ``stale-leader`` (check quorum, KAFKA-15489): once a node has answered as
  leader of a higher epoch, a leader of a lower one has at most
  1.5 x fetch.timeout.ms left before it resigns (its followers' last Fetch
  reached it no later than that). A node that answered as
  leader of the old epoch at two times further apart than
  :func:`stale_leader_bound_ns` after that, without being paused, killed or
  restarted in between, kept leading without a quorum.
- ``disruptive-election`` (Pre-Vote, KIP-996; Kafka's StableLeadership): a
  node left its leader's epoch although that leader, the node and a
  majority of voters were up and connected to the leader (no nemesis fault
  touched them) for the whole :func:`stable_window_ns` before. With
  Pre-Vote a rejoining or partitioned voter cannot force that; without it
  one can, and may keep the quorum from electing anyone at all.
"""
from __future__ import annotations

from typing import Any

from faults.registry import spec_of
from history import NEMESIS

from .crashes import CrashedNode
from .fault_windows import FaultWindowFold
from .fold import CheckContext, Checker
from .reads import MAX_EXAMPLES, is_int, node_id

#: KIP-595's default fetch timeout (ms), used when the run's config names none
FETCH_TIMEOUT_MS = 2000


#: the run config's extra server properties (``kafka_props``) that may set the fetch timeout
FETCH_TIMEOUT_PROPERTY = "controller.quorum.fetch.timeout.ms"


def _fetch_timeout_ns(ctx: CheckContext) -> int:
    """The run's fetch timeout (ns): the config's ``fetch_timeout_ms``, else the
    ``controller.quorum.fetch.timeout.ms`` its extra server properties set, else Kafka's
    default."""
    cfg = ctx.config or {}
    ms = cfg.get("fetch_timeout_ms") or (cfg.get("kafka_props") or {}).get(FETCH_TIMEOUT_PROPERTY) or FETCH_TIMEOUT_MS
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


#: the errors of a describe-quorum op that mean the node gave no answer at all (no connection,
#: no reply in time); any other error is the node's own reply (NOT_LEADER_OR_FOLLOWER: Kafka's
#: followers answer so, naming no epoch)
NO_ANSWER_ERRORS = frozenset({"connection", "timeout"})


def answered(op: dict) -> bool:
    """Whether a completed describe-quorum op is the node's reply: ``ok``, or ``fail`` with an
    error the node sent (not one of :data:`NO_ANSWER_ERRORS`)."""
    return op["type"] == "ok" or (op["type"] == "fail" and op.get("error") is not None
                                   and op.get("error") not in NO_ANSWER_ERRORS)


class _Samples(Checker):
    """Base: the describe-quorum answers as ``(invoke ns, completion ns, node, epoch,
    leader id, leading, completion index)`` and the nemesis's fault windows."""

    def __init__(self, ctx: CheckContext):
        self.ctx = ctx
        self.samples: list[tuple[int, int, str, int, int, bool, int]] = []
        #: per node, (invoke ns, completion ns) of samples it did not answer (refused
        #: connection, timeout): black-box evidence that it was down or unreachable
        self.unanswered: dict[str, list[tuple[int, int]]] = {}
        self.faults = FaultWindowFold()
        self._invoked: dict[Any, int] = {}
        #: every node the monitor asked (the voters it watches), answered or not
        self.asked: set[str] = set()

    def feed(self, op: dict) -> None:
        if op["process"] == NEMESIS:
            self.faults.feed(op)
            return
        faults, t = self.faults, op["time"]
        if t > faults.last_time:                # max(), without a call: this runs for every op
            faults.last_time = t
        if op["f"] != "describe-quorum":
            return
        if op["type"] == "invoke":
            self._invoked[op["process"]] = op["time"]
            return
        t0 = self._invoked.pop(op["process"], op["time"])
        v, node = op.get("value"), op.get("node")
        if isinstance(node, str):
            self.asked.add(node)
        if isinstance(node, str) and op["type"] in ("fail", "info") and not isinstance(v, dict):
            if not answered(op):
                self.unanswered.setdefault(node, []).append((t0, op["time"]))   # no answer at all
            return
        if op["type"] not in ("ok", "fail") or not isinstance(v, dict) or not isinstance(node, str):
            return
        epoch, leader = v.get("LeaderEpoch"), v.get("LeaderId")
        if not is_int(epoch):
            return
        leader = leader if is_int(leader) else -1
        leading = op["type"] == "ok" and leader == node_id(node)
        self.samples.append((t0, op["time"], node, epoch, leader, leading, op["index"]))


def _starts_a_wipe(f: str) -> bool:
    """Whether op ``f`` starts a fault that wipes disks (``start-wipe``: its spec's
    ``wipes_disks``)."""
    phase, _, family = f.partition("-")
    spec = spec_of(family)
    return phase == "start" and spec is not None and spec.wipes_disks


class EpochRegression(_Samples):
    """``epoch-regression``: a node answered with an epoch lower than one it answered before
    on the same disk.

    Anomaly: ``{"node", "op", "epoch", "earlier_op", "earlier_epoch"}`` (ops
    by completion index), one per node (the first drop).
    """

    def __init__(self, ctx: CheckContext):
        super().__init__(ctx)
        self.wipes: dict[str, list[tuple[int, int]]] = {}    # node -> [(start invoke ns, ok ns)]
        self._wipe_started: dict[Any, int] = {}

    def feed(self, op: dict) -> None:
        if op["process"] == NEMESIS and _starts_a_wipe(op["f"]):
            slot = (op.get("value") or {}).get("slot") if isinstance(op.get("value"), dict) else None
            if op["type"] == "invoke":
                self._wipe_started[slot] = op["time"]
            elif isinstance(op.get("value"), dict) and isinstance(op["value"].get("wiped"), dict):
                t0 = self._wipe_started.pop(slot, op["time"])
                for node in op["value"]["wiped"]:
                    self.wipes.setdefault(node, []).append((t0, op["time"]))
        super().feed(op)

    def _disk(self, node: str, t0: int, t1: int) -> int | None:
        """Which disk of ``node`` (0, then one more per wipe) answered a sample invoked at
        ``t0`` and completed at ``t1``; None when a wipe overlaps it."""
        era = 0
        for w0, w1 in self.wipes.get(node, ()):
            if t0 >= w1:
                era += 1
            elif t1 >= w0:
                return None
        return era

    def result(self, nodes) -> dict:
        best: dict[tuple[str, int], tuple[int, int]] = {}
        anomalies, reported = [], set()
        for t0, t1, node, epoch, _l, _lead, index in self.samples:
            disk = self._disk(node, t0, t1)
            if disk is None:
                continue
            top = best.get((node, disk))
            if top is not None and epoch < top[0] and node not in reported:
                reported.add(node)
                anomalies.append({"node": node, "op": index, "epoch": epoch,
                                  "earlier_op": top[1], "earlier_epoch": top[0]})
            if top is None or epoch > top[0]:
                best[(node, disk)] = (epoch, index)
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

    For each epoch E with a leader L, each node's first answer in a higher
    epoch is when E ended for it (only that one is judged: a later answer in
    the new epoch is no new departure); if the node was unharmed and
    connected to L then, it left E without cause (a node cut off or harmed
    may move on). Harmed means a nemesis fault touched
    it, or it left one of the monitor's samples unanswered in the window (no
    connection, no reply in time: :func:`answered`; a Kafka follower's NOT_LEADER_OR_FOLLOWER
    is a reply) (a node that died on its own is no evidence of a disruptive election; the
    crashed-node checker reports it). If L had answered as leader within
    the window before, and a majority (L included) was unharmed and
    connected to L throughout that window, nothing justified leaving E. Anomaly: ``{"epoch": the higher
    epoch, "node": who answered in it, "op", "previous_epoch",
    "previous_leader", "healthy": [nodes]}``.
    """

    def _silent(self, node: str, t0: int, t1: int) -> bool:
        """True if ``node`` left a sample unanswered in ``[t0, t1]``."""
        return any(a <= t1 and t0 <= b for a, b in self.unanswered.get(node, ()))

    def result(self, nodes) -> dict:
        windows = self.faults.result()
        window = stable_window_ns(self.ctx)
        samples = sorted(self.samples, key=lambda s: s[1])
        all_nodes = sorted({s[2] for s in samples} | self.asked)
        majority = len(all_nodes) // 2 + 1
        claims: dict[int, list[tuple[int, str]]] = {}       # epoch -> [(t, leader node)]
        for _t0, t1, node, epoch, _l, lead, _i in samples:
            if lead:
                claims.setdefault(epoch, []).append((t1, node))
        anomalies = []
        for epoch, mine in sorted(claims.items()):
            t_first, leader = mine[0]
            moved: set[str] = set()           # nodes already seen past E: each leaves E once
            for _t0, t, node, e_new, _l, _lead, index in samples:
                if e_new <= epoch or t <= t_first or node in moved:
                    continue
                moved.add(node)
                t0 = t - window
                led = [tc for tc, n in mine if n == leader and t0 <= tc <= t]
                if not led and t > mine[-1][0]:
                    break                     # the leader had stopped leading long before
                if t0 < 0 or not led or windows.is_down(leader, t0, t) or self._silent(leader, t0, t):
                    continue
                if node != leader and (windows.is_down(node, t0, t) or windows.is_cut(leader, node, t0, t)
                                       or self._silent(node, t0, t)):
                    continue                  # a node cut off or harmed may move on: no disruption
                healthy = [n for n in all_nodes if n == leader or (not windows.is_down(n, t0, t)
                                                                   and not windows.is_cut(leader, n, t0, t)
                                                                   and not self._silent(n, t0, t))]
                if len(healthy) >= majority:
                    anomalies.append({"epoch": e_new, "node": node, "op": index, "previous_epoch": epoch,
                                      "previous_leader": leader, "healthy": healthy})
                break
        return {"valid": not anomalies, "anomalies": anomalies[:MAX_EXAMPLES * 10],
                "epochs": len(claims)}


#: the leadership checkers by name
LEADERSHIP_CHECKERS = {"epoch-regression": EpochRegression, "stale-leader": StaleLeader,
                       "disruptive-election": DisruptiveElection}
#: what reads only the monitor's and the nemesis's ops: the leadership checkers and crashed-node
#: (``analyze`` runs these on the driver, :func:`check_leadership_file`)
NEMESIS_AND_MONITOR_CHECKERS = {**LEADERSHIP_CHECKERS, "crashed-node": CrashedNode}


def check_leadership_file(path, ctx: CheckContext) -> dict[str, dict]:
    """The leadership checkers and crashed-node over a history file, reading only its DescribeQuorum and
    nemesis lines (a substring test before any JSON parse, so a history of millions of
    client ops costs one read of the file). Lines are parsed as ``history.iter_history``
    would, without its index check (the other lines are skipped). Raises
    ``history.HistoryError`` naming the line of a malformed one."""
    from pathlib import Path

    from history import parse_line
    from .fold import run_checkers

    path = Path(path)

    def ops():
        with open(path, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, start=1):
                if '"describe-quorum"' in line or '"nemesis"' in line:
                    yield parse_line(line, path, lineno)

    return run_checkers(ops, {name: cls(ctx) for name, cls in NEMESIS_AND_MONITOR_CHECKERS.items()})
