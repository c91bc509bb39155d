"""The ``metadata`` workload (``--db kafka``): clients create uniquely named topics, and
delete some, through Apache Kafka's brokers; the metadata log is then read from the
controllers' data dirs and judged by the log checkers, black-box.

Which op next is :class:`MetadataGenerator`: ``append`` of the next unique int V, sent as
CreateTopics of ``t-V`` (1 partition, replication factor 1), and now and then
``delete-topic`` of an acknowledged one. How it is sent is :class:`MetadataClient`,
through confluent-kafka's ``AdminClient`` (librdkafka), one per broker a worker uses.
A CreateTopics success is an acknowledged write of V (``{"value": V}``: Kafka returns no
offset); an error Kafka defines as a refusal is ``fail``; a timeout, a lost connection
or an answer that the create may have happened anyway (TOPIC_ALREADY_EXISTS for a name
only we create: a retried forward from the broker to the controller) is ``info``.

After healing, :func:`metadata_final_reads` records each controller's committed
metadata log as final reads, with ``TopicRecord`` s of our topics as data records
``[offset, epoch, "data", V]``: one ``linearizable: true`` read of the leader's log up
to its high watermark, and one ``linearizable: false`` read per caught-up controller.
Each read's ``from`` is the first offset of the log it read: a controller whose log was
cleaned up to a snapshot (``metadata.max.retention.bytes``) holds the records before it
only as state in that snapshot, so its read covers ``[log start, high watermark)``, and what
was committed before is not judged from it.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
from typing import Any

from generator import Context, Generator
from history import outcomes

from .base import ClientOptions, ClientWorkload
from .counters import Sequence
from .recorder import Outcome, record
from .worker import ClientWorker

log = logging.getLogger(__name__)


class _RdkafkaLog:
    """Where librdkafka's log lines go: ``kraft_chaos.rdkafka`` at DEBUG (a broker that is down
    makes every client log a connection error per retry; the history has the ops' errors)."""

    def __init__(self) -> None:
        self.logger = logging.getLogger("kraft_chaos.rdkafka")

    def log(self, _level: int, msg: str, *args) -> None:
        self.logger.debug(msg, *args)


RDKAFKA_LOG = _RdkafkaLog()

#: the name of the topic that carries value V
TOPIC_FORMAT = "t-{}"
_TOPIC_RE = re.compile(r"t-(\d+)")
#: CreateTopics/DeleteTopics errors after which the topic certainly was not created/deleted
#: (Kafka's error names, as librdkafka reports them)
DEFINITE_ERRORS = frozenset({
    "INVALID_REPLICATION_FACTOR", "INVALID_PARTITIONS", "INVALID_TOPIC_EXCEPTION", "POLICY_VIOLATION",
    "INVALID_REQUEST", "UNSUPPORTED_VERSION", "THROTTLING_QUOTA_EXCEEDED", "INVALID_CONFIG",
    "TOPIC_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED", "UNKNOWN_TOPIC_OR_PART",
    "UNKNOWN_TOPIC_ID", "NOT_CONTROLLER", "_INVALID_ARG",
})


def topic_name(value: int) -> str:
    """``t-<value>``."""
    return TOPIC_FORMAT.format(value)


def topic_value(name: Any) -> int | None:
    """V for a topic named ``t-V`` (V a non-negative int), else None."""
    m = _TOPIC_RE.fullmatch(name) if isinstance(name, str) else None
    return int(m.group(1)) if m else None


@dataclasses.dataclass(frozen=True)
class MetadataOptions(ClientOptions):
    """Knobs of the metadata workload: those of :class:`workloads.base.ClientOptions`, and
    ``delete_fraction``: probability an op deletes an acknowledged topic (0..1).
    Raises ``ValueError`` naming the bad field."""

    delete_fraction: float = 0.1
    timeout_ms: int = 5000

    def __post_init__(self) -> None:
        super().__post_init__()
        self.check_fractions("delete_fraction")


class MetadataGenerator(Generator):
    """Which op next: with probability ``delete_fraction`` (when some created topic is not yet
    deleted) ``delete-topic`` of one of them, else ``append`` of the next unique int."""

    def __init__(self, options: MetadataOptions):
        self.options = options
        self.values = Sequence(0)
        self.created: list[int] = []

    def op(self, ctx: Context) -> dict:
        if self.created and ctx.rng.random() < self.options.delete_fraction:
            v = self.created.pop(ctx.rng.randrange(len(self.created)))
            return {"f": "delete-topic", "value": v}
        return {"f": "append", "value": self.values.next()}

    def update(self, ctx: Context, invoke: dict, completion: dict) -> None:
        if completion and completion.get("type") == "ok" and completion["f"] == "append":
            self.created.append(invoke["value"])


