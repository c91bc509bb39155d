"""Apache Kafka's own KRaft bugs (``kraft-chaos bugs --db kafka``): one table, :data:`KAFKA_CATALOGUE`.

Each :class:`KafkaBug` is a real bug of a Kafka release: its JIRA and one-line cause, the
first release of our range that has it (``introduced``) and the first fixed patch of each
release line that got the fix (``fixed_in``), the release (and kraft.version) the catalogue
runs as affected and the one it runs as fixed, the schedule that exposes it
(harness/config/schedules.py, ``SCHEDULES``; a ``kafka`` schedule), and the anomaly kinds
it shows (checker names). ``kraft-chaos bugs --db kafka`` runs each on both releases and
scores a run as detecting the bug only when it shows one of those kinds: every 3.x release
lacks Pre-Vote, so its runs under cut-and-heal schedules also show
``disruptive-election``, which is true behaviour of that release, reported, never a detection of
an entry about something else. ``kraft-chaos bisect`` reads the same table.

:data:`KAFKA_CANDIDATES` lists the bugs looked for but not yet reproduced on demand: their
schedules join the hunt's rotation, and they are neither run by ``bugs`` nor known kinds.

What a release line is known to show (:func:`known_kinds`) is derived from this table;
the evidence for each entry (commits, release source jars, runs) is in
``docs/kafka-bugs.md``.
"""
from __future__ import annotations

import dataclasses

from checkers.registry import checker_of
from harness.config.schedules import SCHEDULES
from targets.kafka.releases import parse_version
from targets.registry import target_spec
from workloads.registry import workload_spec

#: the classes of the Kafka catalogue (issue 25)
KAFKA_CLASSES = ("elections and Pre-Vote", "leader fencing and check quorum", "high watermark and commit",
                 "disk loss and recovery", "membership", "replication and ISR", "transactions")


@dataclasses.dataclass(frozen=True)
class Side:
    """A release to run: ``version`` (``"3.6.2"``) and ``kraft_version`` (None: the release's
    default, 1 from 3.9, else 0)."""

    version: str
    kraft_version: int | None = None

    def label(self) -> str:
        """``3.9.2`` or ``3.9.2 kv0``."""
        return self.version + (f" kv{self.kraft_version}" if self.kraft_version is not None else "")


def _key(version: str) -> tuple[int, int, int]:
    return parse_version(version)[:3]


@dataclasses.dataclass(frozen=True)
class KafkaBug:
    """One bug of Apache Kafka's KRaft.

    ``jira`` (its name in ``--only``), ``klass`` (one of :data:`KAFKA_CLASSES`), ``cause``
    (one line), ``introduced`` (the first release of kraft-chaos's range, 3.3.x on, that has
    it), ``fixed_in`` (the first fixed patch of every line that got the fix, oldest first;
    every later line is fixed; empty: no release fixes it), ``kraft_versions`` (where it
    exists: a bug of static quorums only is ``(0,)``), ``affected``/``fixed`` (the
    :class:`Side` the catalogue runs as affected and as fixed), ``schedule`` (a
    ``SCHEDULES`` name), ``kinds`` (the anomalies, by checker name, a run must show to count
    as detecting it), ``note``.
    """

    jira: str
    klass: str
    cause: str
    introduced: str
    fixed_in: tuple[str, ...]
    affected: Side
    fixed: Side
    schedule: str
    kinds: tuple[str, ...]
    kraft_versions: tuple[int, ...] = (0, 1)
    note: str = ""

    @property
    def name(self) -> str:
        """The entry's name: its JIRA id."""
        return self.jira

    def affects(self, version: str, kraft_version: int) -> bool:
        """Whether release ``version`` at ``kraft_version`` has the bug: at or after
        ``introduced``, a kraft.version it exists at, and neither at or past the fix of its own
        line nor on a line after the last one fixed."""
        v = _key(version)
        if v < _key(self.introduced) or kraft_version not in self.kraft_versions:
            return False
        for fix in self.fixed_in:
            f = _key(fix)
            if v[:2] == f[:2]:
                return v < f
        return not self.fixed_in or v[:2] < _key(self.fixed_in[-1])[:2]

    def run_fields(self, side: Side) -> dict:
        """The :class:`harness.config.run.RunConfig` fields (no seed, store or subnet) of a run
        of this entry on ``side``: its schedule's, on that release and kraft.version."""
        fields = SCHEDULES[self.schedule].run_config()
        fields.update(db="kafka", kafka_version=side.version, kraft_version=side.kraft_version)
        return fields

    def fixed_text(self) -> str:
        """The fixing releases, or what fixes it, for tables: ``3.5.2, 3.6.0``."""
        return ", ".join(self.fixed_in) or self.fixed.label()


