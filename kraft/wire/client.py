"""A client for a kraft node: Append, Read, DescribeQuorum, the key-value API
(KvWrite: put and cas, KvGet: get; kraft/runtime/kv_service.py) and the KIP-853 voter
changes (AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter; kraft/rules/membership.py)
over the wire format.

Standard library asyncio; one request in flight per :class:`KraftClient`.
Errors split the way Jepsen needs them: :class:`DefiniteError` means the
request certainly had no effect (record it as ``fail``), and
:class:`IndefiniteError` means the outcome is unknown (record it as ``info``).
"""
from __future__ import annotations

import asyncio
import itertools

from ..core import errors
from . import api, frames

#: Codes after which an Append (or a KvWrite) certainly was not appended.
_DEFINITE = {errors.NOT_LEADER_OR_FOLLOWER, errors.INCONSISTENT_CLUSTER_ID,
             errors.INVALID_REQUEST, errors.FENCED_LEADER_EPOCH,
             errors.UNKNOWN_LEADER_EPOCH}
#: Codes after which a voter change certainly was not appended. REQUEST_TIMED_OUT is
#: left indefinite: Kafka (and we) also answer it when the new VotersRecord was
#: appended but did not commit in time.
_DEFINITE_VOTER_CHANGE = _DEFINITE | {errors.UNSUPPORTED_VERSION, errors.DUPLICATE_VOTER,
                                      errors.VOTER_NOT_FOUND}


class ClientError(Exception):
    """A request did not succeed.

    ``code`` is a Kafka error name (e.g. "NOT_LEADER_OR_FOLLOWER") or one of
    "timeout" / "connection"; ``leader_id`` and ``leader_epoch`` are the
    node's leader hint, when it gave one.
    """

    def __init__(self, code: str, message: str = "", leader_id: int | None = None,
                 leader_epoch: int | None = None):
        super().__init__(f"{code}: {message}" if message else code)
        self.code = code
        self.leader_id = leader_id
        self.leader_epoch = leader_epoch


class DefiniteError(ClientError):
    """The request certainly had no effect (Jepsen ``fail``)."""


class IndefiniteError(ClientError):
    """The outcome is unknown: a timeout, a lost connection, REQUEST_TIMED_OUT (``info``)."""


