"""An in-memory transactional Kafka and its sessions (targets/txn_client.py's ``TxnSession``),
with scripted errors; helpers that run the ``txn`` workload on it and judge the history with
Jepsen's checker (checkers/kafka_txn/).

:class:`FakeKafka` keeps one log per key: ``[offset, value, state]`` records, ``state`` one of
``open`` (in a transaction not ended), ``committed`` or ``aborted``; a non-transactional send
is committed at once. A read_committed poll returns committed records from the consumer's
position up to the first ``open`` one (the last stable offset), skipping aborted ones.
Group offsets are kept per group. ``script`` makes calls raise: ``{call: [exception, ...]}``,
one exception per call of that name, in order (None: that call succeeds). ``lose_aborts``:
aborted records are exposed as committed (an aborted read the checker must see).
"""
from __future__ import annotations

import asyncio

from checkers.fold import ops_of
from checkers.registry import check_all_folds
from history import HistoryWriter, read_history
from targets.kraft_client import kraft_client
from targets.txn_client import SessionConfig, TxnDefiniteError, TxnIndefiniteError, offsets_after
from workloads.topology import Topology
from workloads.txn import TxnOptions, TxnWorkload
from workloads.txn_final import final_polls

BROKERS = ("b1:9092", "b2:9092", "b3:9092")


class FakeKafka:
    """The cluster (module docstring)."""

    def __init__(self, script: dict | None = None, lose_aborts: bool = False):
        self.logs: dict[tuple, list[list]] = {}
        self.groups: dict[str, dict] = {}
        self.script = {k: list(v) for k, v in (script or {}).items()}
        self.lose_aborts = lose_aborts
        self.sessions: list["FakeSession"] = []
        self.topics: dict[str, tuple] = {}
        self.calls: list[str] = []

    def maybe_raise(self, call: str) -> None:
        self.calls.append(call)
        queue = self.script.get(call)
        if queue:
            err = queue.pop(0)
            if err is not None:
                raise err

    def log(self, key: tuple) -> list:
        return self.logs.setdefault(key, [])


class FakeSession:
    """One session on a :class:`FakeKafka` (``targets.txn_client.TxnSession``)."""

    def __init__(self, kafka: FakeKafka, config: SessionConfig):
        self.kafka, self.config = kafka, config
        self.keys: list[tuple] = []
        self.pos: dict[tuple, int] = {}
        self.marked: dict[tuple, int] = {}
        self.txn: list[list] | None = None
        self.txn_polled: dict[tuple, int] = {}
        self.uncommitted: dict[tuple, int] = {}
        self.opened = self.closed = False
        self.seeks = 0
        kafka.sessions.append(self)

    async def open(self) -> dict:
        self.kafka.maybe_raise("open")
        self.opened = True
        return self.info()

    def info(self) -> dict:
        return {"transaction_version": 2 if self.config.transactional else None}

    def _group(self) -> dict:
        return self.kafka.groups.setdefault(self.config.group_id, {})

    async def assign(self, keys, from_beginning: bool = False) -> None:
        self.kafka.maybe_raise("assign")
        self.keys = list(keys)
        g = self._group()
        self.pos = {k: 0 if from_beginning else g.get(k, 0) for k in self.keys}

    async def subscribe(self, keys) -> None:
        """The group assigns the topics' partitions at the next poll (a rebalance)."""
        self.kafka.maybe_raise("subscribe")
        topics = {t for t, _p in keys}
        self.keys, self.pos = [], {}
        self.pending = [k for k in self.kafka.logs if k[0] in topics] or list(keys)

    def mark(self) -> None:
        self.marked = dict(self.pos)

    def rebalanced(self) -> list:
        moved, self.moved = getattr(self, "moved", []), []
        return moved

    async def seek_back(self) -> None:
        self.seeks += 1
        self.pos = dict(self.marked)

    async def send(self, key, value) -> int:
        self.kafka.maybe_raise("send")
        log = self.kafka.log(key)
        rec = [len(log), value, "open" if self.txn is not None else "committed"]
        log.append(rec)
        if self.txn is not None:
            self.txn.append(rec)
        return rec[0]

    async def poll(self) -> dict:
        self.kafka.maybe_raise("poll")
        if getattr(self, "pending", None):          # the rebalance: from the group's offsets
            g = self._group()
            self.keys, self.pos = self.pending, {k: g.get(k, 0) for k in self.pending}
            self.moved, self.pending = list(self.pending), None
        out = {}
        for k in self.keys:
            log = self.kafka.log(k)
            got = []
            o = self.pos.get(k, 0)
            while o < len(log) and len(got) < self.config.max_poll_records:
                off, v, state = log[o]
                if state == "open":
                    break
                if state == "committed" or (state == "aborted" and self.kafka.lose_aborts):
                    got.append((off, v))
                o += 1
            self.pos[k] = o
            if got:
                out[k] = got
                self.txn_polled[k] = max(self.txn_polled.get(k, -1), got[-1][0])
                self.uncommitted[k] = max(self.uncommitted.get(k, -1), got[-1][0])
        return out

    async def begin(self) -> None:
        self.kafka.maybe_raise("begin")
        self.txn, self.txn_polled = [], {}

    async def send_offsets(self) -> dict:
        self.kafka.maybe_raise("send_offsets")
        self.pending_offsets = offsets_after(self.txn_polled)
        return self.pending_offsets

    async def commit(self) -> None:
        self.kafka.maybe_raise("commit")
        for rec in self.txn or ():
            rec[2] = "committed"
        self._group().update(getattr(self, "pending_offsets", {}))
        self.txn, self.pending_offsets = None, {}

    async def abort(self) -> None:
        self.kafka.maybe_raise("abort")
        for rec in self.txn or ():
            rec[2] = "aborted"
        self.txn, self.pending_offsets = None, {}

    async def commit_offsets(self) -> dict:
        offsets = offsets_after(self.uncommitted)
        self._group().update(offsets)
        self.uncommitted = {}
        return offsets

    async def close(self) -> None:
        self.closed = True
        for rec in self.txn or ():        # the coordinator aborts what a closed session left open
            rec[2] = "aborted"
        self.txn = None


