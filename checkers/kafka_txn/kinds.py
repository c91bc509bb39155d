"""The anomaly kinds of Jepsen's Kafka workload checker, what each means, and which are allowed.

Names are Jepsen's (``jepsen.tests.kafka``, its ``analysis`` and ``allowed-error-types``), so a
Jepsen user reads our verdicts as theirs, except :data:`ERROR_CLASSES`: kinds of our own that
are classes of errors the ops ended with, not anomalies of the log (``server-error``,
server_errors.py). A kind that is *allowed* is still reported, with its explanations, but
does not make the verdict invalid; :func:`allowed_kinds` gives Jepsen's defaults and
``forbid`` turns any of them back into an error.
"""
from __future__ import annotations

from typing import Iterable

#: Jepsen's kinds, in the order results list them, with a one-line meaning
JEPSEN_KINDS: dict[str, str] = {
    "G1a": "aborted read: an ok poll saw a value whose send certainly failed",
    "lost-write": "a committed send below the highest offset some ok poll read was never read",
    "unseen": "an acknowledged send never polled by the end of the history",
    "duplicate": "one value at two or more offsets of a key",
    "inconsistent-offsets": "two or more values at one offset of a key",
    "poll-skip": "a consumer's next op jumped over records after where its last op left off",
    "nonmonotonic-poll": "a consumer's next op began at or before where its last op left off",
    "int-poll-skip": "within one op, consecutive polled records of a key skipped over records",
    "int-nonmonotonic-poll": "within one op, a polled record of a key at or before the one before it",
    "nonmonotonic-send": "a producer's next op sent to a key at or before its last op's send",
    "int-nonmonotonic-send": "within one op, a send to a key landed at or before the one before it",
    "int-send-skip": "within one op, other records landed between two sends to a key",
    "precommitted-read": "an op polled a value it sent itself, before it committed",
    "G0": "a cycle of write-write dependencies (only with ww-deps)",
    "G1c": "a cycle of write-write and write-read dependencies with a write-read one",
    "G0-realtime": "a G0 cycle that needs real-time order too",
    "G1c-realtime": "a G1c cycle that needs real-time order too",
}
#: kinds of our own: classes of errors the data ops ended with (not Jepsen's names)
ERROR_CLASSES: dict[str, str] = {
    "server-error": "a data op ended with INVALID_RECORD, CORRUPT_MESSAGE or UNKNOWN_SERVER_ERROR, errors a "
                    "healthy broker never returns for valid records",
}
#: every kind, in the order results list them
KINDS: dict[str, str] = {**JEPSEN_KINDS, **ERROR_CLASSES}

#: always allowed (Jepsen): transactions' writes interleave, and writes are never isolated
ALWAYS_ALLOWED = ("int-send-skip", "G0", "G0-realtime")
#: allowed when the history subscribes: a rebalance may move a consumer between ops
SUBSCRIBE_ALLOWED = ("poll-skip", "nonmonotonic-poll")
#: allowed when write-write dependencies are inferred: no write isolation means such cycles
WW_DEPS_ALLOWED = ("G1c", "G1c-realtime")
#: allowed when every one of its anomalies is excused (server_errors.py: an
#: UNKNOWN_SERVER_ERROR after a fault began): the analysis decides (:func:`excused_kinds`)
EXCUSABLE = ("server-error",)
#: every kind that can be allowed, hence named by ``forbid``
ALLOWABLE = ALWAYS_ALLOWED + SUBSCRIBE_ALLOWED + WW_DEPS_ALLOWED + EXCUSABLE


def allowed_kinds(subscribed: bool, ww_deps: bool, forbid: Iterable[str] = ()) -> frozenset[str]:
    """Jepsen's allowed kinds for a history: :data:`ALWAYS_ALLOWED`, plus
    :data:`SUBSCRIBE_ALLOWED` when it ``subscribed``, plus :data:`WW_DEPS_ALLOWED` with
    ``ww_deps``; minus ``forbid``. Raises ValueError naming a kind of ``forbid`` that is not in
    :data:`ALLOWABLE`."""
    forbid = set(forbid)
    bad = forbid - set(ALLOWABLE)
    if bad:
        raise ValueError(f"cannot forbid {', '.join(sorted(bad))}: only the kinds Jepsen allows can be "
                         f"forbidden ({', '.join(ALLOWABLE)}); the others are always errors")
    out = set(ALWAYS_ALLOWED)
    if subscribed:
        out |= set(SUBSCRIBE_ALLOWED)
    if ww_deps:
        out |= set(WW_DEPS_ALLOWED)
    return frozenset(out - forbid)


def excused_kinds(found: dict[str, list[dict]], forbid: Iterable[str] = ()) -> frozenset[str]:
    """The :data:`EXCUSABLE` kinds to allow: those that ``found`` (kind -> anomalies) shows,
    every anomaly with ``"excused": True``, and that ``forbid`` does not name."""
    forbid = set(forbid)
    return frozenset(k for k in EXCUSABLE
                     if k not in forbid and found.get(k) and all(a.get("excused") for a in found[k]))


def parse_forbid(items: Iterable[str]) -> tuple[str, ...]:
    """``--forbid`` values (each a kind, a comma-separated list, or ``all``) as the kinds they
    name, in :data:`ALLOWABLE` order. Raises ValueError naming an unknown or never-allowed kind."""
    names: set[str] = set()
    for item in items:
        for name in (x.strip() for x in str(item).split(",")):
            if not name:
                continue
            if name == "all":
                names |= set(ALLOWABLE)
            elif name not in ALLOWABLE:
                what = "never allowed (always an error)" if name in KINDS else "not an anomaly kind"
                raise ValueError(f"--forbid {name}: {what}; choose from all, {', '.join(ALLOWABLE)}")
            else:
                names.add(name)
    return tuple(k for k in ALLOWABLE if k in names)
