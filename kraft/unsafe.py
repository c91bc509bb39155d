"""Off switches for safety mechanisms (``unsafe=`` in the node config, ``--unsafe`` in the harness).

Each brings back a known bug so the harness can show it catches it. Never
use them outside tests.
"""

SWITCHES = {
    "no-fsync": "records count toward the high watermark before they are on disk (KAFKA-10533)",
    "early-high-watermark": "the high watermark advances before this epoch's LeaderChange commits (KAFKA-12619)",
    "leader-restart": "a node that crashed as leader restarts as leader of the same epoch (KAFKA-10527)",
    "forget-vote": "votes are not persisted, so a restart can vote twice in one epoch",
    "no-read-index": "reads (Read and KvGet) are served from local state by any node, without confirming leadership",
    "no-check-quorum": "a leader cut off from the majority never resigns (KAFKA-15489)",
    "no-pre-vote": "elections skip Pre-Vote, so a rejoining node disrupts a stable leader (KIP-996)",
}


def parse(text: str) -> frozenset[str]:
    """Parse a comma-separated list of switch names; raises ValueError naming an unknown one."""
    names = frozenset(s.strip() for s in text.split(",") if s.strip())
    bad = sorted(names - SWITCHES.keys())
    if bad:
        raise ValueError(f"unknown unsafe switch {', '.join(bad)}: choose from {', '.join(sorted(SWITCHES))}")
    return names
