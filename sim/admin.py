"""Voter changes in the simulator (KIP-853, kraft.version 1): RemoveRaftVoter and AddRaftVoter
sent to the leader as an operator would (``kafka-metadata-quorum remove-controller`` /
``add-controller``), retried while no leader answers or the change is refused for now,
and recorded as ``membership`` ops (process ``"nemesis"``, value ``changes``): a removal's
``start-membership`` when first asked (its fault holds from then; the ``changes`` of its
value are filled in when it ends, as the history is written after the run), an add's
``stop-membership`` once it is done.

A removed voter is added back when its fault stops (with its directory id then); a wiped
one is replaced (its old key removed, its new directory id added).
"""
from __future__ import annotations

from typing import Callable

from kraft.core import errors
from kraft.core.states import StateKind
from kraft.quorum.client_messages import AddVoterRequest, RemoveVoterRequest
from kraft.rules.voter_set import ReplicaKey

from .quorum_nodes import voter_node
from .recording import Recording
from .runtime import AwaitsReplies, Runtime

LEADER = StateKind.LEADER
#: give up on a voter change after this long (ms), retrying every RETRY_MS
CHANGE_PATIENCE_MS, RETRY_MS, ASK_TIMEOUT_MS = 5000.0, 300.0, 5000.0
#: what a change's ``make`` returns instead of a request: already in effect / not to be made
DONE, SKIP = object(), object()


def leader_of(rt: Runtime, ids) -> int | None:
    """The live, unpaused node leading the highest epoch, or None."""
    best, epoch = None, -1
    for i in ids:
        n = rt.nodes[i]
        c = n.core
        if c is not None and not n.paused and c.state.kind is LEADER and c.epoch > epoch:
            best, epoch = i, c.epoch
    return best


