"""The queue workload's client for our brokers (``--db kraft --brokers B``): the broker RPCs
of docs/data-plane.md ("Broker RPCs") over ``kraft.wire.client.KraftClient.request``.

:class:`KraftQueueClient` is a ``QueueClient`` (workloads/queue.py): it learns each
partition's leader from Metadata (3), sends Produce (0), ConsumerFetch (1100) and
ListOffsets (2) to that leader, and CreateTopics (19) to any broker (which forwards it to
the active controller). A ``NOT_LEADER_OR_FOLLOWER``, an unknown partition or a lost
connection marks the metadata stale; the next request refreshes it first, from the first
broker whose answer names a live leader in an epoch not older than the client has seen
(KIP-320: a restarted broker answers from an empty or old image), unless the refusal named
the new leader in a newer epoch (KIP-951), which the next request goes to at once. There are
no retries inside: each call is one op of the history.

Errors (Jepsen's split, history/outcomes.py): :class:`history.outcomes.DefiniteError` when
the request certainly had no effect (``fail``): ``NOT_LEADER_OR_FOLLOWER``,
``NOT_ENOUGH_REPLICAS`` (refused before appending), ``UNKNOWN_TOPIC_OR_PARTITION``,
``INVALID_REQUIRED_ACKS``, no leader known (``LEADER_NOT_AVAILABLE``, nothing sent), a
connection that could not be made. :class:`history.outcomes.IndefiniteError` when it may have
(``info``): ``NOT_ENOUGH_REPLICAS_AFTER_APPEND`` (appended, ISR shrank),
``REQUEST_TIMED_OUT``, a timeout, a lost connection, any other code. Reads (poll,
end_offset) change nothing, so every error code they get is definite; their timeouts stay
indefinite as for every request.
"""
from __future__ import annotations

import asyncio
from typing import Any, Callable, Iterable, Sequence

from kraft.core import errors
from kraft.wire import api
from history import outcomes
from targets.kraft_client import KraftClient
from targets.base import QueueClientOptions

#: Kafka error codes this client handles by name (``kraft.core.errors`` has the broker's own;
#: the controller's are Kafka's numbers)
OFFSET_OUT_OF_RANGE = getattr(errors, "OFFSET_OUT_OF_RANGE", 1)
UNKNOWN_TOPIC_OR_PARTITION = getattr(errors, "UNKNOWN_TOPIC_OR_PARTITION", 3)
LEADER_NOT_AVAILABLE = getattr(errors, "LEADER_NOT_AVAILABLE", 5)
NOT_ENOUGH_REPLICAS = getattr(errors, "NOT_ENOUGH_REPLICAS", 19)
NOT_ENOUGH_REPLICAS_AFTER_APPEND = getattr(errors, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", 20)
INVALID_REQUIRED_ACKS = getattr(errors, "INVALID_REQUIRED_ACKS", 21)
TOPIC_ALREADY_EXISTS = getattr(errors, "TOPIC_ALREADY_EXISTS", 36)
INVALID_PARTITIONS = getattr(errors, "INVALID_PARTITIONS", 37)
INVALID_REPLICATION_FACTOR = getattr(errors, "INVALID_REPLICATION_FACTOR", 38)
INVALID_CONFIG = getattr(errors, "INVALID_CONFIG", 40)
NOT_CONTROLLER = getattr(errors, "NOT_CONTROLLER", 41)
_EXTRA_NAMES = {OFFSET_OUT_OF_RANGE: "OFFSET_OUT_OF_RANGE", LEADER_NOT_AVAILABLE: "LEADER_NOT_AVAILABLE",
                UNKNOWN_TOPIC_OR_PARTITION: "UNKNOWN_TOPIC_OR_PARTITION",
                NOT_ENOUGH_REPLICAS: "NOT_ENOUGH_REPLICAS",
                NOT_ENOUGH_REPLICAS_AFTER_APPEND: "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
                INVALID_REQUIRED_ACKS: "INVALID_REQUIRED_ACKS", TOPIC_ALREADY_EXISTS: "TOPIC_ALREADY_EXISTS",
                INVALID_PARTITIONS: "INVALID_PARTITIONS", INVALID_REPLICATION_FACTOR: "INVALID_REPLICATION_FACTOR",
                INVALID_CONFIG: "INVALID_CONFIG", NOT_CONTROLLER: "NOT_CONTROLLER"}

#: Produce errors after which the record certainly is not in any log
PRODUCE_DEFINITE = frozenset({errors.NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, UNKNOWN_TOPIC_OR_PARTITION,
                              INVALID_REQUIRED_ACKS, errors.INVALID_REQUEST, errors.INCONSISTENT_CLUSTER_ID,
                              errors.UNSUPPORTED_VERSION})
#: CreateTopics errors after which the topic certainly was not created
CREATE_DEFINITE = frozenset({TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, INVALID_CONFIG, NOT_CONTROLLER,
                             errors.INVALID_REQUEST, errors.INCONSISTENT_CLUSTER_ID, errors.UNSUPPORTED_VERSION})
#: errors after which the partition's leader must be looked up again
STALE_METADATA = frozenset({errors.NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE,
                            errors.FENCED_LEADER_EPOCH, errors.UNKNOWN_LEADER_EPOCH})
ACKS = (0, 1, -1)
#: CreateTopics' api key (Kafka's)
CREATE_TOPICS = getattr(api, "CREATE_TOPICS", 19)


def error_name(code: int) -> str:
    """Kafka's name of error ``code`` (``kraft.core.errors.name``, with the codes it lacks)."""
    name = errors.name(code)
    return _EXTRA_NAMES.get(code, name) if name.startswith("UNKNOWN_ERROR_") else name


def parse_endpoint(text: str) -> tuple[str, int]:
    """``"host:port"`` -> ``(host, port)``; raises ``ValueError`` naming a malformed one."""
    host, sep, port = str(text).rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"bad broker endpoint {text!r}: expected host:port")
    return host, int(port)


