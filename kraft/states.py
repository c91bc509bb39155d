"""The released KRaft state machine's states (KIP-595 + KIP-996; QuorumState.java)."""
import enum


class StateKind(enum.Enum):
    """Unattached, Prospective, Candidate, Leader, Follower, Resigned."""

    UNATTACHED = "Unattached"
    PROSPECTIVE = "Prospective"
    CANDIDATE = "Candidate"
    LEADER = "Leader"
    FOLLOWER = "Follower"
    RESIGNED = "Resigned"
