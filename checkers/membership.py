"""Voter-set safety across KIP-853 voter changes, from the history alone.

Inputs: the final committed log's ``KRaftVoters`` records (VotersRecord: payload
``{"Voters": [{"VoterId", "VoterDirectoryId", ...}]}``, as our quorum's reads and Kafka's
metadata log reader give them) and the monitor's DescribeQuorum samples (ok
``describe-quorum`` ops: a leader's ``LeaderEpoch``, ``HighWatermark`` and
``CurrentVoters`` with ``ReplicaId`` and ``ReplicaDirectoryId``). A voter set is a set of
(id, directory id) keys. The committed sets are those of the final log's VotersRecords
(the first is the bootstrap set a kraft.version 1 leader writes first).

Anomalies:

Kafka's records come with its JSON converter's names (``voters``, ``voterId``,
``voterDirectoryId``); both spellings are read.

* ``uncommitted-voter-set`` (a): a sample's voter set is none of the committed sets, and
  is not the one pending change the leader may hold beyond its high watermark (a set one
  voter away from the committed set in effect below the sample's high watermark, which a
  later leader may have truncated: KIP-853 applies a VotersRecord on append);
  ``{"op", "node", "epoch", "high_watermark", "voters", "committed_then"}``;
* ``multi-voter-change`` (b): two consecutive committed VotersRecords that differ by more
  than one voter key: ``{"offset", "previous_offset", "added", "removed"}``;
* ``overlapping-changes`` (b): the leader of epoch E held a VotersRecord of E (set S) while
  the VotersRecord before it (offset o) was not yet below its high watermark: a sample of
  epoch E shows S with ``HighWatermark`` <= o, S being no committed set before it;
  ``{"op", "epoch", "high_watermark", "offset", "previous_offset"}``.

Election safety and the log checks run beside this one, unchanged (``QUORUM_CHECKERS``).
Not applicable (valid, ``"applicable": false``) when the final log holds no VotersRecord
(kraft.version 0) and the history no ``membership`` nemesis op; ``"unknown"`` when there
were membership ops but no final committed log to judge them by.
"""
from __future__ import annotations

from typing import Any

from history import NEMESIS

from .final_log import FinalPages, final_read_value
from .fold import Checker
from .reads import MAX_EXAMPLES, is_int, read_records

VOTERS = "KRaftVoters"
Key = tuple[int, Any]


def _field(d: dict, name: str) -> Any:
    """``d[name]``, or Kafka's JSON converter's lowerCamelCase ``d[vName]``."""
    return d[name] if name in d else d.get(name[0].lower() + name[1:])


def record_set(payload: Any) -> frozenset | None:
    """The (id, directory id) keys of a VotersRecord payload (our ``Voters``/``VoterId``/
    ``VoterDirectoryId``, or Kafka's ``voters``/``voterId``/``voterDirectoryId``), or None
    when malformed."""
    voters = _field(payload, "Voters") if isinstance(payload, dict) else None
    if not isinstance(voters, list):
        return None
    keys = set()
    for v in voters:
        if not isinstance(v, dict) or not is_int(_field(v, "VoterId")):
            return None
        keys.add((_field(v, "VoterId"), _field(v, "VoterDirectoryId")))
    return frozenset(keys)


def sample_set(body: Any) -> frozenset | None:
    """The (id, directory id) keys of a DescribeQuorum body's CurrentVoters, or None."""
    voters = body.get("CurrentVoters") if isinstance(body, dict) else None
    if not isinstance(voters, list):
        return None
    keys = set()
    for v in voters:
        if not isinstance(v, dict) or not is_int(v.get("ReplicaId")):
            return None
        keys.add((v["ReplicaId"], v.get("ReplicaDirectoryId")))
    return frozenset(keys)


def _json(keys: frozenset) -> list:
    return sorted([k, d] for k, d in keys)


