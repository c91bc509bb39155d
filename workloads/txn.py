"""The ``txn`` workload: Jepsen's Kafka workload (``jepsen.tests.kafka``) with transactions.

**Keys** are topic-partitions of ``topics`` topics (``t0``, ``t1``, ...) of ``partitions``
partitions each, named ``"t0-1"`` in the history, created at set-up with
``replication_factor`` (3), ``min.insync.replicas`` (2) and unclean leader election off.

**Ops** (history shapes: DEVELOPERS.md, "Client ops (Jepsen's Kafka workload)"): each data op
is a list of 1..``max_mops`` micro-ops (one without transactions), ``["send", key, value]`` (a unique int) or
``["poll"]``; its ``f`` is ``send`` when all are sends, ``poll`` when all are polls, else
``txn``. With ``transactions`` (the default) every data op runs in one Kafka transaction
(workloads/txn_worker.py); about ``abort_fraction`` (1/32) of them abort on purpose. About
``subscription_fraction`` (1/64) of the ops are an ``assign`` or a ``subscribe`` of a random
non-empty set of keys (``subscribe`` only with ``subscribe``; it makes Jepsen's checker allow
``poll-skip`` and ``nonmonotonic-poll``). Each client thread ``crash`` es (closes its producer
and consumer; a fresh process opens new ones) at exponential intervals of mean
``crash_interval_s``.

**The client** comes from the target (``Topology.txn_clients``: ``() -> TxnClientFactory``,
targets/txn_client.py, the ``--client`` of the run); topics are created through the queue
workload's client (``Topology.queue_client_factory``). The final phase is
workloads/txn_final.py; the checker Jepsen's (checkers/kafka_txn/).
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import Any

from generator import Context, Generator
from targets.txn_client import check_compression, check_value_bytes

from .base import ClientOptions, ClientWorkload
from .counters import Sequence
from .queue import QueueOptions, close_client, create_topic, rotated
from .txn_worker import TxnWorker, key_name

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class TxnOptions(ClientOptions):
    """Knobs of the ``txn`` workload (module docstring), beside
    :class:`workloads.base.ClientOptions`' (``read_any_node`` and ``roaming_clients`` unused).

    ``topics`` (>= 1) x ``partitions`` (>= 1) keys; ``replication_factor``,
    ``min_insync_replicas`` (1..replication_factor), ``unclean_leader_election``: the topics'
    settings. ``transactions``: run every data op in a Kafka transaction. ``max_mops``: micro-ops
    per op (>= 1). ``send_fraction``: probability a micro-op is a send. ``abort_fraction``,
    ``subscription_fraction``: fractions of transactions aborted on purpose / of ops that are
    ``assign``/``subscribe``. ``subscribe``: allow ``subscribe`` (else only ``assign``).
    ``crash_interval_s`` (> 0, s): mean time between a thread's crashes. ``txn_delay_ms``
    (>= 0, ms): sleep between micro-ops (``--txn-delay``). ``timeout_ms``: each client call's
    bound (ms). ``transaction_timeout_ms``: ``transaction.timeout.ms``. ``poll_ms``: how long a
    poll waits. ``max_poll_records``: records per poll (>= 1). ``final_timeout_s``: the final
    phase's bound (s). ``compression``: the producers' ``compression.type``
    (``targets.txn_client.COMPRESSION_TYPES``: none, gzip, snappy, lz4, zstd). ``value_bytes``
    (bytes, 0..``targets.txn_values.MAX_VALUE_BYTES``): each sent value padded to this size
    with text that is a function of the value (``targets/txn_values.py``; the history keeps
    the int), so that compressed batches carry bytes to decompress; 0: the digits alone.
    Raises ``ValueError`` naming the bad field.
    """

    topics: int = 3
    partitions: int = 2
    replication_factor: int = 3
    min_insync_replicas: int = 2
    unclean_leader_election: bool = False
    transactions: bool = True
    max_mops: int = 4
    send_fraction: float = 0.5
    abort_fraction: float = 1 / 32
    subscription_fraction: float = 1 / 64
    subscribe: bool = True
    crash_interval_s: float = 30.0
    txn_delay_ms: int = 0
    roaming_clients: float = 0.0
    timeout_ms: int = 10_000
    transaction_timeout_ms: int = 10_000
    poll_ms: int = 100
    max_poll_records: int = 100
    final_timeout_s: float = 60.0
    compression: str = "none"
    value_bytes: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        self.check_counts("topics", "partitions", "replication_factor", "min_insync_replicas", "max_mops",
                          "transaction_timeout_ms", "poll_ms", "max_poll_records")
        if self.min_insync_replicas > self.replication_factor:
            raise ValueError(f"min_insync_replicas must be <= replication_factor "
                             f"({self.replication_factor}), got {self.min_insync_replicas!r}")
        for name in ("unclean_leader_election", "transactions", "subscribe"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")
        self.check_fractions("send_fraction", "abort_fraction", "subscription_fraction")
        d = self.txn_delay_ms
        if isinstance(d, bool) or not isinstance(d, int) or d < 0:
            raise ValueError(f"txn_delay_ms must be an int >= 0 (ms), got {d!r}")
        for name in ("crash_interval_s", "final_timeout_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0 s, got {getattr(self, name)!r}")
        check_compression(self.compression)
        check_value_bytes(self.value_bytes)

    def topic_names(self) -> list[str]:
        """``["t0", "t1", ...]``."""
        return [f"t{i}" for i in range(self.topics)]

    def keys(self) -> list[str]:
        """Every key, ``"t0-0"``, ``"t0-1"``, ... in topic then partition order."""
        return [key_name((t, p)) for t in self.topic_names() for p in range(self.partitions)]

    def topic_configs(self) -> dict:
        """The topics' configs, by Kafka's names."""
        return {"min.insync.replicas": self.min_insync_replicas,
                "unclean.leader.election.enable": self.unclean_leader_election}


def op_f(mops: list) -> str:
    """A data op's ``f`` from its micro-ops: ``send``, ``poll`` or ``txn`` (mixed)."""
    kinds = {m[0] for m in mops}
    return kinds.pop() if len(kinds) == 1 else "txn"


