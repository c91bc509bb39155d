"""The bug catalogue: every ``--unsafe`` switch of kraft/, what it stands for, and the
schedule that exposes it best (harness/config/schedules.py; ``kraft-chaos bugs`` runs each).

Each :class:`Bug` names its switch, the KAFKA JIRA it stands for where one exists
(``../shared/reference/kraft-protocol.md``), its class and its schedule.
"""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Bug:
    """One catalogue entry: ``switches`` (the ``--unsafe`` value; a switch that needs another
    to show, like leader-restart without a power-loss fault, lists both), ``jira``, ``klass``
    (elections, commit, acknowledgement, reads, recovery), ``schedule`` (a :data:`SCHEDULES`
    name) and ``note``."""

    name: str
    switches: tuple[str, ...]
    klass: str
    schedule: str
    jira: str | None = None
    note: str = ""


CATALOGUE: tuple[Bug, ...] = (
    Bug("no-fsync", ("no-fsync",), "acknowledgement", "crash", "KAFKA-10533"),
    Bug("early-high-watermark", ("early-high-watermark",), "commit", "catchup", "KAFKA-12619",
        "shows when a new leader, which never heard its predecessor's last high watermark, "
        "answers reads while its only follower catches up over several Fetches"),
    Bug("leader-restart", ("leader-restart", "no-fsync"), "recovery", "crash", "KAFKA-10527",
        "needs lost unsynced writes to show: no-fsync provides them under plain crashes (5/5); "
        "on its own, real power losses (lazyfs) drop the leader's unflushed tail: caught in 2 of "
        "5 runs under the power schedule and 3 of 5 under power-leader, whose other 2 runs "
        "ended unknown with no leader after healing (issue 16)"),
    Bug("forget-vote", ("forget-vote",), "elections", "elect5", None,
        "caught when a candidate, whose vote for itself was never written, is killed and comes "
        "back in its old epoch (epoch-regression)"),
    Bug("no-read-index", ("no-read-index",), "reads", "isolate", None),
    Bug("no-check-quorum", ("no-check-quorum",), "elections", "isolate", "KAFKA-15489"),
    Bug("no-pre-vote", ("no-pre-vote",), "elections", "rejoin", None, "KIP-996"),
    Bug("vote-after-failed-prevote", ("vote-after-failed-prevote",), "elections", "rejoin", None,
        "KIP-996's rejected alternative: a node back from a partition loses its Pre-Vote, then "
        "bumps the epoch with standard votes; with a wiped voter it loses data "
        "(`kraft-chaos scenario disk-loss-timeline`, variant b)"),
    Bug("reset-election-timer", ("reset-election-timer", "no-pre-vote"), "elections", "rejoin", None,
        "the election-timer livelock (fixed in dceac3b): needs elections without Pre-Vote to "
        "show, so it runs with no-pre-vote; a follower back from a partition, behind, stands "
        "again and again and every bump of the epoch restarts the others' timers, so no one "
        "who could win ever stands: the liveness checker finds the leaderless windows (the "
        "simulator's liveness invariant too); no-pre-vote alone only disrupts (disruptive-election)"),
    Bug("vote-ignores-offset", ("vote-ignores-offset",), "elections", "lag", None),
    Bug("commit-minority", ("commit-minority",), "commit", "isolate", None),
    Bug("ack-before-commit", ("ack-before-commit",), "acknowledgement", "isolate", None),
    Bug("lease-read", ("lease-read",), "reads", "isolate", None),
    Bug("no-fetch-validation", ("no-fetch-validation",), "recovery", "isolate", None,
        "KIP-101's truncation bug class"),
    Bug("truncate-to-hw", ("truncate-to-hw",), "recovery", "queue-crash", "KIP-101",
        "the data plane's brokers: a follower that restarts truncates to its high watermark "
        "checkpoint, which lags the leader's, and may then be elected without records the "
        "leader acknowledged"),
    Bug("hw-below-min-isr", ("hw-below-min-isr",), "reads", "isr-shrink", "KIP-966",
        "consumers read records that only a partition leader alone held (its ISR below "
        "min.insync.replicas), which the unclean election then replaces: "
        "inconsistent-offsets"),
    Bug("page-cache-ack", ("page-cache-ack",), "acknowledgement", "queue-power", None,
        "the data plane's brokers acknowledge from the page cache (Kafka's default "
        "flush settings); a power loss of the replicas loses acknowledged records"),
    Bug("recover-epoch-from-log", ("recover-epoch-from-log",), "recovery", "crash", None,
        "the restart's recovery (kraft/storage/recovery.py) resumes in the log's last epoch: a node "
        "restarted during or just after an election comes back in an older epoch "
        "(epoch-regression) and may vote in it again"),
    Bug("kv-cas-at-propose", ("kv-cas-at-propose",), "reads", "kv", None,
        "the kv state machine decides a cas at proposal against its applied state: a write "
        "still uncommitted ahead of it on the same key is missed (linearizability)"),
)


def bug_named(name: str) -> Bug:
    """The catalogue entry ``name``; ValueError naming the choices otherwise."""
    for bug in CATALOGUE:
        if bug.name == name:
            return bug
    raise ValueError(f"unknown bug {name!r}: choose from {', '.join(b.name for b in CATALOGUE)}")