class FakeFactory:
    """A ``TxnClientFactory`` of :class:`FakeSession` s."""

    name = "fake"

    def __init__(self, kafka: FakeKafka):
        self.kafka = kafka
        self.closed = False

    def describe(self) -> dict:
        return {"client": "fake", "fake": "1.0"}

    def session(self, config: SessionConfig) -> FakeSession:
        return FakeSession(self.kafka, config)

    async def aclose(self) -> None:
        self.closed = True


class FakeAdmin:
    """The queue workload's client as far as topic creation goes."""

    def __init__(self, kafka: FakeKafka):
        self.kafka = kafka

    async def create_topic(self, topic, partitions, replication_factor, configs) -> None:
        self.kafka.topics[topic] = (partitions, replication_factor, dict(configs))
        for p in range(partitions):
            self.kafka.log((topic, p))

    async def end_offset(self, topic, partition) -> int:
        return len(self.kafka.log((topic, partition)))

    async def close(self) -> None:
        pass


def txn_topology(kafka: FakeKafka) -> Topology:
    """Three controllers and :data:`BROKERS`; the fake's admin and transactional clients."""
    nodes = ("n1", "n2", "n3")
    return Topology(nodes, {n: (f"10.0.0.{n[1:]}", 9093) for n in nodes}, {n: int(n[1:]) for n in nodes},
                    kraft_client, bootstrap=BROKERS,
                    queue_client_factory=lambda _bootstrap, _options: FakeAdmin(kafka),
                    txn_clients=lambda: FakeFactory(kafka))


def make_wl(tmp_path, kafka: FakeKafka, **opts) -> TxnWorkload:
    """A TxnWorkload on ``kafka`` writing ``tmp_path/history.jsonl``."""
    history = HistoryWriter(tmp_path / "history.jsonl")
    return TxnWorkload(txn_topology(kafka), "cid-abcdefgh", history, 7, TxnOptions(**opts))


def run_txn(tmp_path, kafka: FakeKafka, seconds: float = 0.5, **opts):
    """setup, clients for ``seconds``, the final polls; returns (workload, history ops)."""
    opts = {"concurrency": 4, "rate": 400.0, **opts}
    wl = make_wl(tmp_path, kafka, **opts)

    async def main():
        await wl.setup()
        stop = asyncio.Event()
        task = asyncio.create_task(wl.run(stop, monitor=False))
        await asyncio.sleep(seconds)
        stop.set()
        await task
        wl.left = await final_polls(wl, timeout_s=5.0)
        await wl.close()

    asyncio.run(main())
    wl.history.close()
    return wl, read_history(wl.history.path)


def kafka_txn_result(ops) -> dict:
    """Jepsen's checker's result over ``ops``."""
    return check_all_folds(ops_of(ops), ["kafka-txn"])["checkers"]["kafka-txn"]


def definite(code: str = "NOT_ENOUGH_REPLICAS", **flags) -> TxnDefiniteError:
    return TxnDefiniteError(code, "scripted", **flags)


def indefinite(code: str = "_MSG_TIMED_OUT", **flags) -> TxnIndefiniteError:
    return TxnIndefiniteError(code, "scripted", **flags)