class TxnGenerator(Generator):
    """Which op next (module docstring): a ``crash`` when the thread's crash is due, else an
    ``assign``/``subscribe`` with probability ``subscription_fraction``, else a data op of
    1..``max_mops`` micro-ops (one without transactions, as Jepsen's: a read of one's own
    uncommitted send is only an anomaly inside a transaction), sends of fresh unique values
    to random keys. A transactional
    data op carries ``"abort": true`` (outside its value) when it is to abort on purpose."""

    def __init__(self, options: TxnOptions):
        self.options = options
        self.keys = options.keys()
        self.values = Sequence(0)
        self._crash_at: dict[Any, float] = {}

    def _next_crash(self, ctx: Context) -> float:
        return ctx.time + ctx.rng.expovariate(1.0 / self.options.crash_interval_s)

    def op(self, ctx: Context) -> dict:
        o = self.options
        due = self._crash_at.get(ctx.thread)
        if due is None:
            due = self._crash_at[ctx.thread] = self._next_crash(ctx)
        if ctx.time >= due:
            self._crash_at[ctx.thread] = self._next_crash(ctx)
            return {"f": "crash", "value": None}
        rng = ctx.rng
        if rng.random() < o.subscription_fraction:
            f = "subscribe" if o.subscribe and rng.random() < 0.5 else "assign"
            return {"f": f, "value": sorted(rng.sample(self.keys, rng.randint(1, len(self.keys))))}
        mops = []
        for _ in range(rng.randint(1, o.max_mops) if o.transactions else 1):
            if rng.random() < o.send_fraction:
                mops.append(["send", rng.choice(self.keys), self.values.next()])
            else:
                mops.append(["poll"])
        op = {"f": op_f(mops), "value": mops}
        if o.transactions and rng.random() < o.abort_fraction:
            op["abort"] = True
        return op


