"""The leader's handling of voter changes: AddRaftVoter (80), RemoveRaftVoter (81) and
UpdateRaftVoter (82) (KIP-853; Kafka's AddVoterHandler, RemoveVoterHandler, UpdateVoterHandler).

The rules are pure functions over the leader's state; :class:`MembershipService`
validates the request, appends the new VotersRecord (the voter set changes
as soon as it is appended, kraft/voter_set.py) and answers once it is
committed by a majority of the *new* set (UpdateRaftVoter answers at once, as
Kafka's does). At most one voter change is uncommitted at a time. Errors use
Kafka's names: NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT (the epoch's
LeaderChange or the last voter change is not committed yet, the new voter is
not caught up, or the change did not commit in time), UNSUPPORTED_VERSION
(kraft.version 0), DUPLICATE_VOTER, VOTER_NOT_FOUND, INVALID_REQUEST.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from . import errors
from .records import VOTERS
from .replicas import ReplicaProgress
from .rpc import InvalidRequest, Refused, field
from .states import StateKind
from .voter_set import (MAX_KRAFT_VERSION, MIN_KRAFT_VERSION, ReplicaKey, VoterNode, VoterSet,
                        endpoint_of)

if TYPE_CHECKING:
    from .raft import RaftNode


def check_change_allowed(*, is_leader: bool, epoch_committed: bool, kraft_version: int,
                         last_voters_offset: int, hw: int) -> None:
    """The checks every voter change shares, in Kafka's order. Raises :class:`Refused`:
    NOT_LEADER_OR_FOLLOWER; REQUEST_TIMED_OUT when this epoch's LeaderChange
    (``epoch_committed``) or the latest VotersRecord (at ``last_voters_offset``, -1:
    none) is not below the high watermark ``hw``; UNSUPPORTED_VERSION at kraft.version 0."""
    if not is_leader:
        raise Refused(errors.NOT_LEADER_OR_FOLLOWER)
    if not epoch_committed:
        raise Refused(errors.REQUEST_TIMED_OUT, "Request timed out waiting for leader to establish HWM "
                                                "and fence previous voter changes")
    if kraft_version < 1:
        raise Refused(errors.UNSUPPORTED_VERSION, f"Cluster doesn't support changing voters because "
                                                  f"the kraft.version feature is {kraft_version}")
    if last_voters_offset < 0 or last_voters_offset >= hw:
        raise Refused(errors.REQUEST_TIMED_OUT, f"Request timed out waiting for voters to commit the "
                                                f"latest voter change at {last_voters_offset} with HWM {hw}")


def is_caught_up(p: ReplicaProgress | None, now_ms: int, window_ms: int) -> bool:
    """A replica may become a voter iff it fetched within ``window_ms`` (the fetch timeout)
    and its FetchOffset reached the leader's log end offset within it too (ours; Kafka
    only asks that it fetched in the last hour)."""
    return (p is not None and p.last_fetch_wall_ms >= now_ms - window_ms
            and p.last_caught_up_wall_ms >= now_ms - window_ms)


def plan_add(voters: VoterSet, node: VoterNode, progress: ReplicaProgress | None, now_ms: int,
             window_ms: int) -> VoterSet:
    """The voter set with ``node`` added (KIP-853 AddVoter). Raises :class:`Refused`
    DUPLICATE_VOTER when its id is a voter already, REQUEST_TIMED_OUT when it is not
    caught up (:func:`is_caught_up`)."""
    if voters.get(node.id) is not None:
        raise Refused(errors.DUPLICATE_VOTER, f"The voter id for {node.key} is already part of the set "
                                              f"of voters {voters.ids}.")
    if not is_caught_up(progress, now_ms, window_ms):
        raise Refused(errors.REQUEST_TIMED_OUT, f"Aborted add voter operation for {node.key} since it "
                                                f"is lagging behind")
    return voters.add(node)


def plan_remove(voters: VoterSet, key: ReplicaKey) -> VoterSet:
    """The voter set without ``key`` (KIP-853 RemoveVoter). Raises :class:`Refused`
    VOTER_NOT_FOUND when ``key`` (id and directory id) is not a voter, INVALID_REQUEST when
    it is the last one."""
    out = voters.remove(key)
    if out is None:
        raise Refused(errors.VOTER_NOT_FOUND, f"Cannot remove voter {key} from the set of voters "
                                              f"{[v.key for v in voters.voters]}")
    if not out.voters:
        raise Refused(errors.INVALID_REQUEST, f"Cannot remove {key}: the last voter")
    return out


def plan_update(voters: VoterSet, node: VoterNode) -> VoterSet:
    """The voter set with voter ``node.key``'s endpoint replaced (KIP-853 UpdateVoter). Raises
    :class:`Refused` VOTER_NOT_FOUND when it is not a voter."""
    out = voters.update(node)
    if out is None:
        raise Refused(errors.VOTER_NOT_FOUND, f"Updated voter {node.key} doesn't exist in the set of "
                                              f"voters {[v.key for v in voters.voters]}")
    return out


def should_resign(voters: VoterSet, local: ReplicaKey, hw: int, last_voters_offset: int) -> bool:
    """A leader resigns once a voter set without it is committed (KIP-853 RemoveVoter step 7)."""
    return not voters.is_voter(local) and hw > last_voters_offset


def _voter_node(body: dict) -> VoterNode:
    vid = field(body, "VoterId", int)
    vdir = field(body, "VoterDirectoryId", str)
    try:
        host, port = endpoint_of(field(body, "Listeners", list))
    except ValueError as e:
        raise InvalidRequest(f"Listeners: {e}") from None
    return VoterNode(vid, vdir, host, port)


class MembershipService:
    """Serves AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter for ``node`` (a RaftNode)."""

    def __init__(self, node: "RaftNode"):
        self.node = node

    def _check(self) -> None:
        n = self.node
        check_change_allowed(is_leader=n.kind is StateKind.LEADER and not n.stopping,
                             epoch_committed=n.hw > n._epoch_start, kraft_version=n.voter_history.kraft_version,
                             last_voters_offset=n.voter_history.last_offset, hw=n.hw)

    async def _append(self, voters: VoterSet, timeout_ms: int | None, wait: bool = True) -> dict:
        n = self.node
        if not wait:
            n.append_control(VOTERS, voters.to_payload())
            return {"ErrorCode": errors.NONE}
        await n.append_and_commit(voters.to_payload(), rtype=VOTERS, timeout_ms=timeout_ms)
        return {"ErrorCode": errors.NONE}

    async def handle_add_voter(self, body: dict) -> dict:
        """AddRaftVoter: ``VoterId``, ``VoterDirectoryId``, ``Listeners`` [{Name, Host, Port}],
        optional ``TimeoutMs`` (ms, default request.timeout.ms) and ``AckWhenCommitted``
        (default true). Answers ``{"ErrorCode", "ErrorMessage"?}`` once the new set is
        committed. Raises InvalidRequest for a bad field."""
        node = _voter_node(body)
        timeout_ms = field(body, "TimeoutMs", int, optional=True)
        n = self.node
        try:
            self._check()
            now_ms = n.wall_ms()
            new = plan_add(n.voters, node, n.replicas.get(n.voters, node.key), now_ms, n.cfg.fetch_timeout_ms)
            return await self._append(new, timeout_ms, body.get("AckWhenCommitted", True) is not False)
        except Refused as e:
            return e.body

    async def handle_remove_voter(self, body: dict) -> dict:
        """RemoveRaftVoter: ``VoterId``, ``VoterDirectoryId``. Answers once the new set is
        committed; a leader that removed itself then resigns (:func:`should_resign`)."""
        key = ReplicaKey(field(body, "VoterId", int), field(body, "VoterDirectoryId", str))
        try:
            self._check()
            return await self._append(plan_remove(self.node.voters, key), None)
        except Refused as e:
            return e.body

    async def handle_update_voter(self, body: dict) -> dict:
        """UpdateRaftVoter: ``CurrentLeaderEpoch``, ``VoterId``, ``VoterDirectoryId``,
        ``Listeners``, ``KRaftVersionFeature`` {MinSupportedVersion, MaxSupportedVersion}.
        Answers once the new set is appended (Kafka does not wait for the commit), with
        ``CurrentLeader`` {LeaderId, LeaderEpoch, Host, Port}."""
        node = _voter_node(body)
        epoch = field(body, "CurrentLeaderEpoch", int)
        feature = field(body, "KRaftVersionFeature", dict, optional=True) or {}
        lo = feature.get("MinSupportedVersion", MIN_KRAFT_VERSION)
        hi = feature.get("MaxSupportedVersion", MAX_KRAFT_VERSION)
        n = self.node
        leader = {"LeaderId": n.leader_id, "LeaderEpoch": n.epoch, "Host": n.cfg.listen_host,
                  "Port": n.cfg.listen_port}
        try:
            err = n._epoch_error(epoch)
            if err is not None:
                raise Refused(err)
            self._check()
            if not (isinstance(lo, int) and isinstance(hi, int) and lo <= n.voter_history.kraft_version <= hi):
                raise Refused(errors.INVALID_REQUEST, f"kraft.version range {lo}..{hi} does not support "
                                                      f"the finalized version {n.voter_history.kraft_version}")
            out = await self._append(plan_update(n.voters, node), None, wait=False)
        except Refused as e:
            out = e.body
        return {**out, "CurrentLeader": leader}
