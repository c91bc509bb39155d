"""All log-safety checkers, run together with one combined verdict."""
from __future__ import annotations

from typing import Callable, Mapping

from history.node_data import NodeData

from .divergence import check_divergence
from .duplicate import check_duplicate
from .election_safety import check_election_safety
from .inconsistent_offsets import check_inconsistent_offsets
from .lost_write import check_lost_write
from .nonmonotonic_read import check_nonmonotonic_read
from .phantom import check_phantom
from .stats import check_stats

#: The safety checkers by name, in the order they run.
CHECKERS = {
    "lost-write": check_lost_write,
    "phantom": check_phantom,
    "duplicate": check_duplicate,
    "inconsistent-offsets": check_inconsistent_offsets,
    "divergence": check_divergence,
    "election-safety": check_election_safety,
    "nonmonotonic-read": check_nonmonotonic_read,
}


def combine(verdicts: list) -> bool | str:
    """False if any verdict is False, else "unknown" if any is "unknown", else True."""
    if any(v is False for v in verdicts):
        return False
    if any(v == "unknown" for v in verdicts):
        return "unknown"
    return True


def check_all(history: list[dict], nodes: dict[str, NodeData] | None = None,
              checkers: Mapping[str, Callable] = CHECKERS) -> dict:
    """Run every safety checker and the stats on ``history`` (and ``nodes``, if copied).

    ``checkers``: name -> ``fn(history, nodes)``, run in that order (default
    :data:`CHECKERS`). Returns ``{"valid", "checkers": {name: result},
    "anomaly_counts": {name: n}, "stats": check_stats result}``; ``valid``
    combines the checkers' verdicts (see :func:`combine`; a result without
    ``valid`` counts as None, one without ``anomalies`` as 0 anomalies);
    stats never affect it. Raises HistoryError when the history's processes
    overlap their ops.
    """
    results = {name: fn(history, nodes) for name, fn in checkers.items()}
    return {"valid": combine([r.get("valid") for r in results.values()]),
            "checkers": results,
            "anomaly_counts": {name: len(r.get("anomalies") or []) for name, r in results.items()},
            "stats": check_stats(history, nodes)}