class TxnWorkload(ClientWorkload):
    """Jepsen's Kafka workload (module docstring). Arguments as
    :class:`workloads.base.ClientWorkload`, and ``txn_clients`` (``() -> TxnClientFactory``;
    default ``topology.txn_clients``) and ``queue_client_factory`` (the topics' creator;
    default ``topology.queue_client_factory``). Raises ``ValueError`` when the target has no
    transactional client or no broker."""

    name = "txn"
    options_class = TxnOptions
    client_fs = ("send", "poll", "txn")
    worker_class = TxnWorker

    def __init__(self, topology, cluster_id, history, seed, options=None, pids=None, client_factory=None,
                 txn_clients=None, queue_client_factory=None):
        clients = txn_clients or getattr(topology, "txn_clients", None)
        if clients is None:
            raise ValueError("the txn workload needs a target with transactional clients "
                             "(DB.txn_client_factory()): run it with --db kafka")
        if not topology.bootstrap:
            raise ValueError("the txn workload needs brokers (Topology.bootstrap)")
        super().__init__(topology, cluster_id, history, seed, options, pids, client_factory)
        self._clients = clients
        self._factory = None
        self.queue_client_factory = queue_client_factory or getattr(topology, "queue_client_factory", None)
        #: the highest acknowledged offset per key (ok sends): what the final phase must read
        self.acked: dict[str, int] = {}
        #: the transaction versions the sessions reported, and how many sessions opened
        self.sessions_opened = 0
        self.transaction_versions: set = set()

    @property
    def factory(self):
        """The run's ``TxnClientFactory`` (made on first use)."""
        if self._factory is None:
            self._factory = self._clients()
        return self._factory

    def generator(self) -> TxnGenerator:
        return TxnGenerator(self.options)

    def bootstrap_for(self, index: int) -> tuple[str, ...]:
        """The brokers' endpoints rotated by ``index`` (its own first)."""
        return rotated(self.topology.bootstrap, index)

    def group_id(self) -> str:
        """The consumers' group (one for the run, as Jepsen's)."""
        return f"kc-{self.cluster_id[:8]}-{self.seed}"

    def acknowledged(self, key: str, offset: int | None) -> None:
        """Note an acknowledged send at ``offset`` of ``key``."""
        if offset is not None and offset >= 0 and offset > self.acked.get(key, -1):
            self.acked[key] = offset

    def describe(self) -> dict:
        """What ``test.json`` records of the client: the factory's ``describe()``, with the
        transaction versions its sessions spoke and how many opened."""
        d = dict(self.factory.describe()) if self._factory is not None else {}
        d["sessions"] = self.sessions_opened
        if self.transaction_versions:
            d["transaction_versions_seen"] = sorted(v for v in self.transaction_versions if v is not None)
        return d

    async def setup(self) -> None:
        """Create every topic (workloads/queue.py :func:`create_topic`) and wait for each
        partition's leader. Raises :class:`workloads.base.WorkloadSetupError`."""
        o = self.options
        if self.queue_client_factory is None:
            raise ValueError("the txn workload needs the target's admin client (Topology.queue_client_factory)")
        client = self.queue_client_factory(self.bootstrap_for(0), QueueOptions(timeout_ms=o.timeout_ms))
        try:
            for topic in o.topic_names():
                await create_topic(client, topic, o.partitions, o.replication_factor, o.topic_configs())
        finally:
            await close_client(client)
        self.factory      # noqa: B018 - made now: a JVM start is not an op's time

    async def close(self) -> None:
        """Release what the sessions share (the Java client's JVM)."""
        if self._factory is not None:
            try:
                await asyncio.wait_for(self._factory.aclose(), 15.0)
            except Exception as e:      # noqa: BLE001 - never raises
                log.warning("closing the %s client: %r", self._factory.name, e)