def check_acks(acks: Any) -> int:
    """``acks`` as Produce's ``Acks``: 0, 1 or -1 (``"all"`` is -1). Raises ``ValueError``."""
    if acks == "all":
        return -1
    if isinstance(acks, bool) or acks not in ACKS:
        raise ValueError(f"acks must be 0, 1, -1 or 'all', got {acks!r}")
    return int(acks)


def raise_for(body: dict, definite: Iterable[int], what: str) -> None:
    """Raise :class:`history.outcomes.DefiniteError` (code in ``definite``) or
    :class:`history.outcomes.IndefiniteError` (any other code) for a body whose ``ErrorCode``
    is not NONE; the exception's ``code`` is the error's name and its message says ``what``."""
    code = body.get("ErrorCode", errors.UNKNOWN_SERVER_ERROR)
    if code == errors.NONE:
        return
    cls = outcomes.DefiniteError if code in definite else outcomes.IndefiniteError
    raise cls(error_name(code), f"{what}: {body.get('ErrorMessage') or error_name(code)}")


class KraftQueueClient:
    """A ``QueueClient`` for our brokers.

    ``bootstrap``: ``"host:port"`` of some brokers (where Metadata and CreateTopics go).
    ``cluster_id``: the cluster's. ``timeout_ms``: bounds each request (ms). ``acks``:
    Produce's (0, 1, -1/"all"). ``client_factory(host, port, cluster_id, timeout_ms)``
    makes the connections (default :class:`targets.kraft_client.KraftClient`). Metadata and
    CreateTopics go to the bootstrap brokers in the order given (the caller's preferred
    first), then to the other brokers the metadata named. Building one does no I/O.
    Raises ``ValueError`` for an empty or malformed
    ``bootstrap`` or bad ``acks``/``timeout_ms``.
    """

    def __init__(self, bootstrap: Sequence[str], cluster_id: str, *, timeout_ms: int = 3000,
                 acks: Any = -1, client_factory: Callable[..., Any] | None = None):
        self.bootstrap = [parse_endpoint(b) for b in bootstrap]
        if not self.bootstrap:
            raise ValueError("the queue client needs at least one broker endpoint (--brokers on --db kraft)")
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms <= 0:
            raise ValueError(f"timeout_ms must be a positive int, got {timeout_ms!r}")
        self.cluster_id, self.timeout_ms, self.acks = cluster_id, timeout_ms, check_acks(acks)
        self.factory = client_factory or (lambda h, p, c, t: KraftClient(h, p, c, timeout_ms=t))
        self._conns: dict[tuple[str, int], Any] = {}
        self._locks: dict[tuple[str, int], asyncio.Lock] = {}
        #: broker id -> (host, port), (topic, partition) -> leader id; from the last Metadata
        self.brokers: dict[int, tuple[str, int]] = {}
        self.leaders: dict[tuple[str, int], int] = {}
        #: (topic, partition) -> the newest leader epoch seen (Metadata, leader hints)
        self.epochs: dict[tuple[str, int], int] = {}
        self.stale = True
        #: the ``host:port`` the last request went to (for the history's ``node``)
        self.last_endpoint: str | None = None

    # -- connections ------------------------------------------------------------------
    async def _request(self, where: tuple[str, int], api_key: int, body: dict) -> dict:
        """One request to ``where`` (a lock keeps one in flight per connection). Raises as
        ``KraftClient.request``; a lost connection also marks the metadata stale."""
        conn = self._conns.get(where)
        if conn is None:
            conn = self._conns[where] = self.factory(where[0], where[1], self.cluster_id, self.timeout_ms)
            self._locks[where] = asyncio.Lock()
        self.last_endpoint = f"{where[0]}:{where[1]}"
        try:
            async with self._locks[where]:
                return await conn.request(api_key, body)
        except outcomes.ClientError:
            self.stale = True
            raise

    def _endpoints(self) -> list[tuple[str, int]]:
        """Where to ask for metadata: the bootstrap brokers in order, then the others known."""
        return list(dict.fromkeys([*self.bootstrap, *self.brokers.values()]))

    # -- metadata ---------------------------------------------------------------------
    async def refresh(self, want: tuple[str, int] | None = None) -> dict:
        """Metadata (3) from the brokers in turn (the bootstrap ones first); updates
        :attr:`brokers` and :attr:`leaders` and returns the body used. With ``want`` (a
        ``(topic, partition)``), an answer that does not name a live leader for it in a
        leader epoch at least the newest known (KIP-320: a broker restarted or cut off from
        the controllers answers from an old image) sends the client on to the next broker;
        when none does, the best answer is used (the newest epoch, then the broker's newest
        image, ``MetadataOffset``). Raises the last broker's error
        (``history.outcomes.ClientError``) when none answers."""
        last: outcomes.ClientError | None = None
        best: tuple | None = None
        for where in self._endpoints():
            try:
                body = await self._request(where, api.METADATA, {})
            except outcomes.ClientError as e:
                last = e
                continue
            if body.get("ErrorCode", 0) != errors.NONE:
                last = outcomes.DefiniteError(error_name(body["ErrorCode"]), "Metadata")
                continue
            rank = self._rank(body, want)
            if want is None or rank[0] == 2:
                best = (rank, body)
                break
            if best is None or rank > best[0]:
                best = (rank, body)
        if best is None:
            self.stale = True
            raise last or outcomes.DefiniteError("connection", "no broker to ask for metadata")
        self._apply_metadata(best[1])
        return best[1]

    def _rank(self, body: dict, want: tuple[str, int] | None) -> tuple:
        """How good a Metadata answer is for ``want``: ``(2 a live leader in an epoch not older
        than known, 1 the partition named, 0 not; its leader epoch; MetadataOffset)``."""
        entry = None
        if want is not None:
            for t in body.get("Topics") or []:
                if t.get("Name") == want[0]:
                    entry = next((p for p in t.get("Partitions") or [] if p.get("Index") == want[1]), None)
        offset = body.get("MetadataOffset") if isinstance(body.get("MetadataOffset"), int) else -1
        if entry is None:
            return (0, -1, offset)
        epoch = entry.get("LeaderEpoch") if isinstance(entry.get("LeaderEpoch"), int) else -1
        ids = {int(b["Id"]) for b in body.get("Brokers") or []}
        live = entry.get("Leader", -1) in ids and epoch >= self.epochs.get(want, -1)
        return (2 if live else 1, epoch, offset)

    def _apply_metadata(self, body: dict) -> None:
        brokers, leaders = {}, {}
        for b in body.get("Brokers") or []:
            brokers[int(b["Id"])] = (str(b["Host"]), int(b["Port"]))
        for t in body.get("Topics") or []:
            for p in t.get("Partitions") or []:
                key = (t["Name"], int(p["Index"]))
                leaders[key] = int(p.get("Leader", -1))
                if isinstance(p.get("LeaderEpoch"), int) and p["LeaderEpoch"] > self.epochs.get(key, -1):
                    self.epochs[key] = p["LeaderEpoch"]
        self.brokers, self.leaders, self.stale = brokers, leaders, False

    async def leader(self, topic: str, partition: int) -> tuple[str, int]:
        """``(host, port)`` of the partition's leader, refreshing stale metadata first.
        Raises :class:`history.outcomes.DefiniteError` ``LEADER_NOT_AVAILABLE`` (or
        ``UNKNOWN_TOPIC_OR_PARTITION``) when no live leader is known: nothing was sent."""
        key = (topic, partition)
        if self.stale or key not in self.leaders or self.leaders[key] not in self.brokers:
            await self.refresh(key)
        lid = self.leaders.get(key)
        if lid is None:
            self.stale = True
            raise outcomes.DefiniteError("UNKNOWN_TOPIC_OR_PARTITION", f"{topic}-{partition} is not in the metadata")
        if lid < 0 or lid not in self.brokers:
            self.stale = True
            raise outcomes.DefiniteError("LEADER_NOT_AVAILABLE", f"{topic}-{partition} has no leader (leader {lid})")
        return self.brokers[lid]

    async def _to_leader(self, topic: str, partition: int, api_key: int, body: dict) -> dict:
        """Send ``body`` to the partition's leader. A reply naming stale metadata marks it so,
        unless it names the new leader in a newer leader epoch (KIP-951's leader hint), which
        the next request then goes to at once."""
        key = (topic, partition)
        resp = await self._request(await self.leader(topic, partition), api_key,
                                   {"Topic": topic, "Partition": partition, **body})
        if resp.get("ErrorCode", 0) in STALE_METADATA:
            hint, epoch = resp.get("LeaderId"), resp.get("LeaderEpoch")
            if (isinstance(hint, int) and hint in self.brokers and isinstance(epoch, int)
                    and epoch > self.epochs.get(key, -1)):
                self.leaders[key], self.epochs[key] = hint, epoch
            else:
                self.stale = True
        return resp

    # -- the QueueClient interface ------------------------------------------------------
    async def create_topic(self, topic: str, partitions: int, replication_factor: int, configs: dict) -> None:
        """CreateTopics (19) via any broker (tried in turn while none can be reached); returns
        once the controller committed the topic. Raises :class:`history.outcomes.DefiniteError`
        (TOPIC_ALREADY_EXISTS, INVALID_REPLICATION_FACTOR, INVALID_CONFIG, NOT_CONTROLLER,
        ...) or :class:`history.outcomes.IndefiniteError` (REQUEST_TIMED_OUT, timeout). The
        partitions' leaders may reach the brokers' metadata a little later."""
        req = {"Topics": [{"Name": topic, "NumPartitions": partitions, "ReplicationFactor": replication_factor,
                           "Configs": dict(configs)}]}
        last: outcomes.ClientError | None = None
        for where in self._endpoints():
            try:
                body = await self._request(where, CREATE_TOPICS, req)
            except outcomes.DefiniteError as e:      # nothing sent: the next broker
                last = e
                continue
            self.stale = True
            results = [t for t in body.get("Topics") or [] if t.get("Name") == topic]
            result = results[0] if results else {"ErrorCode": body.get("ErrorCode", errors.UNKNOWN_SERVER_ERROR)}
            raise_for(result, CREATE_DEFINITE, f"CreateTopics {topic}")
            return
        raise last or outcomes.DefiniteError("connection", "no broker to send CreateTopics to")

    async def send(self, topic: str, partition: int, value: int) -> int:
        """Produce ``value`` to the partition's leader with this client's acks; returns its
        offset (-1 at acks=0, where the broker does not say). Raises as the module says."""
        body = await self._to_leader(topic, partition, api.PRODUCE, {"Acks": self.acks, "Value": value})
        raise_for(body, PRODUCE_DEFINITE, f"Produce to {topic}-{partition}")
        return int(body.get("BaseOffset", -1))

    async def poll(self, topic: str, partition: int, offset: int, max_records: int) -> list[tuple[int, int]]:
        """ConsumerFetch from ``offset`` on the leader: up to ``max_records`` ``(offset,
        value)`` below its high watermark (none at or past it). Raises
        :class:`history.outcomes.DefiniteError` ``OFFSET_OUT_OF_RANGE`` for an offset past the
        log end (or any other error code), indefinite on a timeout or a lost connection."""
        body = await self._to_leader(topic, partition, api.CONSUMER_FETCH,
                                     {"Offset": offset, "MaxRecords": max_records})
        raise_for(body, (body.get("ErrorCode"),), f"ConsumerFetch {topic}-{partition} at {offset}")
        return [(int(o), v) for o, v in body.get("Records") or []]

    async def end_offset(self, topic: str, partition: int) -> int:
        """ListOffsets on the leader: its high watermark. Raises as :meth:`poll`."""
        body = await self._to_leader(topic, partition, api.LIST_OFFSETS, {})
        raise_for(body, (body.get("ErrorCode"),), f"ListOffsets {topic}-{partition}")
        return int(body["HighWatermark"])

    async def close(self) -> None:
        """Close every connection (errors ignored); idempotent."""
        conns, self._conns, self._locks = list(self._conns.values()), {}, {}
        for c in conns:
            try:
                await c.close()
            except Exception:
                pass


def kraft_queue_factory(cluster_id: str, client_factory: Callable[..., Any] | None = None):
    """The factory ``(bootstrap, options) -> KraftQueueClient`` the kraft target hands the
    queue workload (workloads/queue.py's contract): ``cluster_id`` closed over, and the
    options' ``timeout_ms`` and ``acks`` (:class:`targets.base.QueueClientOptions`);
    ``client_factory`` as :class:`KraftQueueClient`'s."""
    def factory(bootstrap: Sequence[str], options: QueueClientOptions) -> KraftQueueClient:
        return KraftQueueClient(bootstrap, cluster_id, timeout_ms=options.timeout_ms, acks=options.acks,
                                client_factory=client_factory)
    return factory