class KraftClient:
    """A connection to one node.

    ``timeout_ms`` bounds each request, from send to response (ms). The
    connection is opened lazily and reopened after an error.
    """

    def __init__(self, host: str, port: int, cluster_id: str, timeout_ms: int = 3000):
        self.host, self.port, self.cluster_id = host, port, cluster_id
        self.timeout_s = timeout_ms / 1000.0
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._ids = itertools.count(1)

    async def close(self) -> None:
        """Close the connection (idempotent)."""
        w, self._reader, self._writer = self._writer, None, None
        if w is not None:
            w.close()
            try:
                await w.wait_closed()
            except (OSError, asyncio.CancelledError):
                pass

    async def request(self, api_key: int, body: dict) -> dict:
        """Send one request and return the response body (ErrorCode not checked).

        Raises :class:`DefiniteError` with code "connection" when no
        connection could be made (nothing was sent), and
        :class:`IndefiniteError` with code "timeout" or "connection" once the
        request may have left.
        """
        cid = next(self._ids)
        frame = frames.encode({"ApiKey": api_key, "CorrelationId": cid,
                             "Body": {"ClusterId": self.cluster_id, **body}})
        sent = False
        try:
            async with asyncio.timeout(self.timeout_s):
                if self._writer is None:
                    self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
                sent = True
                self._writer.write(frame)
                await self._writer.drain()
                resp = await frames.read_frame(self._reader)
        except TimeoutError:
            await self.close()
            if not sent:
                raise DefiniteError("connection", f"cannot connect to {self.host}:{self.port} "
                                    f"within {self.timeout_s:.1f}s; nothing was sent") from None
            raise IndefiniteError("timeout", f"no answer from {self.host}:{self.port} "
                                  f"within {self.timeout_s:.1f}s") from None
        except (OSError, asyncio.IncompleteReadError, frames.FrameError) as e:
            await self.close()
            if not sent:      # e.g. connection refused: the request never left
                raise DefiniteError("connection", f"cannot connect to {self.host}:{self.port}: {e}; "
                                    f"nothing was sent") from None
            raise IndefiniteError("connection", f"{self.host}:{self.port}: {e}") from None
        if resp is None or resp.get("CorrelationId") != cid or not isinstance(resp.get("Body"), dict):
            await self.close()
            raise IndefiniteError("connection", f"{self.host}:{self.port}: bad or missing response")
        return resp["Body"]

    @staticmethod
    def _raise_for(body: dict, definite: set[int]) -> None:
        code = body.get("ErrorCode", errors.UNKNOWN_SERVER_ERROR)
        if code == errors.NONE:
            return
        cls = DefiniteError if code in definite else IndefiniteError
        raise cls(errors.name(code), body.get("ErrorMessage") or "",
                  body.get("LeaderId") if body.get("LeaderId", -1) >= 0 else None,
                  body.get("LeaderEpoch"))

    async def append(self, value) -> tuple[int, int]:
        """Append ``value`` (any JSON value); returns (offset, epoch) once committed.

        Raises :class:`DefiniteError` (e.g. NOT_LEADER_OR_FOLLOWER with a
        leader hint: not appended) or :class:`IndefiniteError`.
        """
        body = await self.request(api.APPEND, {"Value": value})
        self._raise_for(body, _DEFINITE)
        return body["Offset"], body["Epoch"]

    async def read(self, from_offset: int = 0, max_records: int | None = None,
                   linearizable: bool = True) -> dict:
        """Read committed records from ``from_offset``.

        Returns ``{"high_watermark": H, "records": [[offset, epoch, type, payload], ...]}``
        covering ``[from_offset, H)`` (fewer when ``max_records`` is hit).
        A linearizable read is served by the leader after a read-index round.
        Raises :class:`DefiniteError` or :class:`IndefiniteError`.
        """
        body = await self.request(api.READ, {"FromOffset": from_offset, "MaxRecords": max_records,
                                             "Linearizable": linearizable})
        # A read has no side effect, but a timed-out read-index is still reported as indefinite.
        self._raise_for(body, _DEFINITE)
        return {"high_watermark": body["HighWatermark"], "records": body["Records"]}

    async def put(self, key: str, value: int | None) -> dict:
        """Set ``key`` (str) to ``value`` (int or None); returns ``{"offset": O, "epoch": E}``
        once the command is committed and applied by the leader.

        Raises :class:`DefiniteError` (e.g. NOT_LEADER_OR_FOLLOWER with a
        leader hint: not appended) or :class:`IndefiniteError`, as :meth:`append`.
        """
        body = await self.request(api.KV_WRITE, {"Op": "put", "Key": key, "Value": value})
        self._raise_for(body, _DEFINITE)
        return {"offset": body["Offset"], "epoch": body["Epoch"]}

    async def cas(self, key: str, expected: int | None, value: int | None) -> dict:
        """Compare-and-set: set ``key`` to ``value`` iff its current value is ``expected``.

        Returns ``{"offset": O, "epoch": E, "succeeded": bool, "previous":
        value before}`` once committed and applied; ``succeeded`` is False
        when the compare failed (the command took no effect). Raises as
        :meth:`put`.
        """
        body = await self.request(api.KV_WRITE, {"Op": "cas", "Key": key, "Expected": expected,
                                                 "Value": value})
        self._raise_for(body, _DEFINITE)
        return {"offset": body["Offset"], "epoch": body["Epoch"], "succeeded": body["Succeeded"],
                "previous": body.get("Previous")}

    async def get(self, key: str) -> dict:
        """Linearizable read of ``key``: ``{"value": int or None (never written),
        "applied_offset": the leader's applied index it was read at}``.

        Served by the leader after a read-index round. Raises
        :class:`DefiniteError` (NOT_LEADER_OR_FOLLOWER on a non-leader) or
        :class:`IndefiniteError` (e.g. REQUEST_TIMED_OUT: leadership not
        confirmed in time), as :meth:`read`.
        """
        body = await self.request(api.KV_GET, {"Key": key})
        self._raise_for(body, _DEFINITE)
        return {"value": body["Value"], "applied_offset": body["AppliedOffset"]}

    async def describe_quorum(self) -> dict:
        """The leader's DescribeQuorum response body (KIP-595): ``HighWatermark``,
        ``CurrentVoters`` and ``Observers`` (KIP-853: replicas fetching that are not voters),
        each entry ``{"ReplicaId", "ReplicaDirectoryId", "LogEndOffset",
        "LastFetchTimestamp", "LastCaughtUpTimestamp"}``.

        Raises :class:`DefiniteError` NOT_LEADER_OR_FOLLOWER on a non-leader.
        """
        body = await self.request(api.DESCRIBE_QUORUM, {})
        self._raise_for(body, _DEFINITE)
        return body

    @staticmethod
    def _listeners(host: str, port: int) -> list[dict]:
        return [{"Name": "CONTROLLER", "Host": host, "Port": port}]

    async def add_voter(self, voter_id: int, voter_directory_id: str, host: str, port: int,
                        timeout_ms: int | None = None) -> dict:
        """AddRaftVoter (KIP-853): make the observer (``voter_id``, ``voter_directory_id``),
        listening on ``host``:``port``, a voter. Sent to the leader; answers once the new
        voter set is committed (within ``timeout_ms``, default the node's request timeout).

        Returns the response body (``{"ErrorCode": 0, "LeaderId", "LeaderEpoch", ...}``).
        Raises :class:`DefiniteError` (nothing appended) with NOT_LEADER_OR_FOLLOWER (a
        leader hint in ``leader_id``), UNSUPPORTED_VERSION (kraft.version 0),
        DUPLICATE_VOTER, INVALID_REQUEST, or :class:`IndefiniteError` with
        REQUEST_TIMED_OUT (a change still uncommitted, the replica not caught up, or the
        new set not committed in time: check with :meth:`describe_quorum`), "timeout",
        "connection".
        """
        body = {"VoterId": voter_id, "VoterDirectoryId": voter_directory_id,
                "Listeners": self._listeners(host, port)}
        if timeout_ms is not None:
            body["TimeoutMs"] = timeout_ms
        resp = await self.request(api.ADD_RAFT_VOTER, body)
        self._raise_for(resp, _DEFINITE_VOTER_CHANGE)
        return resp

    async def remove_voter(self, voter_id: int, voter_directory_id: str) -> dict:
        """RemoveRaftVoter (KIP-853): remove the voter (``voter_id``, ``voter_directory_id``);
        the leader may remove itself (it resigns once the removal commits). Answers once
        the new voter set is committed. Returns the response body. Raises as
        :meth:`add_voter`, with VOTER_NOT_FOUND instead of DUPLICATE_VOTER (definite)."""
        resp = await self.request(api.REMOVE_RAFT_VOTER, {"VoterId": voter_id,
                                                          "VoterDirectoryId": voter_directory_id})
        self._raise_for(resp, _DEFINITE_VOTER_CHANGE)
        return resp

    async def update_voter(self, voter_id: int, voter_directory_id: str, host: str, port: int,
                           current_leader_epoch: int) -> dict:
        """UpdateRaftVoter (KIP-853): replace voter (``voter_id``, ``voter_directory_id``)'s
        endpoint with ``host``:``port``; ``current_leader_epoch`` must be the leader's
        epoch. Answered once appended (not committed), as Kafka's. Returns the response
        body (with ``CurrentLeader``). Raises as :meth:`remove_voter`, and
        FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH (definite)."""
        resp = await self.request(api.UPDATE_RAFT_VOTER, {
            "CurrentLeaderEpoch": current_leader_epoch, "VoterId": voter_id,
            "VoterDirectoryId": voter_directory_id, "Listeners": self._listeners(host, port),
            "KRaftVersionFeature": {"MinSupportedVersion": 0, "MaxSupportedVersion": 1}})
        self._raise_for(resp, _DEFINITE_VOTER_CHANGE)
        return resp
