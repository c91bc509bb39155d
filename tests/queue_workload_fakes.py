"""An in-memory queue cluster and its QueueClient (workloads/queue.py), with ways to misbehave;
helpers that run the queue workload on it and judge the history.

Every partition is a list of values; every record is committed at once (the
high watermark is the log end). A :class:`FakeQueueCluster`'s knobs make it
break one guarantee each, so each queue checker can be shown to fire:

- ``drop_every``: every Nth acknowledged send is acknowledged but never appended (lost);
- ``duplicate_every``: every Nth send is appended twice, acknowledged at the second (duplicate);
- ``misreport_every``: every Nth ack names the offset below the real one (inconsistent
  offsets, reordered);
- ``phantoms``: values appended to partition 0 that nobody sent (phantom);
- ``rewind_every``: every Nth non-empty poll starts one record before the offset asked (nonmonotonic poll);
- ``fail_every`` / ``info_every``: every Nth request raises a definite / indefinite error
  (the indefinite one after doing the work).
"""
from __future__ import annotations

import asyncio

from checkers.fold import ops_of
from checkers.registry import check_all_folds, reported_names
from history import HistoryWriter, read_history
from history import outcomes
from workloads.queue import QueueOptions, QueueWorkload
from workloads.queue_drain import drain
from workloads.registry import WORKLOAD_SPECS
from targets.kraft_client import kraft_client
from workloads.topology import Topology

BROKERS = ("b1:9092", "b2:9092", "b3:9092")


class FakeQueueCluster:
    """Topics as ``{name: [[values of partition 0], ...]}``, with the knobs of the module docstring."""

    def __init__(self, **knobs):
        self.topics: dict[str, list[list]] = {}
        self.configs: dict[str, dict] = {}
        self.created: list[tuple] = []
        self.sends = self.polls = self.requests = 0
        self.knobs = dict(drop_every=0, duplicate_every=0, misreport_every=0, phantoms=(),
                          rewind_every=0, fail_every=0, info_every=0, create_errors=(),
                          leaderless_requests=0)
        unknown = set(knobs) - set(self.knobs)
        if unknown:
            raise TypeError(f"unknown knobs {unknown}")
        self.knobs.update(knobs)
        self.clients: list["FakeQueueClient"] = []

    def every(self, name: str, n: int) -> bool:
        k = self.knobs[name]
        return bool(k) and n % k == 0

    def log(self, topic: str, partition: int) -> list:
        try:
            return self.topics[topic][partition]
        except (KeyError, IndexError):
            raise outcomes.DefiniteError("UNKNOWN_TOPIC_OR_PARTITION", f"{topic}-{partition}") from None

    def factory(self, bootstrap, options) -> "FakeQueueClient":
        c = FakeQueueClient(self, tuple(bootstrap), options)
        self.clients.append(c)
        return c


