"""``python -m harness.bench.txn_clients``: the transactional clients (``--client
librdkafka`` and ``java``) against one real Kafka cluster in Docker (1 controller, 3 brokers
of ``--kafka-version``, default the newest release), side by side:

- **the Java client's JVM**: ms from launching it to its first answer (``--jvm-starts``
  times); ms to open a session (producer, consumer, ``initTransactions``) in a fresh JVM and
  in a warm one; ms to close one (the workload's crash);
- **per-op latency** (ms, p50 and p99 over ``--ops`` ops, each awaited before the next): an
  idempotent ``send`` (acks=all), a ``poll`` that returns records, and a transaction
  (``begin``, one ``send``, ``commit``: the commit alone and the whole);
- **the transaction version** each client's sessions speak (2: KIP-890 part 2).

Also :func:`kafka_cluster`, the cluster the data-plane client tests start. Exit 0, 3 for a
target error (a release that does not resolve), 4 when the cluster cannot be made. Times are
wall-clock on this machine; nothing is asserted.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import sys
import time
import uuid
from typing import Iterator

from checkers.stats import quantile
from clusters.errors import ClusterError
from targets.errors import TargetError
from targets.kafka.releases import DEFAULT_VERSION
from targets.txn_client import SessionConfig


@dataclasses.dataclass
class KafkaCluster:
    """A started cluster: its ``db`` (``targets.kafka.db.KafkaDB``) and the brokers' endpoints."""

    db: object
    bootstrap: tuple[str, ...]

    def create_topic(self, topic: str, partitions: int = 2, replication_factor: int = 3,
                     min_insync: int = 2, timeout_s: float = 60.0) -> None:
        """Create ``topic`` (unclean leader election off) and wait until every partition has
        a leader; raises ``RuntimeError`` when that did not happen within ``timeout_s``."""
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": ",".join(self.bootstrap)})
        fut = admin.create_topics([NewTopic(topic, partitions, replication_factor, config={
            "min.insync.replicas": str(min_insync), "unclean.leader.election.enable": "false"})])[topic]
        fut.result(timeout_s)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            md = admin.list_topics(topic, timeout=5).topics.get(topic)
            if md is not None and md.error is None and len(md.partitions) == partitions and \
                    all(p.leader >= 0 for p in md.partitions.values()):
                return
            time.sleep(0.3)
        raise RuntimeError(f"topic {topic} has no leader for every partition after {timeout_s:.0f} s")


@contextlib.contextmanager
def kafka_cluster(engine, version: str, subnet: str, *, controllers: int = 1, brokers: int = 3,
                  name: str = "clients") -> Iterator[KafkaCluster]:
    """Start ``controllers`` controllers and ``brokers`` brokers of Kafka ``version`` in Docker
    on ``subnet`` (the node image built if missing), wait until every broker is registered,
    yield the cluster, and always tear it down. The caller holds the machine's cluster lock.
    Raises ``TargetError``/``ClusterError`` when it cannot be made, ``RuntimeError`` when the
    brokers do not register within 90 s."""
    from clusters.registry import Resolved, make_cluster
    from targets.kafka.queue_client import wait_for_brokers
    from targets.registry import node_software, target_spec

    spec = target_spec("kafka")
    options = spec.settings(seed=7, nodes=controllers, brokers=brokers, kafka_version=version,
                            kafka_topology="dedicated")
    software = node_software(spec, Resolved("docker", engine), options, lambda m: print(m, flush=True))
    cluster = make_cluster("docker", controllers + brokers, f"{name}-{int(time.time())}", software,
                           subnet=subnet, engine=engine)
    db = None
    try:
        cluster.setup()
        db = spec.make_db(cluster, f"kc{os.getpid()}", options)
        db.setup()
        bootstrap = tuple(db.client_endpoint(n) for n in db.client_nodes())
        ids = {db.node_id(n) for n in db.client_nodes()}
        if not wait_for_brokers(bootstrap, ids, 90.0):
            raise RuntimeError(f"Kafka {version}: brokers {sorted(ids)} did not all register within 90 s")
        yield KafkaCluster(db, bootstrap)
    finally:
        if db is not None:
            db.teardown()
        cluster.teardown()


def _stats(ms: list[float]) -> dict:
    s = sorted(ms)
    return {"n": len(s), "p50_ms": quantile(s, 0.5), "p99_ms": quantile(s, 0.99)} if s else {"n": 0}


def _config(bootstrap, txn: bool) -> SessionConfig:
    return SessionConfig(tuple(bootstrap), group_id=f"bench-{uuid.uuid4().hex[:8]}",
                         transactional_id=f"bench-{uuid.uuid4().hex[:8]}" if txn else None)


async def jvm_figures(version: str, bootstrap, starts: int) -> dict:
    """The Java client's JVM: cold start, first and warm session open, close (ms)."""
    from targets.kafka.txn_java import java_factory
    cold, first_open, warm_open, close = [], [], [], []
    for _ in range(starts):
        f = java_factory(version)
        try:
            jvm = await f.jvm()
            cold.append(jvm.start_ms)
            for i in range(4):
                s = f.session(_config(bootstrap, True))
                t = time.monotonic()
                await s.open()
                (first_open if i == 0 else warm_open).append((time.monotonic() - t) * 1000)
                t = time.monotonic()
                await s.close()
                close.append((time.monotonic() - t) * 1000)
        finally:
            await f.aclose()
    return {"jvm_start": _stats(cold), "open_first": _stats(first_open), "open_warm": _stats(warm_open),
            "close": _stats(close)}