KAFKA_CATALOGUE: tuple[KafkaBug, ...] = (
    KafkaBug("KAFKA-15312", "disk loss and recovery",
             "a snapshot is renamed into place without an fsync of its data: after a power loss the "
             "controller finds an empty or torn snapshot and exits at every start",
             "3.3.0", ("3.5.2", "3.6.0"), Side("3.5.1", 0), Side("3.5.2", 0), "kafka-snapshot-power", ("crashed-node",),
             note="FileRawSnapshotWriter.freeze() closed the channel and moved the file without "
                  "channel.force(true); fixed on 3.5 and from 3.6.0 (3.3 and 3.4 have no later patch). "
                  "On 3.5.1 the restarted controller's MetadataLoader fails on the empty snapshot "
                  "(NoSuchElementException in RecordsSnapshotReader.lastContainedLogTimestamp) and "
                  "the fault handler ends the process at every start"),
    KafkaBug("KAFKA-15489", "leader fencing and check quorum",
             "no check quorum: a leader cut off from the majority never resigns and answers as leader "
             "of its old epoch beside the new one",
             "3.3.0", ("3.7.0",), Side("3.6.2", 0), Side("3.7.0", 0), "kafka-fence", ("stale-leader",),
             note="LeaderState gained timeUntilCheckQuorumExpires in 3.7.0 (37416e1aeba)"),
    KafkaBug("KAFKA-16164", "elections and Pre-Vote",
             "no Pre-Vote (KIP-996): a voter that timed out while cut off raises the epoch and deposes a "
             "leader that it and a majority could reach the whole time",
             "3.3.0", ("4.0.0",), Side("3.9.2"), Side("4.0.0"), "kafka-rejoin", ("disruptive-election",),
             note="Pre-Vote shipped in 4.0.0 (KAFKA-17641 Vote v2, KAFKA-17642 ProspectiveState)"),
    KafkaBug("KAFKA-14077", "disk loss and recovery",
             "a static voter whose disk was wiped comes back with an empty log and no vote, still a "
             "voter: it elects a lagging candidate, and the old leader truncates committed records",
             "3.3.0", (), Side("3.9.2", 0), Side("3.9.2", 1), "kafka-wiped-voter", ("lost-write",),
             kraft_versions=(0,),
             note="fixed by kraft.version 1 (KIP-853, from 3.9.0): the wiped node has a new directory "
                  "id, so it is an observer; never fixed for static quorums"),
    KafkaBug("KAFKA-17030", "membership",
             "a voter removed while it was cut off never learns of its removal: back, it stands for "
             "election at a higher epoch and deposes the leader of the new voter set",
             "3.9.0", ("4.0.0",), Side("3.9.2"), Side("4.0.0"), "kafka-remove-partitioned",
             ("disruptive-election",), kraft_versions=(1,),
             note="3.9.1 makes an unattached removed voter fetch from the bootstrap servers; a removed "
                  "follower that timed out still campaigns until Pre-Vote (4.0.0)"),
    KafkaBug("KAFKA-15332", "replication and ISR",
             "no Eligible Leader Replicas (KIP-966): the last in-sync replica of a partition loses power "
             "and is elected again with the log its disk kept, so acknowledged records are lost and their "
             "offsets reused; documented behaviour of a cluster without ELR, fixed by configuration",
             "3.3.0", ("4.1.0",), Side("4.0.2", 0), Side("4.1.0", 0), "kafka-elr",
             ("lost-write", "unseen", "inconsistent-offsets"),
             note="KIP-966's umbrella JIRA (unclean-shutdown detection: KAFKA-15586). Not a one-commit "
                  "bug: without ELR the ISR never empties and its last member is electable whatever "
                  "its disk kept, which Kafka documents. ELR (eligible.leader.replicas.version=1) is "
                  "bootstrapped for new clusters from metadata version 4.1-IV0, so a 4.1.0 cluster "
                  "formatted by default has it; 4.0.x cannot enable it. With ELR the broker's unclean "
                  "re-registration (no .kafka_cleanshutdown epoch) takes it out of the ISR and ELR and a "
                  "replica stopped cleanly while the ISR was below min.insync.replicas is elected. Run at "
                  "kraft.version 0: at 1, 4.0.2's power-lost broker, its metadata log lost, stops at every "
                  "start (docs/kafka-bugs.md)"),
    KafkaBug("KAFKA-16541", "disk loss and recovery",
             "leader-epoch-checkpoint is renamed into place without an fsync when the epoch cache is "
             "truncated, which a broker does for every partition as it loads its logs: a power loss "
             "after a restart leaves it empty",
             "3.7.0", ("3.8.0",), Side("3.7.2", 0), Side("3.8.0", 0), "kafka-epoch-checkpoint",
             ("unsynced-checkpoint",),
             note="introduced by KAFKA-15046 (d71d0639d9d): LeaderEpochFileCache.truncateFromStart/End "
                  "write with sync=false; fixed by 7c30eed66c4 (3.8.0), where every CheckpointFile.write "
                  "fsyncs before the rename; never fixed on the 3.7 line (3.7.2 affected). White-box: "
                  "detected from the power loss's reverted files; no client anomaly follows, as a broker "
                  "that lost power refetches its partitions"),
    KafkaBug("KAFKA-15653", "transactions",
             "a transaction's first compressed produce to a partition is validated, after the coordinator "
             "verified the partition, on whichever request-handler thread runs the callback but with the "
             "decompression buffers of the thread that took the request in; two threads then share one "
             "thread-confined buffer pool and a valid batch fails as INVALID_RECORD, CORRUPT_MESSAGE or "
             "UNKNOWN_SERVER_ERROR",
             "3.6.0", ("3.6.1",), Side("3.6.0", 0), Side("3.6.1", 0), "kafka-txn-none", ("server-error",),
             note="3.6.0 shipped KIP-890 part 1 with transaction.partition.verification.enable=true: "
                  "ReplicaManager.appendRecords hands the append to a callback wrapped by "
                  "KafkaRequestHandler.wrap, which re-enqueues it onto any handler thread, while the "
                  "closure keeps the first thread's RequestLocal, whose BufferSupplier is a plain HashMap of "
                  "ArrayDeques. Fixed in 3.6.1 (814de813eaa, trunk 91fa196930e), which passes the running "
                  "thread's RequestLocal to the callback; disabling the verification avoids it on 3.6.0. "
                  "Fault-free, a race: only compressed batches touch the supplier, and its rate grows with "
                  "the number of verifications answered together. Detected from the history alone by the "
                  "txn checker's server-error: measured in 2 of 3 runs on 3.6.0 (about one episode per "
                  "110 s of load on the loaded 2-core machine), 0 of 1 on 3.6.1 (docs/kafka-bugs.md)"),
)


