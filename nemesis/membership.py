"""The ``membership`` nemesis: KIP-853 voter changes (RemoveRaftVoter, AddRaftVoter) under the
other faults, through the target's DB (``targets.base.DB.voter_state``, ``add_voter``,
``remove_voter``; our quorum via ``kraft.wire.client``, Kafka via its ``kafka-metadata-quorum``).

Kinds:

* ``remove``: a random voter, not the leader, is removed; the stop adds it back under its
  current directory id (a node wiped meanwhile comes back under its new one);
* ``remove-leader``: the leader removes itself (it resigns once the removal commits); the
  stop adds it back;
* ``replace``: every node that is a voter under one directory id and fetches as an
  observer under another (a wiped voter) is replaced: RemoveRaftVoter of the old key, then,
  once the observer has caught up (its LogEndOffset reached the leader's high watermark),
  AddRaftVoter of the new one; the stop does nothing;
* ``nodes``: explicit ``targets`` and the param ``action``: ``remove`` (the stop adds them
  back), ``add`` or ``replace`` (the stop does nothing; the param ``directory_ids``,
  ``{node: the new directory id a wipe gave it}``, skips a node already a voter under it).

Never more than a minority of the original voters is out at once: a removal that would
leave fewer than a majority of ``len(nodes)`` voters is skipped and the reason recorded.

The start's value (beside the fault's own ``kind``, ``targets``): ``voters_before`` and
``voters_after`` (``[[id, directory_id], ...]``, from the leader's DescribeQuorum, or
``{"error": ...}`` when no leader answered), ``leader`` (node), ``changes`` (one entry per
RPC or skipped step: ``{"op": "remove" | "add", "node", "voter_id", "directory_id",
"outcome": "ok" | "fail" | "info", "error"?, "message"?, "attempts"?}`` or ``{"op", "node",
"skipped": reason}``). The stop's value has ``changes`` (the adds back) and
``voters_after``; a node it could not add back (not an observer in time, e.g. killed) is
added back first by the next membership start (its ``added_back``).

Every change waits for a leader instead of failing at once (nemesis/leader_wait.py): a
start polls for the leader's voter state up to ``leader_wait_s`` seconds (the schedule
has already waited for the monitor to show one, without holding the nemesis thread) and,
when none answers in time, records ``skipped`` (why) and ``leader_wait`` (``{"waited_s",
"leader": false}``) and changes nothing; a removal the leader refuses for now
(REQUEST_TIMED_OUT: its epoch or the last voter change is not committed yet) is asked again
until ``change_s`` seconds have passed, and one that timed out but shows applied in the
leader's voter set records ``"voter_now": false``.

Blocking (the controller runs in a worker thread); catch-up waits are bounded by
``catch_up_s`` seconds, polled every ``poll_s`` seconds. :data:`INJECTOR` is the family's
(its facts: faults/membership.py).
"""
from __future__ import annotations

import logging
import random
import time

from faults.membership import SPEC
from faults.registry import named
from nemesis.injector import Injector
from nemesis.leader_wait import CONTROLLER_WAIT_S, leader_voter_state
from targets.registry import effective_kraft_version
from targets.voters import observer

log = logging.getLogger("kraft_chaos.nemesis.membership")

#: ``nodes``' ``action`` param
ACTIONS = ("remove", "add", "replace")
#: s an add waits for its node to catch up as an observer (and retries REQUEST_TIMED_OUT)
CATCH_UP_S = 20.0
#: s a removal the leader refuses for now (REQUEST_TIMED_OUT) is asked again
CHANGE_S = 5.0
POLL_S = 0.5
#: the refusal that means "not now" (an uncommitted epoch or voter change, a lagging voter)
NOT_NOW = "REQUEST_TIMED_OUT"


def voter_keys(state: dict) -> list[list]:
    """``[[id, directory_id], ...]`` of a voter state's voters, sorted by id."""
    return sorted([v["id"], v["directory_id"]] for v in state["voters"])


def _fetched(replica: dict) -> int:
    t = replica.get("last_fetch")
    return t if isinstance(t, int) else -1


