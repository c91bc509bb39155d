"""Anomaly kind names that older stored results used, and the names they go by today.

Results written before the queue workload reported Jepsen's Kafka anomaly names
(checkers/queue_checker.py) name its kinds ``queue-*``. Whatever reads stored results
(the web UI, the scenario shrinker, the families' timelines, catalogue scoring) passes
them through :func:`current_results` or :func:`current_name`, so an old run reads as a new one.
An old count is kept whole under the nearest kind of today: ``queue-lost`` was exactly
today's ``unseen`` (of which ``lost-write`` is a part); ``queue-phantom`` also held what is
now ``G1a``, and ``queue-nonmonotonic-poll`` what is now ``int-nonmonotonic-poll``.
"""
from __future__ import annotations

from typing import Any, Mapping

#: old name -> today's
OLD_NAMES: dict[str, str] = {
    "queue-lost": "unseen",
    "queue-duplicate": "duplicate",
    "queue-inconsistent-offsets": "inconsistent-offsets",
    "queue-reordered": "reordered-send",
    "queue-nonmonotonic-poll": "nonmonotonic-poll",
    "queue-phantom": "phantom",
}


def current_name(name: str) -> str:
    """Today's name of the anomaly kind (or checker) ``name``: itself unless it is an old one."""
    return OLD_NAMES.get(name, name)


def current_counts(counts: Mapping[str, Any]) -> dict[str, Any]:
    """``{kind: count}`` under today's names, in their order; two old names of one kind
    add up (a count that is not an int is kept only where nothing else is)."""
    out: dict[str, Any] = {}
    for name, n in counts.items():
        new = current_name(name)
        have = out.get(new)
        if have is None:
            out[new] = n
        elif isinstance(have, int) and isinstance(n, int) and not isinstance(n, bool):
            out[new] = have + n
    return out


def current_results(results: Any) -> Any:
    """A results.json document with its ``anomalies`` counts and ``checkers`` named as
    today (a copy; the document itself is untouched). Anything that is not a dict with those
    keys comes back as it is; of two old checkers of one name today, the first is kept."""
    if not isinstance(results, dict):
        return results
    out = dict(results)
    if isinstance(results.get("anomalies"), dict):
        out["anomalies"] = current_counts(results["anomalies"])
    if isinstance(results.get("checkers"), dict):
        checkers: dict[str, Any] = {}
        for name, r in results["checkers"].items():
            checkers.setdefault(current_name(name), r)
        out["checkers"] = checkers
    return out