@dataclasses.dataclass(frozen=True)
class KafkaCandidate:
    """A bug the catalogue looks for but cannot yet run on both sides 5 times: ``jira``,
    ``cause``, the ``schedules`` written for it (``kraft-chaos hunt --db kafka`` rotates through
    them, as through every entry's), the ``kinds`` it would show, and what a reproduction still
    ``needs``. Not scored by ``bugs`` and not in :func:`known_kinds`."""

    jira: str
    cause: str
    schedules: tuple[str, ...]
    kinds: tuple[str, ...]
    needs: str


#: the candidates (docs/kafka-bugs.md, "Not in the catalogue")
KAFKA_CANDIDATES: tuple[KafkaCandidate, ...] = (
    KafkaCandidate("KAFKA-17754",
                   "a delayed EndTxn or produce joins the next transaction of the same producer epoch "
                   "(the old transaction protocol): aborted reads, lost writes, torn transactions",
                   ("kafka-txn-coordinator-pause", "kafka-txn-coordinator-kill"), ("G1a", "lost-write", "G1c"),
                   "the txn workload (send/poll/txn micro-ops, its clients in targets/kafka/txn_*), with "
                   "an opt-in client mode that aborts after a commit timeout; librdkafka on the affected "
                   "side and the Java client 4.1+ with transaction version 2 on the fixed side; Jepsen saw "
                   "it under random pauses but not on demand, so well below 5/5 per 90 s run is expected"),
)

#: every entry by name
_BY_NAME = {b.jira: b for b in KAFKA_CATALOGUE}


def kafka_bug_named(name: str) -> KafkaBug:
    """The entry ``name`` (a JIRA id, any case); ValueError naming the choices otherwise."""
    bug = _BY_NAME.get(name.upper())
    if bug is None:
        raise ValueError(f"unknown Kafka bug {name!r}: choose from {', '.join(_BY_NAME)}")
    return bug


def known_kinds(version: str, kraft_version: int, workload: str | None = None) -> dict[str, list[str]]:
    """``{anomaly kind: [JIRA, ...]}``: what Kafka ``version`` at ``kraft_version`` is known
    to show under faults, from the entries that affect it. With ``workload``, only what a run
    of it is known to show: a kind of an entry whose schedule runs another workload counts
    only when the same checker reports it in both (``disruptive-election``: yes; the metadata
    workload's ``lost-write`` and the queue's: no, the same name from two checkers)."""
    out: dict[str, list[str]] = {}
    mine = checker_of(workload_spec(workload).checkers) if workload else {}
    for bug in KAFKA_CATALOGUE:
        if bug.affects(version, kraft_version):
            theirs = checker_of(workload_spec(bug_workload(bug)).checkers) if workload else {}
            for kind in bug.kinds:
                if workload is None or (kind in mine and mine[kind] == theirs.get(kind)):
                    out.setdefault(kind, []).append(bug.jira)
    return out


def bug_workload(bug: KafkaBug) -> str:
    """The workload the entry's schedule runs (its own, or its target's default)."""
    sched = SCHEDULES[bug.schedule]
    return sched.run_config().get("workload") or target_spec(sched.db).default_workload
