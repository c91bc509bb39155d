"""Every checker by name: what a workload lists in its ``checkers`` (workloads/registry.py).

A workload names its checkers as strings, since ``workloads/`` sits below
``checkers/`` and may not import them; :func:`make_checkers` turns the names
into :class:`checkers.fold.Checker` s for one run. ``stats`` and ``faults`` are not
checkers of validity: :func:`check_all_folds` runs them beside every set.
"""
from __future__ import annotations

import logging
from typing import Callable, Iterable

from history import NEMESIS

from .divergence import Divergence
from .duplicate import Duplicate
from .election_safety import ElectionSafety
from .fault_report import FaultReport
from .fold import CheckContext, Checker, ListChecker, run_checkers
from .inconsistent_offsets import InconsistentOffsets
from .liveness import Liveness
from .log_safety import combine
from .lost_write import LostWrite
from .membership import Membership, wanted as membership_wanted
from .nonmonotonic_read import NonmonotonicRead
from .phantom import Phantom
from .queue_checker import QUEUE_KINDS, QueueChecker
from .stats import Stats
from .unsynced_checkpoint import make as unsynced_checkpoint

log = logging.getLogger("kraft_chaos.checkers")

#: seconds the linearizability search may take; past it the verdict is "unknown"
LINEARIZABILITY_TIMEOUT_S = 300.0
#: the folds every run gets beside its checkers, never judged: op counts, availability and
#: latency (checkers/stats.py), and which faults landed (checkers/fault_report.py)
STATISTICS = ("stats", "faults")
#: the ops the kv linearizability checker reads (the kv workload's client ops)
KV_FS = ("read", "write", "cas")


def is_kv_op(op: dict) -> bool:
    """Whether ``op`` is a kv client op (``read``/``write``/``cas`` of a client process), which
    the kv linearizability checker reads: not a final read of the quorum's log (``read`` with
    a ``{"from", "final": true, ...}`` value, as the simulator records after a kv schedule for
    the membership checker), which is no register op."""
    if op["process"] == NEMESIS or op["f"] not in KV_FS:
        return False
    v = op.get("value")
    return not (isinstance(v, dict) and v.get("final") is True)


def check_kv_linearizability(ops: list[dict], ctx: CheckContext,
                             timeout_s: float = LINEARIZABILITY_TIMEOUT_S) -> dict:
    """Linearizability of kv client ops (``read``/``write``/``cas`` of client processes), by
    key, as registers (checkers/linearizability); writes ``linearizability.html`` into
    ``ctx.run_dir``. Returns the checker's result; "unknown" with an ``error`` when the
    checker itself failed (the run's other verdicts are kept)."""
    from . import linearizability

    ops = [op for op in ops if is_kv_op(op)]
    try:
        return linearizability.check_history(ops, model="register", by_key=True, timeout_s=timeout_s,
                                             out_dir=ctx.run_dir)
    except Exception as e:
        log.exception("linearizability checker failed")
        return {"valid": "unknown", "anomalies": [], "error": f"checker failed: {type(e).__name__}: {e}"}


#: name -> factory(ctx) of a fresh Checker for one run
FACTORIES: dict[str, Callable[[CheckContext], Checker]] = {
    "lost-write": lambda ctx: LostWrite(),
    "phantom": lambda ctx: Phantom(),
    "duplicate": lambda ctx: Duplicate(),
    "inconsistent-offsets": lambda ctx: InconsistentOffsets(),
    "divergence": lambda ctx: Divergence(),
    "election-safety": lambda ctx: ElectionSafety(),
    "nonmonotonic-read": lambda ctx: NonmonotonicRead(),
    "linearizability": lambda ctx: ListChecker(lambda ops, _n: check_kv_linearizability(ops, ctx),
                                               keep=is_kv_op),
    "stats": lambda ctx: Stats(),
    "faults": lambda ctx: FaultReport(),
    "membership": lambda ctx: Membership(),
    "liveness": lambda ctx: Liveness(ctx),
    # the queue workload's, by (partition, offset): one result per kind, Jepsen's names (by_kind)
    "queue": lambda ctx: QueueChecker(),
    # files renamed into place before their data was durable, as power losses show them
    "unsynced-checkpoint": unsynced_checkpoint,
    # Jepsen's Kafka workload (send / poll / txn micro-ops): one result per anomaly kind (by_kind)
    "kafka-txn": lambda ctx: _kafka_txn(ctx),
}


def _kafka_txn(ctx: CheckContext) -> Checker:
    from .kafka_txn import TxnChecker, options_of
    return TxnChecker(options_of(ctx))


def _kafka_txn_kinds() -> tuple[str, ...]:
    from .kafka_txn import KINDS
    return tuple(KINDS)


