"""A replica's view of the quorum's membership (KIP-853): the voter set in effect, its
own voter key, whether it is a voter, the majority, and how to reach a peer.

A mixin of :class:`kraft.raft.RaftNode`; it reads the node's ``voter_history``
(kraft/voter_set.py), ``id``, ``meta``, ``cluster_id`` and ``known_endpoints``.
At kraft.version 0 the voter set is the static config, so all of this is
what the config says.
"""
from __future__ import annotations

from .client import KraftClient
from .observer import NoRoute
from .voter_set import ReplicaKey, VoterSet


class QuorumView:
    """Membership queries over the node's current voter set."""

    @property
    def voters(self) -> VoterSet:
        """The voter set in effect (KIP-853: the log's latest VotersRecord, else the bootstrap set)."""
        return self.voter_history.latest

    @property
    def key(self) -> ReplicaKey:
        """This replica's (id, directory id)."""
        return ReplicaKey(self.id, self.meta.directory_id)

    @property
    def is_voter(self) -> bool:
        """True iff this replica's key is in the current voter set."""
        return self.voters.is_voter(self.key)

    @property
    def majority(self) -> int:
        """The current voter set's majority (``len // 2 + 1``)."""
        return self.voters.majority

    def endpoint(self, node_id: int) -> tuple[str, int] | None:
        """(host, port) of ``node_id``: from the voter set, else as learned from BeginQuorumEpoch
        or a response's NodeEndpoints; None if unknown."""
        v = self.voters.get(node_id)
        return (v.host, v.port) if v is not None else self.known_endpoints.get(node_id)

    def _peer(self, node_id: int, timeout_ms: int) -> KraftClient | NoRoute:
        """A fresh client to ``node_id`` (``timeout_ms`` per request); a :class:`NoRoute` whose
        requests fail as DefiniteError "connection" when its endpoint is unknown."""
        ep = self.endpoint(node_id)
        return KraftClient(*ep, self.cluster_id, timeout_ms=timeout_ms) if ep else NoRoute(node_id)
