"""The simulated append workload's clients (workloads/append.py's ops, DEVELOPERS.md "Client
ops"): unique appends and linearizable reads of the committed log, sent to the node each
client believes leads, recorded in a :class:`sim.recording.Recording`.

Each client slot is one Jepsen process at a time: an op whose outcome is unknown ends
``info`` and the slot takes a fresh process id. Ops are issued when the schedule says
(:meth:`AppendClients.issue`); a slot still busy then skips that op. A client follows a
NOT_LEADER_OR_FOLLOWER's leader hint, else tries a random other node.
"""
from __future__ import annotations

import random

from kraft.core import errors
from kraft.quorum.client_messages import AppendRequest, ReadRequest

from .recording import Recording
from .runtime import Runtime

#: a client gives up on a request after this long (ms): info "timeout"
CLIENT_TIMEOUT_MS = 5000.0
#: reads start this many records below the highest high watermark seen
READ_WINDOW = 200
#: a final linearizable read that failed is tried again this long after (ms), following the
#: leader hint, else on another node (workloads/append.py ``final_reads``: 0.5 s) ...
FINAL_RETRY_MS = 500.0
#: ... until it succeeds or this long after its first try (ms; workloads/append.py: 30 s)
FINAL_READ_MS = 30000.0
#: a final read retried after a timeout (info) takes a fresh process this far above its last
#: (clear of the nodes' final reads, processes 10_001..)
FRESH_PROCESS_STEP = 100


