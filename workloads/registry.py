"""Every workload by name (``--workload``): what it generates, how it sends, how it ends, what checks it.

A :class:`WorkloadSpec` is all the runner needs: it builds the workload
(its generator and client), runs its final phase after healing, and checks
the run with the checkers the spec names (checkers/registry.py resolves the
names; ``workloads/`` may not import ``checkers/``). The runner names no
workload itself.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import Awaitable, Callable, Protocol

from .append import AppendWorkload, final_reads
from .base import ClientWorkload
from .kv import KvWorkload
from .metadata import MetadataWorkload, metadata_final_reads, voters_caught_up
from .queue import QueueWorkload
from .queue_drain import drain
from .txn import TxnWorkload
from .txn_final import final_polls

log = logging.getLogger("kraft_chaos.workloads")

#: seconds to wait for a leader once every fault is healed
HEALED_LEADER_TIMEOUT_S = 30.0
#: seconds to wait for every voter to reach the leader's log end offset
CATCH_UP_TIMEOUT_S = 15.0
#: seconds to retry the final linearizable read
FINAL_READ_TIMEOUT_S = 30.0
#: ... when no leader came back after healing (the reads are tried, briefly, to record that)
LEADERLESS_READ_TIMEOUT_S = 5.0

#: the checkers every workload on the KRaft quorum runs: leadership over time and the nodes' logs
QUORUM_CHECKERS = ("election-safety", "divergence", "epoch-regression", "stale-leader", "disruptive-election",
                   "crashed-node")


class Quorum(Protocol):
    """What a final phase may ask of the cluster (the runner provides it)."""

    async def wait_for_leader(self, timeout_s: float) -> str | None:
        """The leader's node name once one answers as leader, or None after ``timeout_s``."""

    async def wait_for_catch_up(self, timeout_s: float) -> bool:
        """True once every voter has reached the leader's log end offset within ``timeout_s``."""

    async def describe_leader(self) -> tuple[str | None, dict | None]:
        """``(leader node, its DescribeQuorum body)``, or ``(None, None)`` when none leads."""

    async def read_logs(self) -> dict[str, list | None]:
        """Each quorum node's log read from its data dir, ``[(offset, epoch, type, payload)]``
        (None for a node whose log could not be read)."""


async def healed_leader(quorum: Quorum) -> str | None:
    """After healing: wait for a leader, then for every voter to reach its log end offset
    (a warning for either that does not come in time); returns the leader or None."""
    leader = await quorum.wait_for_leader(HEALED_LEADER_TIMEOUT_S)
    if leader is None:
        log.warning("no leader within %.0f s after healing", HEALED_LEADER_TIMEOUT_S)
    elif not await quorum.wait_for_catch_up(CATCH_UP_TIMEOUT_S):
        log.warning("voters did not all reach the leader's log end offset within %.0f s",
                    CATCH_UP_TIMEOUT_S)
    return leader


async def append_final_phase(wl: AppendWorkload, quorum: Quorum) -> None:
    """The append workload's end: a leader, caught-up voters, then the final reads
    (the whole log linearizably via the leader, and each node's own committed prefix)."""
    leader = await healed_leader(quorum)
    log.info("final reads (leader %s)", leader)
    await final_reads(wl, leader, FINAL_READ_TIMEOUT_S if leader else LEADERLESS_READ_TIMEOUT_S)


