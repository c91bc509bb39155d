"""The ``queue`` workload: Jepsen's Kafka test's queue workload on one replicated topic.

Producers send unique ints to the topic's K partitions and record where each
acknowledged send landed; consumers poll their assigned partitions from
committed positions and record what they read, with offsets. After healing,
a drain (workloads/queue_drain.py) reads every partition from offset 0 to its
high watermark. The ``queue`` checker (checkers/queue_checker.py) judges the history
alone, by Jepsen's anomaly names. Source: Jepsen's Kafka test (jepsen.tests.kafka), its
``queue`` workload. It stays beside the ``txn`` workload (which can run without transactions)
because our own brokers have no transactions, idempotent producers or consumer groups, which
every ``txn`` client needs (DEVELOPERS.md, "The queue workload's checker", has what a merge takes).

**The client contract** (docs/data-plane.md, "The queue workload's client
interface"). A target supplies a factory::

    factory(bootstrap: tuple[str, ...], options: QueueOptions) -> QueueClient

- ``bootstrap``: the brokers' client endpoints ``"host:port"`` (every one of
  ``Topology.bootstrap``), the caller's preferred broker first. The client
  finds each partition's leader itself (Metadata) and follows leader changes.
- ``options``: this module's :class:`QueueOptions`; a client reads
  ``timeout_ms`` (ms, per request), ``acks`` (0, 1 or -1) and ``idempotence``.
  Anything target-specific (the cluster id) the factory closes over.
- Building a client does no I/O (it runs on the event loop); it connects on
  first use. Each client has one request in flight at a time.

The target provides it as ``DB.queue_client_factory()`` (targets/), which
:meth:`workloads.topology.Topology.from_db` keeps as
``Topology.queue_client_factory``; tests pass ``queue_client_factory=``.

**History ops** (``f``, invoke value -> ok value):

- ``send``: ``{"partition": P, "value": V}`` -> ``{"partition": P, "value": V, "offset": O}``
  (O is -1 with ``acks=0``);
- ``poll``: ``{"partition": P, "from": O}`` -> the same plus ``"records": [[offset, value], ...]``;
- the drain's ``poll`` s add ``"final": true`` and ``"end"`` (the high watermark drained to).

A :class:`history.outcomes.DefiniteError` is ``fail``, an
:class:`history.outcomes.IndefiniteError` (or anything unexpected) ``info``
(workloads/recorder.py). A thread whose op ended ``info`` takes a new process
(generator/interpreter.py); the worker then builds a new client and the new
process starts each partition from the committed position.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import re
from typing import Callable, Protocol

from generator import Context, Generator
from history import outcomes

from .base import ClientOptions, ClientWorkload, WorkloadSetupError
from .counters import Sequence
from .recorder import Outcome, record
from .worker import ClientWorker

log = logging.getLogger(__name__)

#: seconds :meth:`QueueWorkload.setup` tries to create the topic and see every partition led
SETUP_TIMEOUT_S = 60.0
#: seconds between setup attempts
SETUP_RETRY_S = 0.5
#: seconds a client's close may take before it is abandoned
CLOSE_TIMEOUT_S = 5.0
#: the error a poll past a partition's log end offset gets (a definite fail)
OFFSET_OUT_OF_RANGE = "OFFSET_OUT_OF_RANGE"
TOPIC_ALREADY_EXISTS = "TOPIC_ALREADY_EXISTS"
_TOPIC_RE = re.compile(r"[A-Za-z0-9._-]{1,249}")


class QueueClient(Protocol):
    """A producer and consumer of one cluster (see the module docstring for the factory).

    ``send``, ``poll`` and ``end_offset`` raise ``history.outcomes.DefiniteError``
    (certainly not done) or ``history.outcomes.IndefiniteError`` (outcome unknown);
    ``create_topic`` too, with code ``TOPIC_ALREADY_EXISTS`` for an existing topic.
    """

    async def create_topic(self, topic: str, partitions: int, replication_factor: int,
                           configs: dict) -> None:
        """Create ``topic``; ``configs`` is ``{"min.insync.replicas": int,
        "unclean.leader.election.enable": bool}`` (Kafka's names)."""

    async def send(self, topic: str, partition: int, value: int) -> int:
        """Produce ``value`` to ``partition`` with the options' ``acks``; the offset (-1 for acks=0)."""

    async def poll(self, topic: str, partition: int, offset: int,
                   max_records: int) -> list[tuple[int, int]]:
        """Up to ``max_records`` records ``(offset, value)`` from ``offset``, in offset order,
        below the high watermark ([] at or past it); ``OFFSET_OUT_OF_RANGE`` (definite)
        past the log end offset."""

    async def end_offset(self, topic: str, partition: int) -> int:
        """The partition's high watermark (ListOffsets, from its leader)."""

    async def close(self) -> None:
        """Release connections; never raises."""


#: see the module docstring: ``factory(bootstrap endpoints, options) -> QueueClient``
QueueClientFactory = Callable[[tuple[str, ...], "QueueOptions"], QueueClient]


@dataclasses.dataclass(frozen=True)
class QueueOptions(ClientOptions):
    """Knobs of the queue workload: those of :class:`workloads.base.ClientOptions`
    (``read_any_node`` is unused; ``roaming_clients`` defaults to 0: clients route by
    partition leader), and

    ``partitions`` (K, >= 1), ``replication_factor`` (>= 1), ``acks`` (0, 1 or -1;
    ``"all"`` is taken as -1), ``min_insync_replicas`` (1..replication_factor),
    ``unclean_leader_election`` (bool): the topic's settings. ``topic``: its name
    (Kafka's legal characters ``[A-Za-z0-9._-]``, at most 249). ``poll_max_records`` /
    ``drain_max_records``: records per poll of the clients / of the final drain (>= 1).
    ``poll_fraction``: probability an op is a poll (0..1; the rest are sends).
    ``idempotence``: the producer's idempotence (librdkafka; off so retries show).
    Raises ``ValueError`` naming the bad field.
    """

    partitions: int = 3
    replication_factor: int = 3
    acks: int = -1
    min_insync_replicas: int = 2
    unclean_leader_election: bool = False
    topic: str = "queue"
    poll_max_records: int = 100
    drain_max_records: int = 1000
    poll_fraction: float = 0.5
    idempotence: bool = False
    roaming_clients: float = 0.0
    timeout_ms: int = 5000

    def __post_init__(self) -> None:
        if self.acks == "all":
            object.__setattr__(self, "acks", -1)
        super().__post_init__()
        self.check_counts("partitions", "replication_factor", "min_insync_replicas",
                          "poll_max_records", "drain_max_records")
        if self.acks not in (0, 1, -1) or isinstance(self.acks, bool):
            raise ValueError(f"acks must be 0, 1 or -1 (all), got {self.acks!r}")
        if self.min_insync_replicas > self.replication_factor:
            raise ValueError(f"min_insync_replicas must be <= replication_factor "
                             f"({self.replication_factor}), got {self.min_insync_replicas!r}")
        for name in ("unclean_leader_election", "idempotence"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")
        if not isinstance(self.topic, str) or not _TOPIC_RE.fullmatch(self.topic) or self.topic in (".", ".."):
            raise ValueError(f"topic must be 1-249 of [A-Za-z0-9._-] (not . or ..), got {self.topic!r}")
        self.check_fractions("poll_fraction")

    def topic_configs(self) -> dict:
        """The topic's configs, by Kafka's names (docs/data-plane.md, TopicRecord)."""
        return {"min.insync.replicas": self.min_insync_replicas,
                "unclean.leader.election.enable": self.unclean_leader_election}


def assigned_partitions(thread: int, partitions: int, concurrency: int) -> list[int]:
    """The partitions client thread ``thread`` polls: with ``n = min(concurrency,
    partitions)``, those ``p`` with ``p % n == thread % n`` (every partition has a
    consumer; with more threads than partitions, several share one)."""
    n = max(1, min(concurrency, partitions))
    return [p for p in range(partitions) if p % n == thread % n]


class QueueGenerator(Generator):
    """Which op next: with probability ``poll_fraction`` a ``poll`` of one of the thread's
    assigned partitions (:func:`assigned_partitions`; the worker adds ``from``), else a
    ``send`` of the next unique int (from 0, unique across partitions) to a random partition."""

    def __init__(self, options: QueueOptions):
        self.options = options
        self.values = Sequence(0)

    def op(self, ctx: Context) -> dict:
        o = self.options
        if ctx.rng.random() < o.poll_fraction and isinstance(ctx.thread, int):
            mine = assigned_partitions(ctx.thread, o.partitions, o.concurrency)
            return {"f": "poll", "value": {"partition": ctx.rng.choice(mine)}}
        return {"f": "send", "value": {"partition": ctx.rng.randrange(o.partitions),
                                       "value": self.values.next()}}


def checked_records(recs) -> list[list[int]]:
    """A poll's answer as ``[[offset, value], ...]``; ``ValueError`` unless it is a list of
    ``(int offset, value)`` pairs (recorded as ``info`` by workloads/recorder.py)."""
    out = []
    for r in recs:
        if not isinstance(r, (list, tuple)) or len(r) != 2 or type(r[0]) is not int:
            raise ValueError(f"poll answered a malformed record {r!r}")
        out.append([r[0], r[1]])
    return out


class QueueWorker(ClientWorker):
    """How the queue workload's ops are sent: one :class:`QueueClient` per process.

    Worker ``index`` bootstraps from the brokers rotated by ``index`` (its own first,
    recorded as the ops' ``node``). It keeps each partition's position for its current
    process: a new process starts from the workload's committed position
    (:meth:`QueueWorkload.committed_position`); an ok poll moves the position past its
    last record and commits it. A poll failing ``OFFSET_OUT_OF_RANGE`` (the log was
    truncated below the position) seeks to the high watermark: the next poll's ``from``
    shows it.
    """

    ops = {"send": "send", "poll": "poll"}

    def __init__(self, wl: "QueueWorkload", index: int, roaming: bool = False):
        self.wl, self.index, self.roaming = wl, index, roaming
        self.rng = random.Random(f"{wl.seed}:{wl.name}:worker:{index}")
        self.bootstrap, self.node = wl.bootstrap_for(index)
        self.client: QueueClient | None = None
        self.process: int | None = None
        self.positions: dict[int, int] = {}

    async def _client(self, process: int) -> QueueClient:
        if process != self.process:
            if self.client is not None:     # a crashed process: a fresh client, fresh positions
                await self.wl.close_client(self.client)
                self.client = None
            self.process, self.positions = process, {}
        if self.client is None:
            self.client = self.wl.make_client(self.bootstrap)
        return self.client

    async def send(self, op: dict, process: int) -> Outcome:
        """Send ``op["value"]["value"]`` to its partition; the ok value adds ``offset``."""
        client = await self._client(process)
        p, v = op["value"]["partition"], op["value"]["value"]
        value = {"partition": p, "value": v}
        return await record(self.wl.history, self.wl.tally, process, "send", value, self.node,
                            lambda: client.send(self.wl.options.topic, p, v),
                            lambda o: {**value, "offset": o})

    async def poll(self, op: dict, process: int) -> Outcome:
        """Poll ``op["value"]["partition"]`` from this process's position; the ok value adds
        ``records``."""
        client = await self._client(process)
        p, wl = op["value"]["partition"], self.wl
        start = self.positions.get(p)
        if start is None:
            start = wl.committed_position(p)
        value = {"partition": p, "from": start}

        async def request():
            return checked_records(await client.poll(wl.options.topic, p, start, wl.options.poll_max_records))

        out = await record(wl.history, wl.tally, process, "poll", value, self.node, request,
                           lambda recs: {**value, "records": recs})
        if out.type == "ok":
            pos = out.result[-1][0] + 1 if out.result else start
            self.positions[p] = pos
            wl.commit(p, pos)
        elif out.type == "fail" and getattr(out.error, "code", None) == OFFSET_OUT_OF_RANGE:
            await self._seek_to_end(client, p)
        return out

    async def _seek_to_end(self, client: QueueClient, p: int) -> None:
        """After OFFSET_OUT_OF_RANGE: position (and at most the committed one) = the high
        watermark; left as it was when that cannot be read."""
        try:
            hw = await client.end_offset(self.wl.options.topic, p)
        except Exception as e:      # history.outcomes.ClientError or a client bug: try again next poll
            log.debug("seek of partition %d after %s failed: %r", p, OFFSET_OUT_OF_RANGE, e)
            return
        if type(hw) is int and hw >= 0:
            self.positions[p] = hw
            self.wl.lower_committed(p, hw)

    async def close(self) -> None:
        if self.client is not None:
            await self.wl.close_client(self.client)
            self.client = None


class QueueWorkload(ClientWorkload):
    """Sends and polls on one topic (see the module docstring).

    Arguments as :class:`workloads.base.ClientWorkload`, and
    ``queue_client_factory`` (default ``topology.queue_client_factory``). Raises
    ``ValueError`` when there is no factory or the topology names no broker
    (``Topology.bootstrap``). :meth:`setup` creates the topic before the clients start.
    """

    name = "queue"
    options_class = QueueOptions
    client_fs = ("send", "poll")
    worker_class = QueueWorker

    def __init__(self, topology, cluster_id, history, seed, options=None, pids=None,
                 client_factory=None, queue_client_factory: QueueClientFactory | None = None):
        factory = queue_client_factory or getattr(topology, "queue_client_factory", None)
        if factory is None:
            raise ValueError("the queue workload needs a target with a queue client "
                             "(DB.queue_client_factory()); run it with --db kraft or --db kafka")
        if not topology.bootstrap:
            raise ValueError("the queue workload needs brokers (Topology.bootstrap)")
        super().__init__(topology, cluster_id, history, seed, options, pids, client_factory)
        self.queue_client_factory = factory
        self._committed = [0] * self.options.partitions

    def generator(self) -> QueueGenerator:
        return QueueGenerator(self.options)

    def bootstrap_for(self, index: int) -> tuple[tuple[str, ...], str]:
        """``(bootstrap, first broker)``: the brokers' endpoints rotated by ``index``."""
        b = rotated(self.topology.bootstrap, index)
        return b, b[0]

    def make_client(self, bootstrap: tuple[str, ...]) -> QueueClient:
        """A new client of the target's factory."""
        return self.queue_client_factory(bootstrap, self.options)

    @staticmethod
    async def close_client(client: QueueClient) -> None:
        """Close ``client`` (:func:`close_client`)."""
        await close_client(client)

    def committed_position(self, partition: int) -> int:
        """Where a new process starts polling ``partition``."""
        return self._committed[partition]

    def commit(self, partition: int, position: int) -> None:
        """Advance ``partition``'s committed position to ``position`` (never backwards)."""
        if position > self._committed[partition]:
            self._committed[partition] = position

    def lower_committed(self, partition: int, position: int) -> None:
        """Bring ``partition``'s committed position down to ``position`` if past it (a seek
        after OFFSET_OUT_OF_RANGE)."""
        self._committed[partition] = min(self._committed[partition], position)

    async def setup(self, timeout_s: float = SETUP_TIMEOUT_S, retry_s: float = SETUP_RETRY_S) -> None:
        """Create the topic and wait for its partitions' leaders (:func:`create_topic`)."""
        o = self.options
        client = self.make_client(self.bootstrap_for(0)[0])
        try:
            await create_topic(client, o.topic, o.partitions, o.replication_factor, o.topic_configs(),
                               timeout_s, retry_s)
        finally:
            await self.close_client(client)


def rotated(endpoints, index: int) -> tuple[str, ...]:
    """``endpoints`` (non-empty) rotated left by ``index``: worker ``index``'s own first."""
    b = tuple(endpoints)
    k = index % len(b)
    return b[k:] + b[:k]


async def close_client(client: QueueClient) -> None:
    """Close ``client``, abandoning it after :data:`CLOSE_TIMEOUT_S`; errors are ignored."""
    try:
        await asyncio.wait_for(client.close(), CLOSE_TIMEOUT_S)
    except asyncio.CancelledError:
        raise
    except BaseException as e:
        log.debug("closing a queue client: %r", e)


async def create_topic(client: QueueClient, topic: str, partitions: int, replication_factor: int,
                       configs: dict, timeout_s: float = SETUP_TIMEOUT_S, retry_s: float = SETUP_RETRY_S) -> None:
    """Create ``topic`` through ``client``, then wait until every partition answers its high
    watermark (has a leader), retrying for ``timeout_s`` (s) in all. ``TOPIC_ALREADY_EXISTS``
    after an attempt whose outcome was unknown counts as created. Raises
    :class:`workloads.base.WorkloadSetupError` after ``timeout_s``, or at once when the
    topic is refused (any other definite error) or existed before."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    maybe, last = False, None
    while True:
        try:
            await client.create_topic(topic, partitions, replication_factor, configs)
            break
        except outcomes.DefiniteError as e:
            if e.code == TOPIC_ALREADY_EXISTS and maybe:
                break
            raise WorkloadSetupError(f"creating topic {topic!r}: {e}") from None
        except Exception as e:
            maybe, last = True, e
        if loop.time() + retry_s >= deadline:
            raise WorkloadSetupError(f"topic {topic!r} not created within {timeout_s:g} s: {last}")
        await asyncio.sleep(retry_s)
    log.info("created topic %s: %d partitions, replication factor %d, %s", topic, partitions,
             replication_factor, configs)
    for p in range(partitions):
        while True:
            try:
                await client.end_offset(topic, p)
                break
            except Exception as e:
                last = e
            if loop.time() + retry_s >= deadline:
                raise WorkloadSetupError(f"partition {p} of {topic!r} has no leader "
                                         f"within {timeout_s:g} s: {last}")
            await asyncio.sleep(retry_s)
