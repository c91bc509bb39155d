"""Which faults landed: per fault family and kind, how many were attempted, happened, were
skipped (and why) or failed (and why), from the history's nemesis ops alone. A statistic,
never a verdict.

Source: the ``start-<family>`` / ``stop-<family>`` ops of process ``"nemesis"``
(DEVELOPERS.md, "Nemesis ops"). The nemesis has one op in flight at a time, so each
``invoke`` pairs with the next nemesis completion. A start is

* **failed** when its completion has an ``error`` (the controller raised: e.g. "no quorum
  node answered DescribeQuorum as leader"), or, for a membership fault (a family whose spec
  has ``voter_changes``, faults/registry.py), when no voter change succeeded (``ok``, or
  ``confirmed``: of unknown outcome, then seen applied in the leader's voter set) and some
  change was answered with an error (``fail``, ``error``, or the indefinite ``info``: the
  reason then says "(outcome unknown)");
* **skipped** when the completion says so (``skipped``: why), or when it did nothing: a
  wipe (a family whose spec ``wipes_disks``) whose every target was refused
  (``wipe_skipped``: why), a membership fault whose every change was skipped
  (``changes[].skipped``), a fault left with no targets;
* **happened** otherwise. A leader-aimed fault that found no leader in time and fell back
  to a random node (``leader_unknown``) happened, and is counted in ``leader_unknown``.

Faults a targeted fault (``lag``, ``elect``, ...) or a scenario aims with explicit targets
have kind ``nodes``; they are reported as ``nodes@<slot>`` (``nodes@lag``), and a
membership fault's as ``nodes:<action>`` (``nodes:replace``).

Result (``results.json``'s ``faults``)::

    {"kinds": {family: {kind: {"attempted", "happened", "skipped", "failed",
                               "skipped_why": {reason: n}, "failed_why": {reason: n},
                               "leader_unknown": n, "waited": {"n", "mean_s", "max_s",
                               "no_leader": n}}}},
     "totals": {family: {"attempted", "happened", "skipped", "failed"}},
     "changes": {"remove" | "add" | "replace": {"ok", "confirmed", "fail", "info", "error", "skipped",
                 "skipped_why": {reason: n}, "failed_why": {reason: n}}},
     "wiped_nodes": {"wiped": n, "skipped": n, "skipped_why": {reason: n}},
     "stop_errors": {family: n}}

``changes`` counts every KIP-853 RPC or skipped step of the membership faults (their
starts, the adds back of their stops and ``added_back``); ``waited`` is present when the
schedule waited for a leader before the fault (the start's ``leader_wait``:
``{"waited_s", "leader": bool}``); ``leader_unknown``, ``waited``, ``changes``,
``wiped_nodes`` and ``stop_errors`` are left out when empty.
"""
from __future__ import annotations

from typing import Any

from faults.registry import spec_of
from history import NEMESIS

from .fold import Checker, check_list

#: longest reason kept (characters); longer ones are cut
REASON_CHARS = 160
#: the outcomes of one voter change (``changes[].outcome``; ``confirmed``: an ``info`` one the
#: leader's voter set then showed applied, ``voter_now``; or ``skipped``)
CHANGE_OUTCOMES = ("ok", "confirmed", "fail", "info", "error", "skipped")


def change_outcome(change: dict) -> str | None:
    """A voter change's outcome for the report: ``skipped``, ``confirmed`` (``info``, and
    ``voter_now`` shows it applied: an add a voter, a removal not), else its ``outcome``."""
    if change.get("skipped"):
        return "skipped"
    out = change.get("outcome")
    if out == "info" and "voter_now" in change and change["voter_now"] == (change.get("op") != "remove"):
        return "confirmed"
    return out if out in CHANGE_OUTCOMES else None


def reason_text(text: Any) -> str:
    """A reason as one short line (at most :data:`REASON_CHARS` characters)."""
    s = " ".join(str(text).split())
    return s if len(s) <= REASON_CHARS else s[:REASON_CHARS - 3] + "..."