def _error(exc: BaseException) -> outcomes.ClientError:
    """A confluent-kafka failure as our client error: definite for :data:`DEFINITE_ERRORS`,
    indefinite otherwise (timeouts, transport errors, TOPIC_ALREADY_EXISTS, anything else)."""
    err = exc.args[0] if exc.args else None
    name = err.name() if hasattr(err, "name") else type(exc).__name__
    text = err.str() if hasattr(err, "str") else str(exc)
    cls = outcomes.DefiniteError if name in DEFINITE_ERRORS else outcomes.IndefiniteError
    return cls(name, text)


class KafkaAdmin:
    """An ``AdminClient`` bootstrapped from one broker (``host:port``); requests bounded by
    ``timeout_ms`` (ms). Raises ``history.outcomes.DefiniteError``/``IndefiniteError``."""

    def __init__(self, bootstrap: str, timeout_ms: int):
        from confluent_kafka.admin import AdminClient      # deferred: librdkafka (confluent-kafka), needed on --db kafka only
        self.timeout_s = timeout_ms / 1000.0
        # librdkafka's own log lines (connection refused while a broker is down, ...) go to
        # Python logging at DEBUG, not to stderr
        self.admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": timeout_ms,
                                  "request.timeout.ms": timeout_ms, "retries": 0,
                                  "reconnect.backoff.max.ms": 1000}, logger=RDKAFKA_LOG)

    async def _one(self, futures: dict) -> None:
        (fut,) = futures.values()
        try:
            await asyncio.wait_for(asyncio.wrap_future(fut), self.timeout_s + 1.0)
        except TimeoutError:
            raise outcomes.IndefiniteError("timeout", f"no answer within {self.timeout_s:g} s") from None
        except Exception as e:  # confluent_kafka.KafkaException
            raise _error(e) from None
        finally:
            self.admin.poll(0)      # hands librdkafka's queued log lines to RDKAFKA_LOG

    async def create(self, name: str) -> None:
        """CreateTopics ``name`` (1 partition, replication factor 1)."""
        from confluent_kafka.admin import NewTopic      # deferred: librdkafka (confluent-kafka), needed on --db kafka only
        await self._one(self.admin.create_topics([NewTopic(name, 1, 1)],
                                                 operation_timeout=self.timeout_s,
                                                 request_timeout=self.timeout_s))

    async def delete(self, name: str) -> None:
        """DeleteTopics ``name``."""
        await self._one(self.admin.delete_topics([name], operation_timeout=self.timeout_s,
                                                 request_timeout=self.timeout_s))

    async def close(self) -> None:
        """Nothing to close: librdkafka's threads end with the object."""
        self.admin = None


class MetadataClient(ClientWorker):
    """How the metadata workload's ops are sent: to a broker (a pinned one, changed after an
    op that did not succeed; a random one per op when roaming)."""

    ops = {"append": "append", "delete-topic": "delete"}

    def __init__(self, wl, index: int, roaming: bool = False):
        super().__init__(wl, index, roaming)
        self.nodes = list(wl.topology.bootstrap)
        self.target = self.rng.choice(self.nodes)
        self.admins: dict[str, KafkaAdmin] = {}

    def _admin(self, broker: str) -> KafkaAdmin:
        a = self.admins.get(broker)
        if a is None:
            a = self.admins[broker] = KafkaAdmin(broker, self.wl.options.timeout_ms)
        return a

    async def append(self, op: dict, process: int) -> Outcome:
        """CreateTopics ``t-V``; ok value ``{"value": V}``."""
        broker, v = self.node_for(), op["value"]
        out = await record(self.wl.history, self.wl.tally, process, "append", v, broker,
                           lambda: self._admin(broker).create(topic_name(v)), lambda _r: {"value": v})
        self.after(out)
        return out

    async def delete(self, op: dict, process: int) -> Outcome:
        """DeleteTopics ``t-V``."""
        broker, v = self.node_for(), op["value"]
        out = await record(self.wl.history, self.wl.tally, process, "delete-topic", v, broker,
                           lambda: self._admin(broker).delete(topic_name(v)), lambda _r: v)
        self.after(out)
        return out

    async def close(self) -> None:
        for a in self.admins.values():
            await a.close()
        self.admins = {}
        await super().close()