def wiped_voters(state: dict, nodes: list[str], node_id) -> list[str]:
    """The nodes of ``nodes`` that are voters under one directory id and fetch, more
    recently, as observers under another (``node_id(node) -> int``)."""
    out = []
    for n in nodes:
        nid = node_id(n)
        voter = next((v for v in state["voters"] if v["id"] == nid), None)
        obs = observer(state, nid)
        if voter and obs and obs["directory_id"] and obs["directory_id"] != voter["directory_id"] \
                and _fetched(obs) >= _fetched(voter):     # not a removed key lingering as observer
            out.append(n)
    return out


class Membership:
    """Voter changes on ``db`` (a ``targets.base.DB``) among ``nodes`` (the quorum nodes the
    nemesis may touch; their count is the original voter count), choices from ``rng``.
    ``find_leader()`` (None: ask ``db.voter_state`` alone) names the leader cheaply while a
    start waits for one, up to ``leader_wait_s`` s; ``change_s`` bounds the retries of a
    removal refused for now (s)."""

    def __init__(self, db, nodes: list[str], rng: random.Random, catch_up_s: float = CATCH_UP_S,
                 poll_s: float = POLL_S, clock=time.monotonic, sleep=time.sleep, find_leader=None,
                 leader_wait_s: float = CONTROLLER_WAIT_S, change_s: float = CHANGE_S):
        self.db, self.nodes, self.rng = db, list(nodes), rng
        self.catch_up_s, self.poll_s, self.clock, self.sleep = catch_up_s, poll_s, clock, sleep
        self.find_leader, self.leader_wait_s, self.change_s = find_leader, leader_wait_s, change_s
        self.majority = len(self.nodes) // 2 + 1
        self._add_back: dict[str, list[str]] = {}      # slot -> nodes the stop adds back
        self._pending: set[str] = set()                 # removed nodes a stop could not add back

    # -- helpers --------------------------------------------------------------------
    def _state(self) -> dict | None:
        if self.find_leader is not None:      # cheap: no leader now, no DescribeQuorum rounds
            try:
                leader = self.find_leader()
            except Exception:  # noqa: BLE001 - none now
                leader = None
            if leader is None:
                return None
        try:
            return self.db.voter_state()
        except Exception as err:  # noqa: BLE001 - no leader now: recorded by the caller
            log.warning("membership: no voter state: %s", err)
            return None

    def _keys(self) -> list | dict:
        state = self._state()
        return voter_keys(state) if state else {"error": "no leader answered DescribeQuorum"}

    def _call(self, op: str, node: str, fn, *args) -> dict:
        try:
            res = fn(node, *args)
        except Exception as err:  # noqa: BLE001 - recorded: the nemesis carries on
            return {"op": op, "node": node, "outcome": "error", "error": type(err).__name__,
                    "message": str(err)[:400]}
        return {"op": op, "node": node, **res}

    def _remove(self, node: str, directory_id: str | None = None) -> dict:
        """Remove ``node``'s voter key unless that leaves fewer than a majority of voters;
        asked again while the leader answers REQUEST_TIMED_OUT and the key is still a voter,
        until ``change_s`` has passed (``attempts`` counts the RPCs when more than one)."""
        nid, deadline, attempts, last = self.db.node_id(node), self.clock() + self.change_s, 0, None
        while True:
            state = self._state()
            if state is None:
                if last is not None:
                    return {**last, "attempts": attempts}
                return {"op": "remove", "node": node, "skipped": "no leader answered DescribeQuorum"}
            key = directory_id if directory_id is not None else next(
                (v["directory_id"] for v in state["voters"] if v["id"] == nid), None)
            voter = any(v["id"] == nid and v["directory_id"] == key for v in state["voters"])
            if last is not None:
                if not voter:          # the timed-out removal was applied after all
                    return {**last, "attempts": attempts, "voter_now": False}
                if self.clock() >= deadline:
                    return {**last, "attempts": attempts}
            elif not any(v["id"] == nid for v in state["voters"]):
                return {"op": "remove", "node": node, "skipped": "not a voter"}
            left = len(state["voters"]) - 1
            if left < self.majority:
                return {"op": "remove", "node": node,
                        "skipped": f"would leave {left} voters, fewer than a majority ({self.majority}) "
                                   f"of the original {len(self.nodes)}"}
            attempts += 1
            if directory_id is None:
                change = self._call("remove", node, self.db.remove_voter)
            else:
                change = self._call("remove", node, self.db.remove_voter, directory_id)
            if change.get("error") != NOT_NOW:
                return {**change, "attempts": attempts} if attempts > 1 else change
            last = change
            self.sleep(self.poll_s)

    def _add(self, node: str) -> dict:
        """Add ``node`` back once it fetches as an observer within reach of the high
        watermark; retries answers that may mean "not caught up" (REQUEST_TIMED_OUT) until
        ``catch_up_s`` has passed, or ``leader_wait_s`` with no leader at all."""
        nid, deadline, attempts, last = self.db.node_id(node), self.clock() + self.catch_up_s, 0, None
        leaderless_since = None
        while True:
            state = self._state()
            now = self.clock()
            leaderless_since = (leaderless_since if leaderless_since is not None else now) if state is None else None
            if leaderless_since is not None and now - leaderless_since >= self.leader_wait_s and last is None:
                return {"op": "add", "node": node, "skipped": f"no leader within {self.leader_wait_s:g} s"}
            obs = None if state is None else observer(state, nid)
            if state is not None and any(v["id"] == nid for v in state["voters"]):
                if last is not None:       # an earlier add that timed out did commit
                    return {**last, "attempts": attempts, "voter_now": True}
                return {"op": "add", "node": node, "skipped": "already a voter"}
            caught_up = (obs is not None and isinstance(obs.get("log_end"), int)
                         and isinstance(state.get("high_watermark"), int)
                         and obs["log_end"] >= state["high_watermark"])
            if caught_up:
                attempts += 1
                last = self._call("add", node, self.db.add_voter)
                if last.get("outcome") in ("ok", "fail") and last.get("error") != "REQUEST_TIMED_OUT":
                    return {**last, "attempts": attempts}
            if self.clock() >= deadline:
                if last is not None:
                    return {**last, "attempts": attempts}
                why = "not an observer" if obs is None else "not caught up"
                return {"op": "add", "node": node,
                        "skipped": f"{why} within {self.catch_up_s:g} s (no leader)" if state is None
                        else f"{why} within {self.catch_up_s:g} s"}
            self.sleep(self.poll_s)

    # -- the fault ------------------------------------------------------------------
    def start(self, fault) -> dict:
        """Apply ``fault`` (a ``nemesis.faults.Fault`` of family ``membership``); returns the
        start's value (module doc; ``skipped`` when no leader answered within
        ``leader_wait_s``). Raises ``ValueError`` for bad explicit targets or action."""
        kind, params = fault.kind, dict(fault.params)
        action = params.get("action", "remove") if kind == "nodes" else kind
        if kind == "nodes":
            if action not in ACTIONS:
                raise ValueError(f"nemesis membership: action must be one of {', '.join(ACTIONS)}, "
                                 f"got {action!r}")
            if not fault.targets or set(fault.targets) - set(self.nodes):
                raise ValueError(f"nemesis membership: explicit targets {fault.targets!r} must be "
                                 f"nodes of {self.nodes}")
        state, waited, why = leader_voter_state(self.db, self.find_leader, self.leader_wait_s,
                                                self.poll_s, self.clock, self.sleep)
        wait = {"leader_wait": waited.value()} if waited.waited else {}
        if state is None:       # no leader in time: nothing changes; added back next time
            self._add_back[fault.key] = []
            return {"targets": [], "changes": [], **wait, "skipped": why}
        out: dict = {"voters_before": voter_keys(state), "leader": state["leader"], "changes": [], **wait}
        if self._pending:           # nodes an earlier stop could not add back: first, again
            out["added_back"] = [self._add(n) for n in sorted(self._pending)]
            self._pending = {c["node"] for c in out["added_back"]
                             if "skipped" in c and c["skipped"] != "already a voter"}
            state = self._state() or state
        ids = {self.db.node_id(n): n for n in self.nodes}
        voters = [ids[v["id"]] for v in state["voters"] if v["id"] in ids]
        if kind == "nodes":
            targets = [n for n in self.nodes if n in fault.targets]
        elif kind == "remove":
            others = [n for n in voters if n != state["leader"]]
            targets = [self.rng.choice(others)] if others else []
        elif kind == "remove-leader":
            targets = [state["leader"]] if state["leader"] in voters else []
        else:
            targets = wiped_voters(state, self.nodes, self.db.node_id)
        out["targets"] = targets
        if not targets:
            out["changes"].append({"op": action, "skipped": "no node to change"})
        added_back = []
        for node in targets:
            if action == "remove" or action == "remove-leader":
                change = self._remove(node)
                if change.get("outcome") in ("ok", "info"):
                    added_back.append(node)
                out["changes"].append(change)
            elif action == "add":
                out["changes"].append(self._add(node))
            else:
                old = next((v["directory_id"] for v in state["voters"] if ids.get(v["id"]) == node), None)
                if old is not None and old == (params.get("directory_ids") or {}).get(node):
                    out["changes"].append({"op": "replace", "node": node,
                                           "skipped": "already a voter under its new directory id"})
                    continue
                change = self._remove(node, old) if old is not None else {
                    "op": "remove", "node": node, "skipped": "not a voter"}
                out["changes"].append(change)
                if change.get("outcome") in ("ok", "info") or change.get("skipped") == "not a voter":
                    out["changes"].append(self._add(node))
        self._add_back[fault.key] = added_back
        out["voters_after"] = self._keys()
        return out

    def stop(self, fault) -> dict:
        """Undo a removal: add back the nodes its start removed (``changes``, then
        ``voters_after``); nothing for ``replace`` and ``add``."""
        nodes = self._add_back.pop(fault.key, [])
        out: dict = {"changes": [self._add(n) for n in nodes]}
        for change in out["changes"]:       # e.g. killed meanwhile: the next membership op retries
            if "skipped" in change and change["skipped"] != "already a voter":
                self._pending.add(change["node"])
        if nodes:
            out["voters_after"] = self._keys()
        return out