def _bump(counts: dict, key: str, n: int = 1) -> None:
    counts[key] = counts.get(key, 0) + n


def _changes_voters(family: str) -> bool:
    """Whether ``family``'s ops carry voter changes (its spec's ``voter_changes``)."""
    spec = spec_of(family)
    return spec is not None and spec.voter_changes


def _wipes_disks(family: str) -> bool:
    """Whether ``family``'s starts carry ``wiped`` and ``wipe_skipped`` (``wipes_disks``)."""
    spec = spec_of(family)
    return spec is not None and spec.wipes_disks


def kind_label(family: str, value: Any) -> str:
    """The report's kind of a start's invoke ``value``: its ``kind``; ``nodes@<slot>`` for
    explicit targets in a slot of their own; ``nodes:<action>`` for a membership ``nodes``."""
    v = value if isinstance(value, dict) else {}
    kind = str(v.get("kind", "?"))
    if kind != "nodes":
        return kind
    if _changes_voters(family):
        return f"nodes:{v.get('action', 'remove')}"
    return f"nodes@{v['slot']}" if v.get("slot") else kind


def change_failure(change: dict) -> str:
    """Why a voter change with a non-ok outcome failed: its error, message, or outcome."""
    why = change.get("error") or change.get("message") or change.get("outcome")
    return reason_text(f"{why} (outcome unknown)" if change.get("outcome") == "info" else why)


def classify(family: str, completion: dict | None) -> tuple[str, list[str]]:
    """``("happened" | "skipped" | "failed", reasons)`` of one start's completion (None: it
    never completed; see the module docstring)."""
    if completion is None:
        return "failed", ["the start never completed (the run ended)"]
    if completion.get("error"):
        return "failed", [reason_text(completion["error"])]
    v = completion.get("value") if isinstance(completion.get("value"), dict) else {}
    if v.get("skipped"):
        return "skipped", [reason_text(v["skipped"])]
    if _changes_voters(family):
        changes = [c for c in v.get("changes") or [] if isinstance(c, dict)]
        if any(change_outcome(c) in ("ok", "confirmed") for c in changes):
            return "happened", []
        failed = [change_failure(c) for c in changes if c.get("outcome") in ("fail", "info", "error")]
        if failed:
            return "failed", sorted(set(failed))
        skipped = [reason_text(c["skipped"]) for c in changes if c.get("skipped")]
        return "skipped", sorted(set(skipped)) or ["no voter change"]
    if v.get("targets"):
        return "happened", []
    if _wipes_disks(family) and isinstance(v.get("wipe_skipped"), dict) and v["wipe_skipped"]:
        return "skipped", sorted({reason_text(r) for r in v["wipe_skipped"].values()})
    if "targets" in v:
        return "skipped", ["no target"]
    return "happened", []


