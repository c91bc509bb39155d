"""Off switches for safety mechanisms (``unsafe=`` in the node config, ``--unsafe`` in the harness).

Each brings back a known bug so the harness can show it catches it. Never
use them outside tests. The cores (kraft/quorum/, kraft/replication/) consult one
:class:`Unsafe` policy object by attribute (``policy.no_fsync``), built once from the
switch set with :meth:`Unsafe.of`.
"""
from __future__ import annotations

import dataclasses
from typing import Iterable

SWITCHES = {
    "no-fsync": "records count toward the high watermark before they are on disk (KAFKA-10533)",
    "early-high-watermark": "the high watermark advances before this epoch's LeaderChange commits (KAFKA-12619)",
    "leader-restart": "a node that crashed as leader restarts as leader of the same epoch (KAFKA-10527)",
    "forget-vote": "votes are not persisted, so a restart can vote twice in one epoch",
    "no-read-index": "reads (Read and KvGet) are served from local state by any node, without confirming leadership",
    "no-check-quorum": "a leader cut off from the majority never resigns (KAFKA-15489)",
    "no-pre-vote": "elections skip Pre-Vote, so a rejoining node disrupts a stable leader (KIP-996)",
    "vote-after-failed-prevote": "a voter that loses its Pre-Vote sends standard votes anyway, "
                                 "bumping every voter's epoch (KIP-996's rejected alternative: a "
                                 "wiped voter then helps a lagging one win)",
    "vote-ignores-offset": "the up-to-date check of Vote and Pre-Vote compares last epochs only, so a "
                           "voter behind in the same epoch can win and truncate committed records "
                           "(Raft 5.4.1)",
    "commit-minority": "the high watermark is the position n/2 voters reached instead of n/2 + 1, so "
                       "a minority with the leader commits (a quorum-size off-by-one)",
    "ack-before-commit": "an Append is answered once the leader has it on its own disk, before a "
                         "majority does (acks=1 behaviour)",
    "lease-read": "a leader answers linearizable reads from its high watermark without confirming "
                  "its leadership with a majority (a lease never checked)",
    "hw-below-min-isr": "a partition leader's high watermark advances while its ISR is smaller than "
                        "min.insync.replicas (Kafka before KIP-966), so consumers read records only "
                        "the leader holds, which an unclean election then takes away",
    "no-fetch-validation": "the leader skips the (FetchOffset, LastFetchedEpoch) check, so a follower "
                           "keeps a deposed leader's uncommitted records under newer ones (the "
                           "truncation bug KIP-101 and KIP-595's DivergingEpoch fix)",
    "truncate-to-hw": "a broker becoming a follower truncates its partition log to its own high "
                      "watermark checkpoint instead of asking the leader (OffsetForLeaderEpoch), so "
                      "acknowledged records are lost or replicas diverge (Kafka 0.8; KIP-101)",
    "reset-election-timer": "a voter restarts its election timer at every higher epoch it learns of, "
                            "even while Unattached, Prospective or Candidate (fixed in dceac3b, as "
                            "Kafka's QuorumState keeps the remaining time): without Pre-Vote a "
                            "laggard standing again and again keeps every up-to-date voter from "
                            "standing, and the quorum stays leaderless (a livelock)",
    "page-cache-ack": "a broker counts partition records toward the high watermark once written "
                      "to the page cache, fsyncing only every log.flush.interval.ms (Kafka's real "
                      "default; a power loss loses acknowledged records)",
    "recover-epoch-from-log": "a restart resumes in the epoch of its log's last record when "
                              "quorum-state's is newer (the reverse of Kafka's QuorumState.initialize "
                              "check), forgetting the vote and leader of an epoch the log holds no "
                              "record of: the epoch goes back, and the node may vote twice in one epoch "
                              "(kraft/storage/recovery.py)",
    "kv-cas-at-propose": "the leader decides a kv cas when it proposes it, from its state machine as "
                         "applied then, not when the command applies in log order: a command still "
                         "uncommitted ahead of it is missed, so a client is told a cas succeeded that "
                         "changed nothing, or failed that took effect (kraft/state_machines/kv.py)",
}

#: What kind of safety mechanism each switch turns off.
CLASSES = {
    "no-fsync": "acknowledgement", "early-high-watermark": "commit", "leader-restart": "recovery",
    "forget-vote": "elections", "no-read-index": "reads", "no-check-quorum": "elections",
    "no-pre-vote": "elections", "vote-after-failed-prevote": "elections", "vote-ignores-offset": "elections", "commit-minority": "commit",
    "ack-before-commit": "acknowledgement", "lease-read": "reads", "no-fetch-validation": "recovery", "hw-below-min-isr": "reads",
    "truncate-to-hw": "recovery", "page-cache-ack": "acknowledgement", "recover-epoch-from-log": "recovery",
    "kv-cas-at-propose": "reads", "reset-election-timer": "elections",
}


def parse(text: str) -> frozenset[str]:
    """Parse a comma-separated list of switch names; raises ValueError naming an unknown one."""
    names = frozenset(s.strip() for s in text.split(",") if s.strip())
    bad = sorted(names - SWITCHES.keys())
    if bad:
        raise ValueError(f"unknown unsafe switch {', '.join(bad)}: choose from {', '.join(sorted(SWITCHES))}")
    return names


#: switches that bring others along: the bug they plant shows only with those off too.
#: ``reset-election-timer`` is the livelock as it was found, in elections without Pre-Vote
#: (with Pre-Vote, a laggard's failed Pre-Votes bump no epoch, so nobody's timer restarts).
IMPLIES: dict[str, tuple[str, ...]] = {"reset-election-timer": ("no-pre-vote",)}


@dataclasses.dataclass(frozen=True, slots=True)
class Unsafe:
    """The unsafe policy the cores consult: one boolean per switch of :data:`SWITCHES`, named
    as the switch with ``_`` for ``-`` (``no-fsync`` -> :attr:`no_fsync`). All False (the
    default) is the correct build. Build one with :meth:`of`."""

    no_fsync: bool = False
    early_high_watermark: bool = False
    leader_restart: bool = False
    forget_vote: bool = False
    no_read_index: bool = False
    no_check_quorum: bool = False
    no_pre_vote: bool = False
    vote_after_failed_prevote: bool = False
    vote_ignores_offset: bool = False
    commit_minority: bool = False
    ack_before_commit: bool = False
    lease_read: bool = False
    hw_below_min_isr: bool = False
    no_fetch_validation: bool = False
    truncate_to_hw: bool = False
    page_cache_ack: bool = False
    recover_epoch_from_log: bool = False
    kv_cas_at_propose: bool = False
    reset_election_timer: bool = False

    @classmethod
    def of(cls, switches: Iterable[str] = ()) -> "Unsafe":
        """The policy with ``switches`` (names of :data:`SWITCHES`) on; raises ValueError
        naming an unknown one."""
        names = frozenset(switches)
        bad = sorted(names - SWITCHES.keys())
        if bad:
            raise ValueError(f"unknown unsafe switch {', '.join(bad)}: choose from {', '.join(sorted(SWITCHES))}")
        names |= {i for n in names for i in IMPLIES.get(n, ())}
        return cls(**{n.replace("-", "_"): True for n in names})

    @property
    def switches(self) -> frozenset[str]:
        """The names of the switches that are on."""
        return frozenset(f.name.replace("_", "-") for f in dataclasses.fields(self) if getattr(self, f.name))


#: The correct build: every safety mechanism on.
SAFE = Unsafe()