class MetadataWorkload(ClientWorkload):
    """Topic creations (and some deletions) through Kafka's brokers (``topology.bootstrap``);
    arguments as :class:`workloads.base.ClientWorkload`. Raises ``ValueError`` when the
    topology names no broker."""

    name = "metadata"
    options_class = MetadataOptions
    client_fs = ("append", "delete-topic")
    worker_class = MetadataClient

    def __init__(self, topology, cluster_id, history, seed, options=None, pids=None, client_factory=None):
        if not topology.bootstrap:
            raise ValueError("the metadata workload needs brokers (Topology.bootstrap); "
                             "run it with --db kafka")
        super().__init__(topology, cluster_id, history, seed, options, pids, client_factory)

    def generator(self) -> MetadataGenerator:
        return MetadataGenerator(self.options)


def as_final_records(records: list, hw: int) -> list[list]:
    """``[offset, epoch, type, payload]`` of the records below ``hw``; a ``TopicRecord`` of
    topic ``t-V`` becomes ``[offset, epoch, "data", V]``."""
    out = []
    for offset, epoch, rtype, payload in records:
        if offset >= hw:
            break
        v = topic_value(payload.get("name")) if rtype == "TopicRecord" and isinstance(payload, dict) else None
        out.append([offset, epoch, "data", v] if v is not None else [offset, epoch, rtype, payload])
    return out


def caught_up_nodes(body: dict, topology) -> list[str]:
    """The quorum nodes whose LogEndOffset in the leader's DescribeQuorum ``body`` is at least
    the leader's own."""
    ends = {v.get("ReplicaId"): v.get("LogEndOffset") for v in body.get("CurrentVoters") or []}
    top = ends.get(body.get("LeaderId"))
    if not isinstance(top, int):
        return []
    return [n for n in topology.nodes
            if isinstance(ends.get(topology.ids[n]), int) and ends[topology.ids[n]] >= top]


def voters_caught_up(body: dict) -> bool:
    """True when every voter in a DescribeQuorum ``body`` has a LogEndOffset at least the
    leader's own (``LeaderId``'s entry); False with no voters, no leader entry, or a voter
    whose LogEndOffset is missing or -1 (not yet fetched from this leader)."""
    ends = [v.get("LogEndOffset") for v in body.get("CurrentVoters") or [] if isinstance(v, dict)]
    top = {v.get("ReplicaId"): v.get("LogEndOffset")
           for v in body.get("CurrentVoters") or [] if isinstance(v, dict)}.get(body.get("LeaderId"))
    return (bool(ends) and isinstance(top, int) and top >= 0
            and all(isinstance(e, int) and e >= top for e in ends))


async def metadata_final_reads(wl: MetadataWorkload, leader: str | None, body: dict | None,
                               logs: dict[str, list]) -> None:
    """Record the final reads (see the module docstring) from the leader's DescribeQuorum
    ``body`` and each quorum node's metadata log ``logs[node]`` (``[(offset, epoch, type,
    payload)]``, read from its data dir). Without a leader, or a node's log, the reads are
    recorded as ``fail`` with the reason."""
    value = {"from": 0, "linearizable": True, "final": True}
    hw = body.get("HighWatermark") if body else None

    def start(records: list) -> int:
        """The log's first offset (its start, past 0 once cleaned up to a snapshot); an empty log
        covers nothing below the high watermark (all of it is in a snapshot), so it starts there."""
        if records and isinstance(records[0][0], int):
            return records[0][0]
        return hw if isinstance(hw, int) else 0
    pid = wl.pids.next()
    op = wl.history.invoke(pid, "read", value, node=leader)
    if leader is None or not isinstance(hw, int) or logs.get(leader) is None:
        wl.history.complete(op, "fail", value, error="no leader, or its log could not be read")
        return
    wl.history.complete(op, "ok", {**value, "from": start(logs[leader]), "high_watermark": hw,
                                   "records": as_final_records(logs[leader], hw)})
    for node in caught_up_nodes(body, wl.topology):
        if logs.get(node) is None:
            continue
        v = {"from": 0, "linearizable": False, "final": True}
        op = wl.history.invoke(wl.pids.next(), "read", v, node=node)
        wl.history.complete(op, "ok", {**v, "from": start(logs[node]), "high_watermark": hw,
                                       "records": as_final_records(logs[node], hw)})
