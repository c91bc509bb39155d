"""The key-value client API: KvWrite (1002) and KvGet (1003) on top of the Raft log.

KvWrite (put or cas) is answered by the leader once its command record is
committed and applied, with the record's Offset and Epoch and, from the
state machine, ``Succeeded`` (a cas whose expected value did not match is
``false``; it changed nothing) and ``Previous`` (the key's value just
before). NOT_LEADER_OR_FOLLOWER is definite (nothing appended; LeaderId is
the hint); REQUEST_TIMED_OUT is indefinite (appended, commit unknown).

KvGet is linearizable (Raft §6.4, read-index): the leader confirms its
leadership with a majority in the current epoch (:meth:`RaftNode.read_index`),
then answers from its state machine, which is always applied up to the high
watermark and so past the read index. With the ``no-read-index`` unsafe
switch any node answers at once from its own state machine (stale reads
become possible).
See kraft/README.md ("Key-value state machine") for the fields.
"""
from __future__ import annotations

from . import errors
from .kv import CommandError, check_key, command
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
        try:
            cmd = command(body.get("Op"), body)
            if "Value" not in body:
                raise CommandError("missing field Value")
        except CommandError as e:
            raise InvalidRequest(str(e)) from None
        kv, appended = self.node.kv, None

        def on_appended(offset: int) -> None:
            nonlocal appended
            appended = offset
            kv.expect(offset)

        try:
            # append_and_commit returns once the record is applied, so its result is kept
            offset, epoch = await self.node.append_and_commit(cmd, on_appended)
        except Refused as e:
            return e.body
        finally:                    # collect the result, or forget one nobody will collect
            result = None if appended is None else kv.take_result(appended)
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
        try:
            await node.read_index()
        except Refused as e:
            return e.body
        return {"ErrorCode": errors.NONE, "Value": node.kv.get(key), "AppliedOffset": node.kv.applied}
