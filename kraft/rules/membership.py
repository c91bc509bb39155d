"""The rules of voter changes: AddRaftVoter (80), RemoveRaftVoter (81) and UpdateRaftVoter
(82) (KIP-853; Kafka's AddVoterHandler, RemoveVoterHandler, UpdateVoterHandler).

Pure functions over the leader's state; kraft/quorum/voter_changes.py applies them:
it appends the new VotersRecord (the voter set changes as soon as it is appended,
kraft/rules/voter_set.py) and answers once it is committed by a majority of the *new* set
(UpdateRaftVoter answers at once, as Kafka's does). At most one voter change is
uncommitted at a time. Errors use
Kafka's names: NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT (the epoch's
LeaderChange or the last voter change is not committed yet, the new voter is
not caught up, or the change did not commit in time), UNSUPPORTED_VERSION
(kraft.version 0), DUPLICATE_VOTER, VOTER_NOT_FOUND, INVALID_REQUEST.
"""
from __future__ import annotations

from ..core import errors
from ..core.rpc import Refused
from .replicas import ReplicaProgress
from .voter_set import ReplicaKey, VoterNode, VoterSet


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