class Membership(Checker):
    """The fold (module doc): one pass; keeps the VotersRecords of each final committed read
    and one entry per distinct (epoch, high watermark, voter set) sampled."""

    def __init__(self) -> None:
        self.finals = FinalPages()
        self.voters_by_read: dict[int, list[tuple[int, int, frozenset]]] = {}
        self.samples: dict[tuple, dict] = {}      # (epoch, hw, set) -> first sample
        self.membership_ops = 0

    def feed(self, op: dict) -> None:
        if op["process"] == NEMESIS:
            if op["f"] in ("start-membership", "stop-membership") and op["type"] != "invoke":
                self.membership_ops += 1
            return
        if final_read_value(op) is not None:
            self.finals.feed(op)
            recs = [(o, e, record_set(p)) for o, e, t, p in read_records(op) if t == VOTERS]
            self.voters_by_read[op["index"]] = [r for r in recs if r[2] is not None]
            return
        if op["type"] == "ok" and op["f"] == "describe-quorum" and isinstance(op.get("value"), dict):
            body = op["value"]
            s, epoch, hw = sample_set(body), body.get("LeaderEpoch"), body.get("HighWatermark")
            if s is not None and s and is_int(epoch) and is_int(hw):
                self.samples.setdefault((epoch, hw, s), {"op": op["index"], "node": op.get("node")})

    def committed(self) -> list[tuple[int, int, frozenset]]:
        """The final log's VotersRecords ``(offset, epoch, keys)`` in offset order."""
        recs: dict[int, tuple[int, int, frozenset]] = {}
        for i in self.finals.indices():
            for r in self.voters_by_read.get(i, ()):
                recs[r[0]] = r
        return [recs[o] for o in sorted(recs)]

    def result(self, nodes) -> dict:
        log = self.committed()
        if not log:
            if self.membership_ops and self.finals.indices() == []:
                return {"valid": "unknown", "anomalies": [], "applicable": True,
                        "error": "membership ops but no final committed log to judge them by"}
            return {"valid": True, "anomalies": [], "applicable": bool(self.membership_ops),
                    "note": "no VotersRecord in the final committed log"}
        anomalies: list[dict] = []
        sets = {s for _o, _e, s in log}
        for prev, cur in zip(log, log[1:]):
            added, removed = cur[2] - prev[2], prev[2] - cur[2]
            if len(added) + len(removed) > 1:
                anomalies.append({"type": "multi-voter-change", "offset": cur[0], "epoch": cur[1],
                                  "previous_offset": prev[0], "added": _json(added), "removed": _json(removed)})
        n_uncommitted = n_overlap = 0
        for (epoch, hw, s), where in sorted(self.samples.items(), key=lambda kv: kv[1]["op"]):
            below = [r for r in log if r[0] < hw]
            then = below[-1][2] if below else log[0][2]
            if s not in sets and len(s ^ then) > 1:
                n_uncommitted += 1
                if n_uncommitted <= MAX_EXAMPLES:
                    anomalies.append({"type": "uncommitted-voter-set", **where, "epoch": epoch,
                                      "high_watermark": hw, "voters": _json(s), "committed_then": _json(then)})
            for i in range(1, len(log)):
                o, e, cur = log[i]
                before = log[i - 1]
                seen_before = {r[2] for r in log[:i]}      # a set seen earlier may be that one
                if e == epoch and s == cur and hw <= before[0] and s not in seen_before:
                    n_overlap += 1
                    if n_overlap <= MAX_EXAMPLES:
                        anomalies.append({"type": "overlapping-changes", **where, "epoch": epoch,
                                          "high_watermark": hw, "offset": o, "previous_offset": before[0]})
        return {"valid": not anomalies, "anomalies": anomalies, "applicable": True,
                "voter_sets": len(log), "samples": len(self.samples),
                "uncommitted_samples": n_uncommitted, "overlapping_samples": n_overlap,
                "membership_ops": self.membership_ops}


def wanted(config: dict, default_kraft_version: int | None = None) -> bool:
    """Whether a run's config (``test.json``'s) calls for this checker: a ``membership``
    nemesis (``--nemesis`` or a scenario step), or kraft.version 1 (``kraft_version`` 1, or
    unset and ``default_kraft_version``, the run's target's default, is 1:
    ``RunTarget.default_kraft_version`` in checkers/fold.py; None when unknown)."""
    config = config or {}
    names = [str(n).partition(":")[0] for n in config.get("nemesis") or []]
    steps = [s.get("nemesis", "") for s in config.get("scenario") or [] if isinstance(s, dict)]
    version = config.get("kraft_version")
    if version is None:
        version = default_kraft_version
    return "membership" in names or any(str(f).endswith("-membership") for f in steps) or version == 1