async def settled_leader(quorum: Quorum, timeout_s: float,
                         poll_s: float = 0.5) -> tuple[str | None, dict | None]:
    """``(leader, its DescribeQuorum body)`` once one leader's own answer shows every voter at
    its log end offset (:func:`workloads.metadata.voters_caught_up`); after ``timeout_s`` (s)
    the last answer, whatever it shows, or ``(None, None)``.

    One answer both names the leader and proves the catch-up: a leader elected between a
    catch-up wait and a later DescribeQuorum (Kafka's new leader reports -1 for a voter until
    its first Fetch) cannot slip a body with lagging or unknown voters into the final reads.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        leader, body = await quorum.describe_leader()
        if leader is not None and body and voters_caught_up(body):
            return leader, body
        if loop.time() + poll_s >= deadline:
            return leader, body
        await asyncio.sleep(poll_s)


async def metadata_final_phase(wl: MetadataWorkload, quorum: Quorum) -> None:
    """The metadata workload's end: a leader, caught-up controllers, then the controllers'
    committed metadata logs, read from their data dirs, as final reads."""
    await healed_leader(quorum)
    leader, body = await settled_leader(quorum, CATCH_UP_TIMEOUT_S)
    log.info("final reads of the controllers' metadata logs (leader %s, high watermark %s)",
             leader, body.get("HighWatermark") if body else None)
    await metadata_final_reads(wl, leader, body, await quorum.read_logs())


async def queue_final_phase(wl: QueueWorkload, quorum: Quorum) -> None:
    """The queue workload's end: a quorum leader (the brokers' partition leaders come from
    it), then the drain of every partition from offset 0 to its high watermark
    (workloads/queue_drain.py, which waits for each partition's leader); then, where the
    target can read the controllers' metadata logs, their final reads (as the metadata
    workload's), so the quorum checkers judge the metadata log on every target."""
    await healed_leader(quorum)
    await drain(wl)
    await controllers_final_reads(wl, quorum)


async def controllers_final_reads(wl: ClientWorkload, quorum: Quorum) -> None:
    """The metadata log too, where the target can read it from the controllers' data dirs
    (Kafka's): the quorum checkers' final reads, as the metadata workload records them."""
    leader, body = await settled_leader(quorum, CATCH_UP_TIMEOUT_S)
    logs = await quorum.read_logs()
    if any(entries is not None for entries in logs.values()):
        await metadata_final_reads(wl, leader, body, logs)


async def txn_final_phase(wl: TxnWorkload, quorum: Quorum) -> None:
    """The txn workload's end: a quorum leader, then every key read from its beginning until
    every acknowledged offset was read (workloads/txn_final.py). Its verdict is Jepsen's
    checker's alone (the metadata workload judges the quorum)."""
    await healed_leader(quorum)
    await final_polls(wl)


@dataclasses.dataclass(frozen=True)
class WorkloadSpec:
    """A workload as the runner sees it.

    ``workload``: the :class:`~workloads.base.ClientWorkload` subclass (its
    ``generator()`` is which op next, its ``worker_class`` how an op is
    sent, its ``options_class`` the knobs). ``final``: the coroutine run
    after every fault is healed, ``final(workload, quorum)``, or None.
    ``checkers``: checker names (checkers/registry.py). ``dbs``: the targets
    (``--db``) it can run on; ``dbs_why``: why not on the others (the error's words).
    """

    name: str
    summary: str
    workload: type[ClientWorkload]
    checkers: tuple[str, ...]
    final: Callable[[ClientWorkload, Quorum], Awaitable[None]] | None = None
    dbs: tuple[str, ...] = ("kraft",)
    #: broker nodes a run gets on a target whose brokers are optional (``--db kraft``)
    #: when ``--brokers`` is not given; 0: the workload needs none
    brokers: int = 0
    #: the nodes faults touch when ``--nemesis-targets`` is not given (``targets.base.DB.
    #: fault_nodes``): ``quorum`` (the voters), ``clients`` or ``all``
    nemesis_targets: str = "quorum"
    #: True when its final phase records the committed quorum log as final reads: the
    #: membership checker judges voter changes by it (without, a run with them is unknown)
    final_log: bool = False
    dbs_why: str = ""
    #: the target settings that only its client reads (``client``, ``transaction_version``:
    #: harness/config/options.py ``CLIENT_FIELDS``); given to another workload, they are refused
    client_fields: tuple[str, ...] = ()


WORKLOAD_SPECS: dict[str, WorkloadSpec] = {
    "append": WorkloadSpec(
        "append", "unique appends and log reads; the log-safety checkers",
        AppendWorkload,
        ("lost-write", "phantom", "duplicate", "inconsistent-offsets", *QUORUM_CHECKERS,
         "nonmonotonic-read", "liveness"),
        final=append_final_phase, final_log=True),
    "kv": WorkloadSpec(
        "kv", "read/write/cas on 5 keys; linearizability by key",
        KvWorkload,
        ("linearizability", *QUORUM_CHECKERS, "liveness")),
    "metadata": WorkloadSpec(
        "metadata", "Kafka topic creations (and deletions) via the brokers; the controllers' "
        "metadata logs read from their data dirs; the log-safety checkers",
        MetadataWorkload,
        ("lost-write", "phantom", "duplicate", "unsynced-checkpoint", *QUORUM_CHECKERS),
        final=metadata_final_phase, dbs=("kafka",), final_log=True),
    "queue": WorkloadSpec(
        "queue", "Jepsen's Kafka queue: unique sends to K partitions, polls from committed "
        "positions, a final drain; Jepsen's anomaly names (lost-write, unseen, duplicate, "
        "inconsistent-offsets, nonmonotonic-poll, ...)",
        QueueWorkload,
        ("queue", "unsynced-checkpoint", *QUORUM_CHECKERS),
        final=queue_final_phase, dbs=("kraft", "kafka"), brokers=3,
        # the data plane's bugs live in the brokers: faults reach them and the controllers
        nemesis_targets="all"),
    "txn": WorkloadSpec(
        "txn", "Jepsen's Kafka workload: sends and polls of topic-partitions in Kafka transactions "
        "(--client librdkafka|java), crashes, a final read of every key; Jepsen's anomaly names",
        TxnWorkload,
        ("kafka-txn",),
        final=txn_final_phase, dbs=("kafka",), nemesis_targets="all",
        dbs_why="it needs Kafka's transactions, idempotent producers and consumer groups, which "
                "our brokers do not have",
        client_fields=("client", "transaction_version")),
}


def workload_checkers(name: str) -> tuple[str, ...]:
    """The checker names of workload ``name`` (its spec's). Raises ValueError naming the
    choices for an unknown one."""
    return workload_spec(name).checkers


def workload_spec(name: str) -> WorkloadSpec:
    """The spec named ``name``; raises ValueError naming the choices for an unknown one."""
    try:
        return WORKLOAD_SPECS[name]
    except KeyError:
        raise ValueError(f"unknown workload {name!r}: choose from {', '.join(WORKLOAD_SPECS)}") from None
