"""The key-value client API: KvWrite (1002) and KvGet (1003) on top of the Raft log.

KvWrite (put or cas) is answered by the leader once its command record is
committed and applied, with the record's Offset and Epoch and, from the
state machine, ``Succeeded`` (a cas whose expected value did not match is
``false``; it changed nothing) and ``Previous`` (the key's value just
before). NOT_LEADER_OR_FOLLOWER is definite (nothing appended; LeaderId is
the hint); REQUEST_TIMED_OUT is indefinite (appended, commit unknown).

KvGet is linearizable (Raft §6.4, read-index): the leader confirms its
leadership with a majority in the current epoch (:meth:`RaftNode.read_index`),
waits until its state machine has applied up to that read index, then
answers from it. With the ``no-read-index`` unsafe switch any node answers
at once from its own state machine (stale reads become possible).
See kraft/README.md ("Key-value state machine") for the fields.
"""
from __future__ import annotations

import asyncio

from . import errors
from .kv import CAS, PUT, CommandError, cas_command, check_key, put_command
from .raft import InvalidRequest, RaftNode, Refused


class KvService:
    """Serves KvWrite and KvGet for ``node`` (its ``kv`` state machine)."""

    def __init__(self, node: RaftNode):
        self.node = node

    async def handle_write(self, body: dict) -> dict:
        """KvWrite: ``Op`` "put" (``Key``, ``Value``) or "cas" (``Key``, ``Expected``, ``Value``).

        Response: ``Offset``, ``Epoch``, ``Succeeded`` (bool), ``Previous``
        (int or null). Raises InvalidRequest for a bad field.
        """
        op = body.get("Op")
        try:
            if op == PUT:
                cmd = put_command(body.get("Key"), body.get("Value"))
            elif op == CAS:
                if "Expected" not in body:
                    raise CommandError("missing field Expected")
                cmd = cas_command(body.get("Key"), body.get("Expected"), body.get("Value"))
            else:
                raise CommandError(f"Op must be {PUT!r} or {CAS!r}, got {op!r}")
            if "Value" not in body:
                raise CommandError("missing field Value")
        except CommandError as e:
            raise InvalidRequest(str(e)) from None
        kv, appended = self.node.kv, []

        def on_appended(offset: int) -> None:
            appended.append(offset)
            kv.expect(offset)

        try:
            offset, epoch = await self.node.append_and_commit(cmd, on_appended)
            result = kv.take_result(offset)
        except Refused as e:
            return e.body
        finally:
            for o in appended:      # forget a result nobody will collect
                kv.take_result(o)
        if result is None:          # cannot happen: append_and_commit returns once applied
            return {"ErrorCode": errors.UNKNOWN_SERVER_ERROR,
                    "ErrorMessage": f"offset {offset} committed but its result is missing"}
        return {"ErrorCode": errors.NONE, "Offset": offset, "Epoch": epoch,
                "Succeeded": result.succeeded, "Previous": result.previous}

    async def handle_get(self, body: dict) -> dict:
        """KvGet: ``Key``. Response: ``Value`` (int or null) and ``AppliedOffset``
        (the state machine's applied index the value was read at)."""
        try:
            key = check_key(body.get("Key"))
        except CommandError as e:
            raise InvalidRequest(str(e)) from None
        node = self.node
        if "no-read-index" not in node.cfg.unsafe:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + node.cfg.request_timeout_ms / 1000.0
            try:
                index = await node.read_index(deadline - loop.time())
                await node.wait_applied(index, deadline - loop.time())
            except Refused as e:
                return e.body
        return {"ErrorCode": errors.NONE, "Value": node.kv.get(key), "AppliedOffset": node.kv.applied}