class Admin(AwaitsReplies):
    """Voter changes on quorum nodes ``ids``; the replies come through :meth:`on_reply`."""

    def __init__(self, rt: Runtime, rec: Recording, ids: list[int]):
        super().__init__()
        self.rt, self.rec, self.ids = rt, rec, ids
        self.removed: set[int] = set()        # voters removed by a fault, to add back
        self.in_flight = 0                    # voter changes asked and not finished
        self.busy: set[int] = set()           # nodes with a voter change under way

    def _ask(self, make: Callable, what: str, node: int, then: Callable | None = None, phase: str = "start",
             slot: str | None = None, patience_ms: float | None = CHANGE_PATIENCE_MS) -> None:
        """Ask the leader for the change ``make(leader)`` gives (a request, :data:`DONE` when it is
        in effect already, :data:`SKIP` when it must not be made), retrying every RETRY_MS on any
        refusal, timeout or absent leader until ``patience_ms`` (None: until it is done); recorded
        when it ends, as ``<phase>-membership``."""
        deadline = None if patience_ms is None else self.rt.now + patience_ms
        self.in_flight += 1
        self.busy.add(node)
        tries = [0]
        asked = {"kind": "nodes", "targets": [f"n{node}"], "action": what}
        if slot:
            asked["slot"] = slot
        started = None
        if phase == "start":      # the fault holds from the first ask (its outcome is filled in below)
            started = dict(asked, changes=[])
            self.rec.nemesis(f"{phase}-membership", asked, started)

        def finish(outcome: str, error: str | None = None) -> None:
            change = {"op": what, "node": f"n{node}", "voter_id": node}
            if outcome == "skipped":
                change["skipped"] = error
            else:
                change["outcome"] = outcome
                if error:
                    change["error"] = error
                if tries[0] > 1:
                    change["attempts"] = tries[0]
            self.in_flight -= 1
            self.busy.discard(node)
            if started is not None:
                started["changes"].append(change)
            else:
                self.rec.nemesis(f"{phase}-membership", asked, dict(asked, changes=[change]))
            self.rt.note(f"membership {what} n{node}: {outcome} {error or ''}")
            if then is not None and outcome == "ok":
                then()

        def attempt() -> None:
            rt = self.rt
            lead = leader_of(rt, self.ids)
            if lead is None:
                retry("no leader")
                return
            msg = make(lead)
            if msg is DONE:
                finish("ok") if tries[0] else finish("skipped", "nothing to change")
                return
            if msg is SKIP:
                finish("skipped", "the other voters would keep no majority")
                return
            tries[0] += 1
            token = rt.client_request(lead, msg)
            answered = []

            def on(resp) -> None:
                answered.append(resp)
                if resp.error_code == errors.NONE:
                    finish("ok")
                else:
                    retry(errors.name(resp.error_code))
            self.waiting[token] = on

            def timeout() -> None:
                if not answered and self.waiting.pop(token, None) is not None:
                    retry("timeout")
            rt.at(rt.now + ASK_TIMEOUT_MS, timeout)

        def retry(why: str) -> None:
            if deadline is None or self.rt.now + RETRY_MS < deadline:
                self.rt.at(self.rt.now + RETRY_MS, attempt)
            else:
                finish("fail" if why in ("no leader",) else "info", why)
        attempt()

    def _voter_key(self, lead: int, node: int) -> ReplicaKey | None:
        v = self.rt.nodes[lead].core.voters.get(node)
        return v.key if v is not None else None

    def _keeps_majority(self, voters, node: int) -> bool:
        """Whether the voters left without ``node`` keep a majority on intact disks (an operator
        does not remove a voter when the rest could no longer elect a leader)."""
        rt = self.rt
        lead = leader_of(rt, self.ids)
        rest = [v for v in voters.voters if v.id != node]
        intact = [v for v in rest if rt.up(v.id) and not rt.nodes[v.id].paused
                  and rt.nodes[v.id].disk.directory_id == v.directory_id
                  and (v.id == lead or ((lead, v.id) not in rt.net.cut and (v.id, lead) not in rt.net.cut))]
        return len(intact) >= len(rest) // 2 + 1

    def remove(self, node: int, slot: str | None = None) -> None:
        """Remove voter ``node`` (whatever its directory id in the leader's voter set); ``slot``
        names the change's fault window when others overlap it (its add-back gives the same)."""
        def make(lead):
            voters = self.rt.nodes[lead].core.voters
            key = self._voter_key(lead, node)
            if key is None:
                return DONE
            if len(voters) <= 1 or not self._keeps_majority(voters, node):
                return SKIP
            return RemoveVoterRequest(key)
        self.removed.add(node)
        self._ask(make, "remove", node, slot=slot)

    def add_back(self, node: int, slot: str | None = None) -> None:
        """Add ``node`` as a voter with its current directory id (if it is not one already), once
        no other change of it is under way."""
        if node in self.busy:
            self.rt.at(self.rt.now + RETRY_MS, lambda: self.add_back(node, slot))
            return
        self.removed.discard(node)

        def make(lead):
            dir_id = self.rt.nodes[node].disk.directory_id
            v = self.rt.nodes[lead].core.voters.get(node)
            if v is not None:
                return DONE
            return AddVoterRequest(voter_node(node, dir_id))
        self._ask(make, "add", node, phase="stop", slot=slot, patience_ms=None)

    def replace(self, node: int) -> None:
        """A wiped voter: remove its old key, then add its new directory id."""
        def make(lead):
            v = self.rt.nodes[lead].core.voters.get(node)
            if v is None or v.directory_id == self.rt.nodes[node].disk.directory_id:
                return DONE
            return RemoveVoterRequest(v.key)
        self._ask(make, "remove", node, then=lambda: self.add_back(node, "wipe-replace"), slot="wipe-replace",
                  patience_ms=None)

    def restore(self) -> None:
        """At the end: add back every voter still removed or replaced."""
        lead = leader_of(self.rt, self.ids)
        voters = self.rt.nodes[lead].core.voters if lead is not None else None
        for node in self.ids:
            v = voters.get(node) if voters is not None else None
            if v is not None and v.directory_id != self.rt.nodes[node].disk.directory_id:
                self.rt.at(self.rt.now + 500, lambda node=node: self.replace(node))
            elif node in self.removed or (voters is not None and v is None):
                self.rt.at(self.rt.now + 500, lambda node=node: self.add_back(node))