class FaultReport(Checker):
    """The fold (module docstring); ``valid`` is always True."""

    def __init__(self) -> None:
        self.kinds: dict[str, dict[str, dict]] = {}
        self.changes: dict[str, dict] = {}
        self.wiped = {"wiped": 0, "skipped": 0, "skipped_why": {}}
        self.stop_errors: dict[str, int] = {}
        self._open: dict | None = None      # the nemesis invoke in flight

    def _entry(self, family: str, kind: str) -> dict:
        fam = self.kinds.setdefault(family, {})
        if kind not in fam:
            fam[kind] = {"attempted": 0, "happened": 0, "skipped": 0, "failed": 0,
                         "skipped_why": {}, "failed_why": {}, "leader_unknown": 0,
                         "waited": {"n": 0, "total_s": 0.0, "max_s": 0.0, "no_leader": 0}}
        return fam[kind]

    def _count_changes(self, changes: Any) -> None:
        for c in changes if isinstance(changes, list) else []:
            if not isinstance(c, dict):
                continue
            e = self.changes.setdefault(str(c.get("op", "?")), {
                **{o: 0 for o in CHANGE_OUTCOMES}, "skipped_why": {}, "failed_why": {}})
            out = change_outcome(c)
            if out == "skipped":
                e["skipped"] += 1
                _bump(e["skipped_why"], reason_text(c["skipped"]))
            elif out is not None:
                e[out] += 1
                if out not in ("ok", "confirmed"):
                    _bump(e["failed_why"], change_failure(c))

    def _start(self, family: str, invoke: dict, completion: dict | None) -> None:
        entry = self._entry(family, kind_label(family, invoke.get("value")))
        entry["attempted"] += 1
        outcome, reasons = classify(family, completion)
        entry[outcome] += 1
        for r in reasons:
            _bump(entry[f"{outcome}_why"], r)
        v = (completion or {}).get("value")
        v = v if isinstance(v, dict) else {}
        if v.get("leader_unknown"):
            entry["leader_unknown"] += 1
        wait = v.get("leader_wait")
        if isinstance(wait, dict) and isinstance(wait.get("waited_s"), (int, float)):
            w = entry["waited"]
            w["n"] += 1
            w["total_s"] += float(wait["waited_s"])
            w["max_s"] = max(w["max_s"], float(wait["waited_s"]))
            if not wait.get("leader", True):
                w["no_leader"] += 1
        if _changes_voters(family):
            self._count_changes(v.get("added_back"))
            self._count_changes(v.get("changes"))
        if _wipes_disks(family):
            self.wiped["wiped"] += len(v.get("wiped") or {}) if isinstance(v.get("wiped"), dict) else 0
            for why in (v.get("wipe_skipped") or {}).values() if isinstance(v.get("wipe_skipped"), dict) else ():
                self.wiped["skipped"] += 1
                _bump(self.wiped["skipped_why"], reason_text(why))

    def _stop(self, family: str, completion: dict | None) -> None:
        if completion is None or completion.get("error"):
            _bump(self.stop_errors, family)
            return
        v = completion.get("value")
        if _changes_voters(family) and isinstance(v, dict):
            self._count_changes(v.get("changes"))

    def _done(self, invoke: dict, completion: dict | None) -> None:
        f = invoke.get("f")
        if not isinstance(f, str):
            return
        phase, _, family = f.partition("-")
        if family and phase == "start":
            self._start(family, invoke, completion)
        elif family and phase == "stop":
            self._stop(family, completion)

    def feed(self, op: dict) -> None:
        if op.get("process") != NEMESIS:
            return
        if op.get("type") == "invoke":
            if self._open is not None:          # never completed: another invoke came first
                self._done(self._open, None)
            self._open = op
        elif self._open is not None:
            inv, self._open = self._open, None
            self._done(inv, op)

    def result(self, nodes) -> dict:
        if self._open is not None:
            self._done(self._open, None)
            self._open = None
        kinds, totals = {}, {}
        for family, by_kind in sorted(self.kinds.items()):
            kinds[family] = {}
            tot = totals[family] = {"attempted": 0, "happened": 0, "skipped": 0, "failed": 0}
            for kind, e in sorted(by_kind.items()):
                out = {k: e[k] for k in ("attempted", "happened", "skipped", "failed", "skipped_why",
                                         "failed_why")}
                if e["leader_unknown"]:
                    out["leader_unknown"] = e["leader_unknown"]
                w = e["waited"]
                if w["n"]:
                    out["waited"] = {"n": w["n"], "mean_s": round(w["total_s"] / w["n"], 2),
                                     "max_s": round(w["max_s"], 2), "no_leader": w["no_leader"]}
                kinds[family][kind] = out
                for k in tot:
                    tot[k] += e[k]
        out: dict = {"valid": True, "kinds": kinds, "totals": totals}
        if self.changes:
            out["changes"] = {op: self.changes[op] for op in sorted(self.changes)}
        if self.wiped["wiped"] or self.wiped["skipped"]:
            out["wiped_nodes"] = self.wiped
        if self.stop_errors:
            out["stop_errors"] = dict(sorted(self.stop_errors.items()))
        return out


def check_fault_report(history: list[dict], nodes=None) -> dict:
    """:class:`FaultReport` over an op list (see the module docstring for the result)."""
    return check_list(FaultReport(), history, nodes)
