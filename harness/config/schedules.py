"""The named schedules: sets of ``kraft-chaos run`` settings, ``default`` among them (what
``kraft-chaos run`` and ``make run`` run when not told otherwise); the bug catalogue
(harness/catalogue/bugs.py) names the one that exposes each bug best.

A :class:`Schedule` is a set of ``kraft-chaos run`` settings (nemeses, their
mode and timing, workload, cluster size, length). :data:`SCHEDULES` names
them; ``default`` is what ``make run`` uses.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from harness.config.scenario import builtin_scenarios, load, retarget


@dataclasses.dataclass(frozen=True)
class Schedule:
    """``kraft-chaos run`` settings: nemeses and mode, interval and duration (s, means in
    overlap mode), workload, nodes, time limit (s), total rate (ops/s), client workers, and
    the kraft nodes' fetch.max.records and log.segment.bytes (None: their defaults); for the
    data plane, ``brokers``, ``nemesis_targets`` (quorum, clients or all) and the workload's
    ``options`` (``((name, value), ...)``: RunConfig fields such as ``acks``). ``scenario``
    names a built-in scenario file (``kraft-chaos scenario list``) whose ``[run]`` table and
    steps are the run instead of the fields above (on ``db``, with ``options`` over its table).
    ``db``: the target it is written for (``--db``; a ``kafka`` schedule's release and
    kraft.version come from whoever runs it, e.g. a catalogue entry or ``bisect``)."""

    nemesis: tuple[str, ...]
    mode: str = "overlap"
    interval: float = 3.0
    duration: float = 3.0
    workload: str = "append"
    nodes: int = 5
    time_limit: float = 60.0
    rate: float = 200.0
    concurrency: int = 10
    fetch_max_records: int | None = None
    segment_bytes: int | None = None
    brokers: int | None = None
    nemesis_targets: str | None = None
    options: tuple[tuple[str, Any], ...] = ()
    scenario: str | None = None
    db: str = "kraft"

    def run_config(self) -> dict[str, Any]:
        """The :class:`harness.config.run.RunConfig` fields of this schedule. Raises
        ``harness.config.scenario.ScenarioError`` for a malformed scenario file."""
        if self.scenario is not None:
            path = builtin_scenarios()[self.scenario]
            doc = load(path)
            run = {k: v for k, v in retarget(doc["run"], self.db).items() if k not in ("seed", "store", "subnet")}
            return {**run, **self.fields(), "nemesis": [], "scenario": doc["steps"],
                    "scenario_file": str(path), "time_limit": self.time_limit}
        return {"db": self.db, "nemesis": list(self.nemesis), "nemesis_mode": self.mode,
                "nemesis_interval": self.interval, "nemesis_duration": self.duration,
                "workload": self.workload, "nodes": self.nodes, "time_limit": self.time_limit,
                "rate": self.rate, "concurrency": self.concurrency,
                **({"fetch_max_records": self.fetch_max_records} if self.fetch_max_records else {}),
                **({"segment_bytes": self.segment_bytes} if self.segment_bytes else {}),
                **({"brokers": self.brokers} if self.brokers else {}),
                **({"nemesis_targets": self.nemesis_targets} if self.nemesis_targets else {}),
                **self.fields()}

    def fields(self) -> dict[str, Any]:
        """``options`` as RunConfig fields (``kafka_props``, given as pairs, as a dict)."""
        return {k: dict(v) if k == "kafka_props" else v for k, v in self.options}

    def describe(self) -> str:
        """A short form for tables: ``partition,kill overlap 3/3 s append 5n 60 s`` (a scenario
        schedule: ``scenario isr-shrink-loss-b``)."""
        if self.scenario is not None:
            return f"scenario {self.scenario}"
        return (f"{','.join(self.nemesis) or 'none'} {self.mode} {self.interval:g}/{self.duration:g} s "
                f"{self.workload} {self.nodes}n {self.time_limit:g} s")


#: Apache Kafka's nodes in the schedules written for it: 3 combined controller+broker servers
#: (3 JVMs start in about 15 s; 5 controllers and 3 brokers take twice as long on 2 cores)
_KAFKA = (("kafka_topology", "combined"),)
#: frequent KRaft snapshots (every 2 s, or every 4 KiB of new records on 3.3, whose only knob
#: that is) and a metadata log that is cleaned up to its latest snapshot (a segment rolled
#: every 2 s of appends, a retention of 1 byte: the cleaner, every 60 s of a controller's life,
#: deletes every older snapshot and the segments before the latest), so that a controller's log
#: starts past 0 and a restart must read its latest snapshot: what recovery from a snapshot
#: needs. Segments roll by time, never by a small size: Kafka refuses an append larger than
#: ``metadata.log.segment.bytes``, and a follower catching up appends a whole Fetch response
#: (up to 8 MiB, KafkaRaftClient's fetch limit) at once, so segments below 8 MiB (the
#: testing-only ``metadata.log.segment.min.bytes`` lowered) end controllers with
#: RecordBatchTooLargeException on every release, which is no Kafka bug
_SNAPSHOTS = ("kafka_props", (("metadata.log.max.snapshot.interval.ms", "2000"),
                              ("metadata.log.max.record.bytes.between.snapshots", "4096"),
                              ("metadata.log.segment.ms", "2000"),
                              ("metadata.max.retention.bytes", "1")))
#: the largest Fetch response a KRaft follower appends at once (bytes): KafkaRaftClient's
#: ``MAX_FETCH_SIZE_BYTES`` (= ``MAX_BATCH_SIZE_BYTES``, 8 MiB); no schedule may set
#: ``metadata.log.segment.bytes`` below it
KRAFT_MAX_FETCH_BYTES = 8 * 1024 * 1024


SCHEDULES: dict[str, Schedule] = {
    # what `make run` runs: every kind of fault, overlapping within fault windows of 7 s, each
    # after 14 s of calm (Jepsen's alternation of faults and healing), so that a run spends
    # most of its time with a leader, acknowledges tens of thousands of appends, and every
    # calm window asks whether the quorum recovers (the liveness checker). `harsh` is the
    # schedule it replaced
    "default": Schedule(("partition", "kill", "pause", "crash", "flap", "elect", "lag"), mode="windows",
                        interval=14.0, duration=7.0, rate=600.0, concurrency=20, time_limit=120.0),
    # every kind of fault, overlapping without pause (the default before calm windows). Of the
    # schedules tried it caught the most catalogued bugs in one 60 s run each at 200 ops/s: 8 of
    # 12 (focused: 7; a denser overlap with two partition timelines and batch, interval 5 s:
    # 3). Its faults leave a reachable leader only 10 to 30% of the time, which the offered
    # rate does not change (60 s at 200 ops/s from 10 workers: about 1000 appends acknowledged;
    # at 600 from 20: 2500 to 4200; at 1000 from 30: 2400)
    "harsh": Schedule(("partition", "kill", "pause", "crash", "flap", "elect", "lag"),
                      interval=4.0, duration=4.0, rate=600.0, concurrency=20, time_limit=120.0),
    # the default with power losses (lazyfs disks) in place of plain crashes: the candidate
    # measured against it for issue 16's choice of default
    "default-power": Schedule(("partition", "kill", "pause", "power-loss", "flap", "elect", "lag"),
                              interval=4.0, duration=4.0),
    # focused faults one after another, each long enough to play out (the default's runner-up)
    "focused": Schedule(("partition:isolate-leader+leader-minority", "crash", "lag", "elect",
                          "partition:isolate-one+one-way-one", "kill"), mode="serial", interval=1.5,
                         duration=7.0),
    # power-loss-like crashes of a majority or of every node
    "crash": Schedule(("crash", "kill"), interval=2.0, duration=1.5, time_limit=40.0),
    # real power losses: the nodes' disks (lazyfs) drop what was not fsynced, torn writes and
    # lost renames included
    "power": Schedule(("power-loss", "kill"), interval=2.0, duration=1.5, time_limit=40.0),
    # power losses aimed at the leader as often as at anyone: a leader's unflushed tail is
    # what its followers may already hold, so losing it is what recovery bugs need
    "power-leader": Schedule(("power-loss:leader", "power-loss", "kill:leader"), interval=2.0,
                             duration=1.5, time_limit=40.0),
    # the data plane (issue 17): brokers killed and paused in quick succession, so a restarted
    # follower may be elected before it has fetched again what it truncated
    "queue-crash": Schedule(("kill", "pause"), interval=2.0, duration=1.5, workload="queue", nodes=3,
                            brokers=3, nemesis_targets="clients", time_limit=60.0),
    # the data plane: power losses of the brokers (a majority or all of them at once)
    "queue-power": Schedule(("power-loss:majority", "power-loss:all", "kill"), interval=3.0,
                            duration=1.5, workload="queue", nodes=3, brokers=3,
                            nemesis_targets="clients", time_limit=60.0),
    # the data plane: Jepsen's 2013 timeline with min.insync.replicas=2 (a broker's ISR shrinks
    # to itself, then it is cut off and replaced uncleanly; nothing acknowledged is lost)
    "isr-shrink": Schedule((), scenario="isr-shrink-loss-b", time_limit=60.0),
    # the same with 16 KiB log segments, which roll every second or two
    "power-small": Schedule(("power-loss", "kill"), interval=2.0, duration=1.5, time_limit=40.0,
                            segment_bytes=16384),
    # long partitions aimed at the leader, clients writing and reading everywhere
    "isolate": Schedule(("partition:isolate-leader+leader-minority+one-way-leader",), interval=2.0,
                        duration=8.0, time_limit=50.0),
    # a follower cut off for a while, then back into a healthy cluster (serial: nothing else
    # harms the others when it returns, so an election it causes is plainly disruptive)
    "rejoin": Schedule(("partition:isolate-one+one-way-one",), mode="serial", interval=2.0,
                       duration=6.0, time_limit=50.0),
    # elections on purpose: new leaders and voters killed at once, nodes restarted in turn
    "elect": Schedule(("elect", "kill", "rolling", "partition"), interval=2.0, duration=2.0,
                      nodes=3, time_limit=60.0),
    # elections on purpose, among five: the leader killed or cut off, so its followers stand
    # together and split their votes; whoever is seen electing is killed and restarted cut off
    "elect5": Schedule(("elect", "kill:leader", "pause:leader", "partition:isolate-leader"),
                       interval=1.5, duration=2.5, nodes=5, time_limit=80.0),
    # a follower falls behind, then the up-to-date nodes die
    "lag": Schedule(("lag",), interval=1.0, duration=4.0, time_limit=60.0),
    # among three, a follower falls behind, the leader dies, and the laggard comes back over a
    # slow link, catching up over several small Fetches: the new leader's majority is the laggard
    "catchup": Schedule(("catchup",), mode="serial", interval=1.0, duration=8.0, nodes=3,
                        time_limit=90.0, fetch_max_records=100),
    # the kv workload's registers under partitions and kills: concurrent writes and cas on few
    # keys, so a command often waits behind another uncommitted one on the same key
    "kv": Schedule(("partition", "kill"), interval=3.0, duration=2.0, workload="kv", nodes=3, time_limit=40.0),
    # -- Apache Kafka (--db kafka; the Kafka bug catalogue, harness/catalogue/kafka_bugs.py) --
    # `make run DB=kafka`: 5 controllers, 3 brokers, partitions, kills and pauses one at a time
    "kafka-default": Schedule(("partition:isolate-leader+leader-minority+random-halves+bridge",
                               "kill:leader+one+minority", "pause:leader+one"), mode="serial",
                              interval=6.0, duration=8.0, workload="metadata", time_limit=120.0,
                              rate=600.0, concurrency=20, db="kafka"),
    # leader fencing (check quorum): the leader cut off from the majority for 12 s, long past
    # its fetch timeout; a leader that keeps answering as leader beside the new one is stale
    "kafka-fence": Schedule(("partition:isolate-leader+leader-minority",), mode="serial", interval=6.0,
                            duration=12.0, workload="metadata", nodes=3, time_limit=45.0, rate=100.0,
                            db="kafka", options=_KAFKA),
    # elections (Pre-Vote): a follower cut off (both ways or its packets only) long enough to
    # time out, then back into a healthy quorum; its election deposes a leader nothing harmed
    "kafka-rejoin": Schedule(("partition:isolate-one+one-way-one",), mode="serial", interval=7.0,
                             duration=7.0, workload="metadata", nodes=3, time_limit=45.0, rate=100.0,
                             db="kafka", options=_KAFKA),
    # durability: power losses of one node or the leader (lazyfs drops what was not fsynced),
    # with snapshots every 2 s and the log cleaned up to the latest, so that recovery reads a
    # snapshot written since the last power loss; 20 s apart, for 110 s, so that most come after
    # a controller's first clean-up, 60 s after it started
    "kafka-power": Schedule(("power-loss:one+leader",), mode="serial", interval=20.0, duration=5.0,
                            workload="metadata", nodes=3, time_limit=110.0, rate=100.0, db="kafka",
                            options=(*_KAFKA, _SNAPSHOTS)),
    # durability: one follower loses power after its metadata log was cleaned up to a snapshot
    # (scenario kafka-power-after-cleaning), its disk keeping every rename and delete and losing
    # the data it never fsynced, so that its restart must load a snapshot that lives only on
    # what the release synced
    "kafka-snapshot-power": Schedule((), scenario="kafka-power-after-cleaning", time_limit=120.0,
                                     db="kafka", options=(("workload", "metadata"), *_KAFKA, _SNAPSHOTS)),
    # disk loss: KIP-996's timeline d (a voter's disk wiped, the leader crashed, a laggard left
    # with the empty voter), on Kafka's combined nodes
    "kafka-wiped-voter": Schedule((), scenario="disk-loss-timeline-d", time_limit=60.0, db="kafka",
                                  options=(("workload", "metadata"), *_KAFKA)),
    # membership: a follower cut off, removed from the voters (KIP-853) while cut off, then
    # healed; a removed voter that never learnt of its removal must not disrupt the quorum
    "kafka-remove-partitioned": Schedule((), scenario="kafka-remove-partitioned-voter", time_limit=60.0,
                                         db="kafka"),
    # -- Apache Kafka's data plane (brokers' log dirs on lazyfs, the queue workload) --
    # power losses of one broker at a time (never the controller), 25 s apart so that the broker
    # that lost power (and, Kafka fsyncing no segment by default, nearly all its log) has
    # refetched before the next: no ISR is ever left with a broker that lost power alone. At
    # kraft.version 1 a power-lost broker stops at every start, its metadata log lost (every release
    # from 3.9: docs/new-bugs/observer-unattached-with-leader.md), which this schedule would show as
    # crashed-node
    "kafka-broker-power": Schedule(("power-loss:one",), mode="serial", interval=25.0, duration=3.0,
                                   workload="queue", nodes=1, brokers=3, nemesis_targets="clients",
                                   time_limit=120.0, rate=100.0, concurrency=6, db="kafka"),
    # the last in-sync replica loses power after the two others were stopped cleanly, and
    # restarts first (KIP-966's Eligible Leader Replicas, KAFKA-15332)
    "kafka-elr": Schedule((), scenario="kafka-elr-last-replica", time_limit=120.0, db="kafka"),
    # a broker killed and restarted (its logs loaded, its leader-epoch checkpoints rewritten),
    # then a power loss of it (KAFKA-16541)
    "kafka-epoch-checkpoint": Schedule((), scenario="kafka-epoch-checkpoint-power", time_limit=120.0,
                                       db="kafka"),
    # transactions (the txn workload, Jepsen's Kafka workload; KAFKA-17754, a candidate of the
    # Kafka catalogue, names both, so the hunt rotates them for --db kafka when its workloads
    # include txn): the broker that coordinates the most transactional ids (the
    # leader of the most __transaction_state partitions), the group coordinator, or a partition's
    # leader, paused for 3 s (2 to 4 client request timeouts) every 5 s so that the pauses land
    # while commits are in flight (KAFKA-17754's delayed EndTxn and produce; Jepsen paused random
    # nodes). The coordinators are looked up at each fault's start (faults/kill.py LOCATED_KINDS)
    "kafka-txn-coordinator-pause": Schedule(("pause:txn-coordinator", "pause:group-coordinator",
                                             "pause:partition-leader"), mode="serial", interval=5.0,
                                            duration=3.0, workload="txn", nodes=1, brokers=3,
                                            nemesis_targets="clients", time_limit=90.0, rate=100.0,
                                            concurrency=10, db="kafka"),
    # the same roles killed (SIGKILL, restarted 4 s later): a coordinator's failover mid-commit
    "kafka-txn-coordinator-kill": Schedule(("kill:txn-coordinator", "kill:group-coordinator",
                                            "kill:partition-leader"), mode="serial", interval=8.0,
                                           duration=4.0, workload="txn", nodes=1, brokers=3,
                                           nemesis_targets="clients", time_limit=90.0, rate=100.0,
                                           concurrency=10, db="kafka"),
    # no fault at all: transactional produce under load, for a broker that fails valid records
    # (KAFKA-15653: 3.6.0 validates a transaction's first compressed batch to each partition in
    # a callback on another request-handler thread, with the first thread's buffer supplier,
    # which two threads then use at once). lz4-compressed values padded to 1 KiB; 32
    # transactional sessions of the Java client at no rate limit (each op's sends are the first
    # of its transaction to their partitions, so nearly every produce waits for the
    # coordinator's verification, whose answers come back together and run side by side); one
    # broker, replication factor 1 and 4 request-handler threads, so that the machine's cores
    # go to one broker's produce requests (measured on 3.6.0: 11401 acknowledged sends in 90 s
    # and 3 errors, against 3556 to 5959 and none from 20 to 48 librdkafka sessions on 3
    # brokers; 2 runs of 3 detect it, docs/kafka-bugs.md). Judged by the txn checker's server-error
    "kafka-txn-none": Schedule((), mode="serial", workload="txn", nodes=1, brokers=1, nemesis_targets="clients",
                               time_limit=120.0, rate=5000.0, concurrency=32, db="kafka",
                               options=(("client", "java"), ("compression", "lz4"), ("value_bytes", 1024),
                                        ("partitions", 8), ("replication_factor", 1), ("min_insync_replicas", 1),
                                        ("kafka_props", (("num.io.threads", "4"),)))),
}


#: what `kraft-chaos run` and `make run` run when not told otherwise
DEFAULT_SCHEDULE = SCHEDULES["default"]