#: checker name -> the kinds it reports ``by_kind``, each then listed as a checker of its own
KINDS_OF: dict[str, Callable[[], tuple[str, ...]]] = {"queue": lambda: QUEUE_KINDS, "kafka-txn": _kafka_txn_kinds}


def reported_names(names: Iterable[str]) -> list[str]:
    """The names a results document lists for the checkers ``names``: each, followed by the
    kinds it reports ``by_kind`` (:data:`KINDS_OF`; :func:`split_by_kind`)."""
    out: list[str] = []
    for name in names:
        out.append(name)
        if name in KINDS_OF:
            out.extend(KINDS_OF[name]())
    return out


def checker_of(names: Iterable[str]) -> dict[str, str]:
    """``{reported name: the checker of names that reports it}`` for the checkers ``names``
    (a kind reported by kind maps to its checker, any other name to itself). Two workloads
    mean the same thing by a name only when the same checker reports it: the append
    workload's ``lost-write`` is the ``lost-write`` checker's, the queue's the ``queue``'s."""
    out: dict[str, str] = {}
    for name in names:
        for reported in reported_names([name]):
            out.setdefault(reported, name)
    return out


def split_by_kind(results: dict[str, dict]) -> dict[str, dict]:
    """``results`` with each result that carries ``by_kind`` ({kind: result}) followed by
    those results as checkers of their own (its own ``anomalies`` then hold none). Raises
    ValueError when a kind is named like another checker."""
    out: dict[str, dict] = {}
    for name, r in results.items():
        parts = r.pop("by_kind", None) if isinstance(r, dict) else None
        out[name] = r
        for kind, part in (parts or {}).items():
            if kind in results or kind in out:
                raise ValueError(f"checker {name!r} reports kind {kind!r}, named like another checker")
            out[kind] = part
    return out


def make_checkers(names: Iterable[str], ctx: CheckContext) -> dict[str, Checker]:
    """Fresh checkers for ``names``, in that order. Raises ValueError naming an unknown one."""
    out = {}
    for name in names:
        if name not in FACTORIES:
            raise ValueError(f"unknown checker {name!r}: choose from {', '.join(FACTORIES)}")
        out[name] = FACTORIES[name](ctx)
    return out


def check_all_folds(open_history: Callable, names: Iterable[str], nodes=None,
                    ctx: CheckContext = CheckContext(), extra: dict[str, Checker] | None = None,
                    statistics: bool = True) -> dict:
    """Run the checkers ``names`` and the statistics (:data:`STATISTICS`) over the history
    ``open_history()`` yields.

    ``extra``: more folds fed in the same passes (e.g. the plots' data),
    whose results are returned under ``"extra"`` and never judged.
    Returns ``{"valid", "checkers": {name: result}, "anomaly_counts": {name:
    n}, "stats", "faults", "extra"}``; ``valid`` combines the checkers' verdicts (see
    :func:`combine`); the statistics (``stats``, and ``faults``: which faults landed,
    checkers/fault_report.py) never affect it. A checker whose result carries ``by_kind``
    (``kafka-txn``: one result per Jepsen anomaly kind) has those listed as checkers of their
    own (:func:`split_by_kind`), so that ``anomaly_counts`` names Jepsen's kinds.
    ``statistics=False`` leaves the statistics out (``stats`` and ``faults`` are then None):
    for a caller that wants the verdict alone (the simulator's judge), they are work thrown away.
    """
    names = list(names)
    if "membership" not in names and membership_wanted(ctx.config,      # KIP-853 runs
                                                       ctx.target.default_kraft_version):
        names.append("membership")
    stat_names = STATISTICS if statistics else ()
    checkers = make_checkers([*names, *stat_names], ctx)
    extra = dict(extra or {})
    clash = set(extra) & set(checkers)
    if clash:
        raise ValueError(f"extra folds named like checkers: {sorted(clash)}")
    results = run_checkers(open_history, {**checkers, **extra}, nodes)
    stats = results.pop("stats", None) if statistics else None
    faults = results.pop("faults", None) if statistics else None
    if faults is not None:
        faults.pop("valid", None)
    extras = {name: results.pop(name) for name in extra}
    results = split_by_kind(results)
    return {"valid": combine([r.get("valid") for r in results.values()]),
            "checkers": results,
            "anomaly_counts": {name: len(r.get("anomalies") or []) for name, r in results.items()},
            "stats": stats, "faults": faults, "extra": extras}

# Leadership over time (checkers/leadership.py): folds over the monitor's samples and the nemesis ops.
from .leadership import NEMESIS_AND_MONITOR_CHECKERS  # noqa: E402

FACTORIES.update(NEMESIS_AND_MONITOR_CHECKERS)
