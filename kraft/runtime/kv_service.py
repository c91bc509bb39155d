"""The key-value client API: KvWrite (1002) and KvGet (1003) on top of the Raft log.

KvWrite (put or cas) is answered by the leader once its command record is
committed and applied, with the record's Offset and Epoch and, from the
state machine, ``Succeeded`` (a cas whose expected value did not match is
``false``; it changed nothing) and ``Previous`` (the key's value just
before). NOT_LEADER_OR_FOLLOWER is definite (nothing appended; LeaderId is
the hint); REQUEST_TIMED_OUT is indefinite (appended, commit unknown).

KvGet is linearizable (Raft §6.4, read-index): the leader confirms its
leadership with a majority in the current epoch, then answers from its state
machine, which is always applied up to the high watermark and so past the read
index. With the ``no-read-index`` unsafe switch any node answers at once from its
own state machine (stale reads become possible). The quorum core serves both
(kraft/quorum/client_api.py); this is their entry point on a :class:`RaftNode`.
See kraft/README.md ("Key-value state machine") for the fields.
"""
from __future__ import annotations

from ..wire import api
from .raft import RaftNode


class KvService:
    """Serves KvWrite and KvGet for ``node`` (its ``kv`` state machine)."""

    def __init__(self, node: RaftNode):
        self.node = node

    async def handle_write(self, body: dict) -> dict:
        """KvWrite: ``Op`` "put" (``Key``, ``Value``) or "cas" (``Key``, ``Expected``, ``Value``).

        Response: ``Offset``, ``Epoch``, ``Succeeded`` (bool), ``Previous``
        (int or null). Raises InvalidRequest for a bad field.
        """
        return await self.node.request(api.KV_WRITE, body)

    async def handle_get(self, body: dict) -> dict:
        """KvGet: ``Key``. Response: ``Value`` (int or null) and ``AppliedOffset``
        (the state machine's applied index the value was read at). Raises InvalidRequest."""
        return await self.node.request(api.KV_GET, body)