async def op_figures(client: str, version: str, cluster: KafkaCluster, ops: int) -> dict:
    """Per-op latency of one client (ms): send, poll with records, a transaction's commit."""
    from targets.kafka.txn_clients import client_factory
    topic = f"bench-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, 1)
    key = (topic, 0)
    f = client_factory(client, version)
    out: dict = {}
    try:
        s = f.session(_config(cluster.bootstrap, False))
        await s.open()
        sends = []
        for v in range(ops):
            t = time.monotonic()
            await s.send(key, v)
            sends.append((time.monotonic() - t) * 1000)
        await s.assign([key], from_beginning=True)
        polls, got = [], 0
        deadline = time.monotonic() + 60
        while got < ops and time.monotonic() < deadline:
            t = time.monotonic()
            n = len((await s.poll()).get(key, []))
            if n:
                polls.append((time.monotonic() - t) * 1000)
            got += n
        await s.close()
        tx = f.session(_config(cluster.bootstrap, True))
        info = await tx.open()
        commits, txns = [], []
        for v in range(ops):
            t0 = time.monotonic()
            await tx.begin()
            await tx.send(key, v)
            t1 = time.monotonic()
            await tx.commit()
            t2 = time.monotonic()
            commits.append((t2 - t1) * 1000)
            txns.append((t2 - t0) * 1000)
        await tx.close()
        out = {"send": _stats(sends), "poll": {**_stats(polls), "records_per_poll": got / max(1, len(polls))},
               "commit": _stats(commits), "txn": _stats(txns), "transaction_version": info["transaction_version"],
               "describe": f.describe()}
    finally:
        await f.aclose()
    return out


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``python -m harness.bench.txn_clients [--kafka-version V] [--ops N]``."""
    ap = argparse.ArgumentParser(prog="python -m harness.bench.txn_clients", description=__doc__.splitlines()[0])
    ap.add_argument("--kafka-version", default=DEFAULT_VERSION)
    ap.add_argument("--ops", type=int, default=200, help="ops per latency figure")
    ap.add_argument("--jvm-starts", type=int, default=5, help="JVMs started for the start-up figures")
    ap.add_argument("--java-versions", default="", help="also the Java client of these releases "
                    "(comma-separated) against the cluster: the transaction version each speaks")
    ap.add_argument("--subnet", default="10.138.0.0/24")
    ap.add_argument("--bootstrap", default="", help="host:port,... of a running cluster of that release "
                    "(3 brokers) to measure instead of starting one")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args(argv)
    from clusters.engine import connect_engine
    from targets.kafka.txn_clients import check_client
    figures: dict = {"kafka_version": args.kafka_version}
    try:
        for v in {args.kafka_version, *filter(None, args.java_versions.split(","))}:
            check_client("java", v, log=lambda m: print(m, flush=True))
        given = contextlib.nullcontext(KafkaCluster(None, tuple(args.bootstrap.split(","))))
        with given if args.bootstrap else \
                kafka_cluster(connect_engine(), args.kafka_version, args.subnet, name="bench-txn") as kc:
            figures["jvm"] = asyncio.run(jvm_figures(args.kafka_version, kc.bootstrap, args.jvm_starts))
            for client in ("librdkafka", "java"):
                figures[client] = asyncio.run(op_figures(client, args.kafka_version, kc, args.ops))
            for v in filter(None, args.java_versions.split(",")):
                figures[f"java {v}"] = asyncio.run(op_figures("java", v, kc, 20))
    except (TargetError, ValueError) as e:
        print(f"bench: {e}", file=sys.stderr)
        return 3
    except (ClusterError, RuntimeError) as e:
        print(f"bench: {e}", file=sys.stderr)
        return 4
    if args.json:
        print(json.dumps(figures, indent=1))
        return 0
    print(f"\nKafka {args.kafka_version}, 3 brokers; ms, p50 / p99")
    for name, key in (("JVM start (to first answer)", "jvm_start"), ("session open, fresh JVM", "open_first"),
                      ("session open, warm JVM", "open_warm"), ("session close (crash)", "close")):
        st = figures["jvm"][key]
        print(f"  {name:32}{st['p50_ms']:9.1f} / {st['p99_ms']:7.1f}  (n={st['n']})")
    print(f"  {'':32}{'librdkafka':>18}{'java':>20}")
    for op in ("send", "poll", "commit", "txn"):
        cells = [f"{figures[c][op]['p50_ms']:8.1f} / {figures[c][op]['p99_ms']:7.1f}" for c in ("librdkafka", "java")]
        print(f"  {op:32}{cells[0]:>18}{cells[1]:>20}")
    for name in [k for k in figures if k in ("librdkafka", "java") or k.startswith("java ")]:
        print(f"  transaction version, {name}: {figures[name]['transaction_version']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
