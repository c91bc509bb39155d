"""What a client's error means for the history (Jepsen's vocabulary): a
:class:`DefiniteError` is ``fail`` (the op certainly did not happen), an
:class:`IndefiniteError` is ``info`` (its outcome is unknown: a timeout, a lost
connection), and the process that saw it never issues again.

Every target's client raises these (targets/), and every workload maps them onto the
history (workloads/recorder.py), so neither needs to know the other. Our quorum's own
client (``kraft.wire.client``, deployed to the nodes alone) has errors of the same shape; the
kraft target maps them onto these (targets/kraft_client.py).
"""
from __future__ import annotations


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
