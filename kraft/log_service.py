"""The log client API: Append (1000) and Read (1001) on top of the Raft log.

Append answers once its data record is committed (below the high watermark);
NOT_LEADER_OR_FOLLOWER is definite (nothing appended; LeaderId is the hint),
REQUEST_TIMED_OUT indefinite (appended, commit unknown). A linearizable Read
goes through the leader's read-index (:meth:`RaftNode.read_index`); a
non-linearizable one returns the answering node's committed prefix. See
kraft/README.md ("Wire format").
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from . import errors
from .rpc import InvalidRequest, Refused, field

if TYPE_CHECKING:
    from .raft import RaftNode


class LogService:
    """Serves Append and Read for ``node`` (a RaftNode)."""

    def __init__(self, node: "RaftNode"):
        self.node = node

    async def handle_append(self, body: dict) -> dict:
        """Append one value (``Value``, any JSON); answer once committed (``Offset``,
        ``Epoch``) or with an error. Raises InvalidRequest without ``Value``."""
        if "Value" not in body:
            raise InvalidRequest("missing field Value")
        node = self.node
        try:
            offset, epoch = await node.append_and_commit(body["Value"], node._plain_appends.add)
        except Refused as e:
            return e.body
        return {"ErrorCode": errors.NONE, "Offset": offset, "Epoch": epoch}

    async def handle_read(self, body: dict) -> dict:
        """Read committed records from ``FromOffset`` (at most ``MaxRecords``).

        Linearizable reads (``Linearizable``, default true) go through the
        leader's read-index: the leader waits until this epoch's LeaderChange
        is committed and a majority of voters have fetched since the read
        arrived, then answers up to its high watermark. Response:
        ``HighWatermark``, ``Records``. Raises InvalidRequest for a bad field.
        """
        start = field(body, "FromOffset", int)
        max_records = field(body, "MaxRecords", int, optional=True)
        linearizable = body.get("Linearizable", True) is not False
        if start < 0:
            raise InvalidRequest(f"FromOffset {start} is negative")
        node = self.node
        if linearizable:
            try:
                await node.read_index()
            except Refused as e:
                return e.body
        hw = node.hw
        recs = node.log.read(start, hw, max_records)
        return {"ErrorCode": errors.NONE, "HighWatermark": hw, "Records": [r.to_wire() for r in recs]}