class AppendClients:
    """``concurrency`` client slots over quorum nodes ``node_ids``; ``rng`` (the clients'
    own stream) picks the nodes to try."""

    #: the workload's name (workloads/registry.py), which the judge's checkers are looked up by
    workload = "append"

    def __init__(self, rt: Runtime, rec: Recording, rng: random.Random, node_ids: list[int], concurrency: int):
        self.rt, self.rec, self.rng = rt, rec, rng
        self.ids = node_ids
        self.concurrency = concurrency
        self.process = {s: s for s in range(concurrency)}
        self.guess = {s: rng.choice(node_ids) for s in range(concurrency)}
        self.busy: set[int] = set()
        self.waiting: dict = {}               # token -> (slot, invoke op, kind)
        self.roaming: set = set()             # tokens of requests sent to a random node: no leader hint followed
        self.next_value = 0
        self.last_hw = 0
        self.acked = 0
        self.final_until: dict[int, float] = {}   # process of a final linearizable read -> retry deadline (ms)
        self.final_due = 0                        # final reads retried but not yet sent

    def issue(self, slot: int, f: str) -> None:
        """Issue op ``f`` ("append" or "read") from ``slot`` now (skipped while it is busy)."""
        if slot in self.busy:
            return
        node = self.guess[slot]
        name = f"n{node}"
        if f == "append":
            self.next_value += 1
            value = self.next_value
            inv = self.rec.invoke(self.process[slot], "append", value, name)
            msg = AppendRequest(value)
        else:
            value = {"from": max(0, self.last_hw - READ_WINDOW), "linearizable": True, "final": False}
            inv = self.rec.invoke(self.process[slot], "read", value, name)
            msg = ReadRequest(value["from"])
        self._send(slot, inv, node, msg, f)

    def _send(self, slot, inv: dict, node: int, msg, kind: str, follow: bool = True) -> None:
        token = self.rt.client_request(node, msg)
        if token is None:
            self.rec.complete(inv, "fail", inv["value"], error="connection")
            if follow:
                self._other(slot, node)
            return
        self.busy.add(slot)
        self.waiting[token] = (slot, inv, kind)
        if not follow:
            self.roaming.add(token)
        self.rt.at(self.rt.now + CLIENT_TIMEOUT_MS, lambda: self._timeout(token))

    def _other(self, slot: int, node: int) -> None:
        others = [i for i in self.ids if i != node] or self.ids
        self.guess[slot] = self.rng.choice(others)

    def _timeout(self, token) -> None:
        entry = self.waiting.pop(token, None)
        if entry is None:
            return
        slot, inv, _ = entry
        self.roaming.discard(token)
        self.rec.complete(inv, "info", inv["value"], error="timeout")
        self._retire(slot)
        if slot < 0:
            self._final_failed(inv, -1, True)

    def _retire(self, slot: int) -> None:
        self.busy.discard(slot)
        if slot >= 0:
            self.process[slot] += self.concurrency
            self._other(slot, self.guess[slot])

    def on_reply(self, token, msg) -> bool:
        """A node answered request ``token`` with ``msg``; False when it is not ours."""
        entry = self.waiting.pop(token, None)
        if entry is None:
            return False
        slot, inv, kind = entry
        self.busy.discard(slot)
        follow = token not in self.roaming
        self.roaming.discard(token)
        if msg.error_code == errors.NONE:
            self._answered(inv, kind, msg)
        else:
            self._refused(slot, inv, kind, msg.error_code, msg.leader_id, follow)
        return True

    def _answered(self, inv: dict, kind: str, msg) -> None:
        """Record the ok answer ``msg`` to op ``inv`` of ``kind``."""
        if kind == "append":
            self.acked += 1
            self.last_hw = max(self.last_hw, msg.offset + 1)
            self.rec.complete(inv, "ok", {"value": inv["value"], "offset": msg.offset, "epoch": msg.epoch})
        else:
            self.last_hw = max(self.last_hw, msg.high_watermark)
            self.rec.complete(inv, "ok", dict(inv["value"], high_watermark=msg.high_watermark,
                                              records=[[r.offset, r.epoch, r.type, r.payload]   # Record.to_wire, inlined
                                                        for r in msg.records]))

    def _refused(self, slot: int, inv: dict, kind: str, code: int, leader_id: int, follow: bool = True) -> None:
        """Record an error answer: ``fail`` when nothing happened (NOT_LEADER_OR_FOLLOWER, or
        any read), then follow the leader hint (unless ``follow`` is False) or try another
        node; else ``info``, and the slot takes a fresh process."""
        err = errors.name(code)
        if code == errors.NOT_LEADER_OR_FOLLOWER or kind == "read":
            self.rec.complete(inv, "fail", inv["value"], error=err)
            if slot < 0:
                self._final_failed(inv, leader_id, False)
            elif not follow:
                pass
            elif 0 < leader_id and leader_id != int(inv["node"][1:]):
                self.guess[slot] = leader_id
            else:
                self._other(slot, int(inv["node"][1:]))
            return
        self.rec.complete(inv, "info", inv["value"], error=err)
        self._retire(slot)

    # -- the final reads -------------------------------------------------------------------
    def final_read(self, node: int, linearizable: bool, process: int, until_ms: float | None = None) -> None:
        """The final read of the whole log from ``node`` (linearizable: the leader's; else that
        node's own committed prefix), recorded ``final: true``. ``until_ms`` (virtual ms; a
        linearizable read only): while it fails, it is tried again :data:`FINAL_RETRY_MS` later,
        on the hinted leader or else another node (a fresh process after a timeout), until it
        succeeds or that time, as workloads/append.py ``final_reads`` does (a leader may step
        down just after the heal); :attr:`final_pending` says whether one is still under way."""
        value = {"from": 0, "linearizable": linearizable, "final": True}
        inv = self.rec.invoke(process, "read", value, f"n{node}")
        if until_ms is not None:
            self.final_until[process] = until_ms
        token = self.rt.client_request(node, ReadRequest(0, None, linearizable))
        if token is None:
            self.rec.complete(inv, "fail", value, error="connection")
            self._final_failed(inv, -1, False)
            return
        self.waiting[token] = (-1 - process, inv, "read")
        self.rt.at(self.rt.now + CLIENT_TIMEOUT_MS, lambda: self._timeout(token))

    @property
    def final_pending(self) -> bool:
        """Whether a final read is still awaited or due to be tried again."""
        return self.final_due > 0 or any(slot < 0 for slot, _inv, _kind in self.waiting.values())

    def _final_failed(self, inv: dict, leader_id: int, timed_out: bool) -> None:
        """Final read ``inv`` failed (``leader_id``: the refusal's hint; ``timed_out``: its
        outcome is unknown): try it again if it has a deadline not yet passed."""
        process = inv["process"]
        until = self.final_until.pop(process, None)
        if until is None or self.rt.now + FINAL_RETRY_MS > until:
            return
        node = int(inv["node"][1:])
        target = leader_id if leader_id in self.ids else self.rng.choice([i for i in self.ids if i != node] or self.ids)
        fresh = process + FRESH_PROCESS_STEP if timed_out else process
        self.final_due += 1

        def again() -> None:
            self.final_due -= 1
            self.final_read(target, True, fresh, until)
        self.rt.at(self.rt.now + FINAL_RETRY_MS, again)
