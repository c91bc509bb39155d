"""The released KRaft state machine's states (KIP-595 + KIP-996; QuorumState.java), and the
election state a replica persists in ``quorum-state`` (kraft/storage/quorum_state.py)."""
from __future__ import annotations

import dataclasses
import enum


class StateKind(enum.Enum):
    """Unattached, Prospective, Candidate, Leader, Follower, Resigned."""

    UNATTACHED = "Unattached"
    PROSPECTIVE = "Prospective"
    CANDIDATE = "Candidate"
    LEADER = "Leader"
    FOLLOWER = "Follower"
    RESIGNED = "Resigned"


@dataclasses.dataclass(frozen=True)
class ElectionState:
    """What survives a restart: ``epoch``, ``leader_id`` (-1 if unknown),
    ``voted_id`` (-1 if none) and ``voted_directory_id`` (str or None)."""

    epoch: int = 0
    leader_id: int = -1
    voted_id: int = -1
    voted_directory_id: str | None = None
