"""The simulated ``kv`` workload's clients (workloads/kv.py's ops, DEVELOPERS.md "Client ops
(workloads/kv)"): Jepsen's independent-key registers, ``read``, ``write`` and ``cas`` on the
keys ``"k0"``..``"k4"`` with values 0..4, served by the quorum core's kv state machine
(KvWrite and KvGet, kraft/state_machines/kv.py), judged by the kv checkers (linearizability
by key and the quorum checkers; workloads/registry.py's ``kv``).

The simulator's entry point for the workload is :class:`KvClients`: it takes the same
arguments and answers the same calls as :class:`sim.clients.AppendClients` (``issue``,
``on_reply``; it records its own ok answers); its share of reads by default and its final
reads (none: the kv workload makes none) are in sim/workloads.py's table. Writes and cas go to
the node a client believes leads; a read too, or with probability :data:`READ_ANY_NODE` to a
random node (whose refusal does not change the belief). A cas whose compare failed is ``fail`` with error
``cas-mismatch``; NOT_LEADER_OR_FOLLOWER is ``fail``; any other error or a timeout of a write
or cas is ``info`` and the slot takes a fresh process.
"""
from __future__ import annotations

from kraft.quorum.client_messages import KvGetRequest, KvWriteRequest
from kraft.state_machines.kv import cas_command, put_command

from .clients import AppendClients

#: the workload's name (workloads/registry.py), which the judge's checkers are looked up by
WORKLOAD = "kv"
#: the keyspace and the values written (workloads/kv.py's defaults)
KEYS = tuple(f"k{i}" for i in range(5))
VALUES = 5
#: the share of reads sent to a random node instead of the believed leader
READ_ANY_NODE = 0.5
#: ``error`` of a cas whose compare failed (workloads/kv.py's CAS_MISMATCH)
CAS_MISMATCH = "cas-mismatch"


class KvClients(AppendClients):
    """``concurrency`` client slots over quorum nodes ``node_ids``; ``rng`` (the clients' own
    stream) picks the ops' keys and values and the nodes to try."""

    workload = WORKLOAD

    def issue(self, slot: int, f: str) -> None:
        """Issue a schedule's op from ``slot`` now (skipped while it is busy): "read" a random
        key; "append" (a write in the schedule) a ``write`` or a ``cas``, half each."""
        if slot in self.busy:
            return
        rng = self.rng
        key = rng.choice(KEYS)
        node, follow = self.guess[slot], True
        if f == "read":
            if rng.random() < READ_ANY_NODE:
                node, follow = rng.choice(self.ids), False
            inv = self.rec.invoke(self.process[slot], "read", [key, None], f"n{node}")
            self._send(slot, inv, node, KvGetRequest(key), "read", follow)
        elif rng.random() < 0.5:
            value = rng.randrange(VALUES)
            inv = self.rec.invoke(self.process[slot], "write", [key, value], f"n{node}")
            self._send(slot, inv, node, KvWriteRequest(put_command(key, value)), "write")
        else:
            old, new = rng.randrange(VALUES), rng.randrange(VALUES)
            inv = self.rec.invoke(self.process[slot], "cas", [key, [old, new]], f"n{node}")
            self._send(slot, inv, node, KvWriteRequest(cas_command(key, old, new)), "cas")

    def _answered(self, inv: dict, kind: str, msg) -> None:
        """Record the ok answer ``msg`` to op ``inv`` of ``kind`` (a failed compare: ``fail``)."""
        if kind == "read":
            self.rec.complete(inv, "ok", [inv["value"][0], msg.value], applied_offset=msg.applied_offset)
        elif kind == "cas" and not msg.succeeded:
            self.rec.complete(inv, "fail", inv["value"], error=CAS_MISMATCH)
        else:
            self.acked += 1
            self.rec.complete(inv, "ok", inv["value"], offset=msg.offset, epoch=msg.epoch)