class FakeQueueClient:
    """A QueueClient of a :class:`FakeQueueCluster` (one await per request, like I/O)."""

    def __init__(self, cluster: FakeQueueCluster, bootstrap: tuple, options):
        self.cluster, self.bootstrap, self.options = cluster, bootstrap, options
        self.closed = False

    async def _request(self) -> None:
        await asyncio.sleep(0)
        c = self.cluster
        c.requests += 1
        if c.knobs["leaderless_requests"] > 0:
            c.knobs["leaderless_requests"] -= 1
            raise outcomes.DefiniteError("LEADER_NOT_AVAILABLE", "no leader yet")
        if c.every("fail_every", c.requests):
            raise outcomes.DefiniteError("NOT_LEADER_OR_FOLLOWER", "fake refusal")

    def _maybe_info(self) -> None:
        c = self.cluster
        if c.every("info_every", c.requests):
            raise outcomes.IndefiniteError("timeout", "fake timeout after the work was done")

    async def create_topic(self, topic, partitions, replication_factor, configs) -> None:
        c = self.cluster
        await asyncio.sleep(0)
        c.created.append((topic, partitions, replication_factor, dict(configs)))
        if c.knobs["create_errors"]:
            err, *rest = c.knobs["create_errors"]
            c.knobs["create_errors"] = tuple(rest)
            if err == "info-created":            # created, but the answer was lost
                c.topics[topic] = [[] for _ in range(partitions)]
                raise outcomes.IndefiniteError("timeout", "answer lost")
            raise outcomes.DefiniteError(err, "fake")
        if topic in c.topics:
            raise outcomes.DefiniteError("TOPIC_ALREADY_EXISTS", topic)
        c.topics[topic] = [[] for _ in range(partitions)]
        c.configs[topic] = dict(configs)
        if c.knobs["phantoms"]:
            c.topics[topic][0].extend(c.knobs["phantoms"])

    async def send(self, topic, partition, value) -> int:
        await self._request()
        c = self.cluster
        log = c.log(topic, partition)
        c.sends += 1
        n = c.sends
        if c.every("drop_every", n):
            offset = len(log)                   # acknowledged, never appended
        else:
            log.append(value)
            if c.every("duplicate_every", n):
                log.append(value)
            offset = len(log) - 1
            if c.every("misreport_every", n) and offset > 0:
                offset -= 1
        self._maybe_info()
        return offset if self.options.acks != 0 else -1

    async def poll(self, topic, partition, offset, max_records):
        await self._request()
        c = self.cluster
        log = c.log(topic, partition)
        if offset > len(log):
            raise outcomes.DefiniteError("OFFSET_OUT_OF_RANGE", f"{offset} > {len(log)}")
        c.polls += 1
        start = offset
        if offset > 0 and offset < len(log) and c.every("rewind_every", c.polls):
            start = offset - 1
        out = [(o, log[o]) for o in range(start, min(len(log), start + max_records))]
        self._maybe_info()
        return out

    async def end_offset(self, topic, partition) -> int:
        await self._request()
        return len(self.cluster.log(topic, partition))

    async def close(self) -> None:
        self.closed = True


def queue_topology(cluster: FakeQueueCluster | None = None) -> Topology:
    """Three controllers n1..n3 and three brokers :data:`BROKERS`; the cluster's factory."""
    nodes = ("n1", "n2", "n3")
    return Topology(nodes, {n: (f"10.0.0.{n[1:]}", 9093) for n in nodes}, {n: int(n[1:]) for n in nodes},
                    kraft_client, bootstrap=BROKERS, queue_client_factory=cluster.factory if cluster else None)


#: the queue workload's own checker (the quorum ones need monitor samples)
QUEUE_CHECKER = "queue"
assert QUEUE_CHECKER in WORKLOAD_SPECS["queue"].checkers
#: what it reports: itself, then each anomaly kind (Jepsen's names)
QUEUE_CHECKERS = reported_names([QUEUE_CHECKER])


def make_wl(tmp_path, cluster, **opts):
    """A QueueWorkload on ``cluster`` writing ``tmp_path/history.jsonl``."""
    history = HistoryWriter(tmp_path / "history.jsonl")
    return QueueWorkload(queue_topology(cluster), "cid", history, 7, QueueOptions(**opts))


def run_queue(tmp_path, cluster, seconds=0.4, **opts):
    """setup, clients for ``seconds``, drain; returns (workload, history ops)."""
    opts = {"concurrency": 6, "rate": 2000.0, **opts}
    wl = make_wl(tmp_path, cluster, **opts)

    async def main():
        await wl.setup()
        stop = asyncio.Event()
        task = asyncio.create_task(wl.run(stop, monitor=False))
        await asyncio.sleep(seconds)
        stop.set()
        await task
        return await drain(wl, timeout_s=5.0, retry_s=0.01)

    wl.reached = asyncio.run(main())
    wl.history.close()
    return wl, read_history(wl.history.path)


def verdicts(ops):
    """``({checker: valid}, {checker: result})`` of the queue checkers over ``ops``."""
    res = check_all_folds(ops_of(ops), [QUEUE_CHECKER])
    return {n: r["valid"] for n, r in res["checkers"].items()}, res["checkers"]