def for_controller(controller) -> Membership:
    """The controller's :class:`Membership` (made on first use, with a seeded rng of its own)
    over the quorum nodes among the controller's."""
    m = getattr(controller, "_membership", None)
    if m is None:
        quorum = getattr(controller.db, "quorum_nodes", None)
        voters = set(quorum()) if callable(quorum) else set(controller.nodes)
        nodes = [n for n in controller.nodes if n in voters]     # never brokers (--nemesis-targets all)
        m = Membership(controller.db, nodes, random.Random(controller.rng.getrandbits(64)),
                       find_leader=controller._leader, leader_wait_s=controller.leader_wait_s,
                       clock=controller.clock, sleep=controller.sleep)
        controller._membership = m
    return m


def uses_membership(config) -> bool:
    """Whether a run config (``harness.config.run.RunConfig``) has voter changes: a
    ``--nemesis`` name ``membership[:kinds]`` (a family whose spec has ``voter_changes``) or a
    scenario step ``start-membership``."""
    specs = named(getattr(config, "nemesis", None), getattr(config, "scenario", None))
    return any(spec.voter_changes for spec in specs)


def check_run_config(config) -> None:
    """Refuse membership faults at kraft.version 0 (static voters: AddRaftVoter and
    RemoveRaftVoter are UNSUPPORTED_VERSION there): raises ``ValueError`` (exit 3)."""
    if uses_membership(config) and effective_kraft_version(config) != 1:
        raise ValueError("nemesis membership (KIP-853 AddRaftVoter/RemoveRaftVoter) is not supported at "
                         "kraft.version 0 (static voters): run with --kraft-version 1")


def _start(ctl, fault, value: dict, waited) -> bool:
    value.update(for_controller(ctl).start(fault))
    ctl.hold(fault, value["targets"])
    return False


def _stop(ctl, fault, targets: list[str], out: dict) -> None:
    out.update(for_controller(ctl).stop(fault))     # adds back what a removal took out


INJECTOR = Injector(SPEC, _start, _stop)
