"""``make bench DB=kafka``: Apache Kafka's quorum beside ours, measured side by side in one run.

For each target (``kraft``: 5 voters; ``kafka``: 5 controllers and 3 brokers, kraft.version
1), on a cluster of its own with a cached image and no faults:

- **first leader**: seconds from the start of ``db.setup()`` (format and start every node)
  to the first DescribeQuorum answer that names a leader;
- **write throughput**: closed-loop clients for ``--seconds``, each waiting for its write:
  committed appends to the leader (kraft) or CreateTopics through the brokers (kafka);
  writes/s and latency p50/p99 (ms);
- **failover**: kill -9 of the active leader (controller), then the ms from issuing the kill
  to the first successful write invoked once the process was gone (a docker exec takes
  ~100 ms; writes in that window still reach the old leader), the median over ``--kills`` kills (the
  killed node is restarted and caught up in between).

Then the ratios kafka / kraft. Times are wall-clock on this machine; nothing is asserted.
Exit 0, 3 for a target error (a Kafka version that does not resolve), 4 when a cluster
cannot be set up.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from typing import Any, Callable

from checkers.stats import quantile
from clusters.engine import connect_engine
from clusters.errors import ClusterError
from clusters.registry import Resolved, make_cluster
from harness.config.run import RunConfig
from harness.run.leader import find_leader_async, wait_for_catch_up, wait_for_leader
from harness.run.runner import cluster_id_for
from history.outcomes import ClientError
from targets.kraft_client import KraftClient
from targets.errors import TargetError
from targets.kafka.releases import DEFAULT_VERSION
from targets.registry import node_software, target_spec
from workloads.metadata import KafkaAdmin

SEED = 853


class Writer:
    """One closed-loop client: ``await write(i)`` makes one write (raises ``ClientError``)."""

    def __init__(self, db, cid: str, index: int, nodes: list[str], timeout_ms: int):
        self.db, self.cid, self.index, self.timeout_ms = db, cid, index, timeout_ms
        self.nodes = nodes
        self.target = nodes[index % len(nodes)]
        self.clients: dict = {}

    def _client(self, node: str):
        raise NotImplementedError

    async def write(self, i: int) -> None:
        try:
            await self._send(self._client(self.target), i)
        except ClientError as e:
            hint = e.leader_id
            named = self.db.node_for_id(hint) if isinstance(hint, int) and hint > 0 else None
            self.target = named if named in self.nodes else \
                self.nodes[(self.nodes.index(self.target) + 1) % len(self.nodes)]
            raise

    async def _send(self, client, i: int) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        for c in self.clients.values():
            await c.close()


class KraftWriter(Writer):
    """Appends to our quorum, following leader hints."""

    def _client(self, node: str):
        c = self.clients.get(node)
        if c is None:
            c = self.clients[node] = KraftClient(*self.db.address(node), self.cid, timeout_ms=self.timeout_ms)
        return c

    async def _send(self, client, i: int) -> None:
        await client.append(f"bench-{self.index}-{i}")


class KafkaWriter(Writer):
    """CreateTopics ``b-<client>-<i>`` through one broker each."""

    def _client(self, node: str):
        c = self.clients.get(node)
        if c is None:
            c = self.clients[node] = KafkaAdmin(self.db.client_endpoint(node), self.timeout_ms)
        return c

    async def _send(self, client, i: int) -> None:
        await client.create(f"b-{self.index}-{i}-{time.monotonic_ns()}")


#: each target's writer, and the nodes it writes to: ``db -> [node]`` (our quorum's appends go
#: to the voters; Kafka's CreateTopics to the brokers)
WRITERS: dict[str, tuple[type, Callable[[Any], list[str]]]] = {
    "kraft": (KraftWriter, lambda db: db.quorum_nodes()),
    "kafka": (KafkaWriter, lambda db: db.client_nodes()),
}


def writers(name: str, db, cid: str, n: int, timeout_ms: int, avoid: str | None = None) -> list[Writer]:
    """``n`` writers for target ``name``; with ``avoid``, none sends to that node."""
    cls, targets = WRITERS[name]
    nodes = [x for x in targets(db) if x != avoid]
    return [cls(db, cid, i, nodes, timeout_ms) for i in range(n)]


async def throughput(name: str, db, cid: str, clients: int, seconds: float) -> dict:
    """Closed-loop writes for ``seconds``: writes/s and latency (ms) of the successful ones."""
    lat: list[float] = []
    errors = 0
    stop = time.monotonic() + seconds
    ws = writers(name, db, cid, clients, 5000)

    async def loop(w: Writer) -> None:
        nonlocal errors
        i = 0
        while time.monotonic() < stop:
            t = time.perf_counter()
            try:
                await w.write(i)
                lat.append((time.perf_counter() - t) * 1000)
            except ClientError:
                errors += 1
                await asyncio.sleep(0.01)
            i += 1

    t0 = time.monotonic()
    await asyncio.gather(*(loop(w) for w in ws))
    elapsed = time.monotonic() - t0
    for w in ws:
        await w.close()
    lat.sort()
    return {"ops": len(lat), "errors": errors, "ops_per_s": len(lat) / elapsed,
            "p50_ms": quantile(lat, 0.5), "p99_ms": quantile(lat, 0.99)}


async def failover_once(name: str, db, cid: str) -> float:
    """Kill -9 the leader; ms from issuing the kill to the first success of a write invoked
    after the kill returned (the process confirmed gone), so writes that the old leader
    committed while the kill command was still on its way do not count."""
    nodes = db.quorum_nodes()
    leader = await wait_for_leader(db, nodes, cid, 60.0)
    ws = writers(name, db, cid, 4, 1000, avoid=leader)     # a writer to the killed leader would only wait
    done = asyncio.Event()
    killed_at: list[float] = []
    dead_at: list[float] = []
    commits: list[float] = []

    async def loop(w: Writer) -> None:
        i = 0
        while not done.is_set():
            invoked = time.monotonic()
            try:
                await w.write(i)
                if dead_at and invoked >= dead_at[0]:
                    commits.append(time.monotonic())
                    done.set()
            except ClientError:
                await asyncio.sleep(0.005)
            i += 1

    tasks = [asyncio.create_task(loop(w)) for w in ws]
    await asyncio.sleep(1.0)
    killed_at.append(time.monotonic())   # before the kill command: includes its latency
    await asyncio.to_thread(db.kill, leader)
    dead_at.append(time.monotonic())
    try:
        await asyncio.wait_for(done.wait(), 60.0)
    finally:
        done.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        for w in ws:
            await w.close()
    ms = (commits[0] - killed_at[0]) * 1000
    await asyncio.to_thread(db.start, leader)
    await wait_for_catch_up(db, nodes, cid, 60.0)
    return ms


async def first_leader_s(db, cid: str, timeout_s: float = 300.0) -> float:
    """Seconds from the start of ``db.setup()`` to the first DescribeQuorum naming a leader."""
    t0 = time.monotonic()
    await asyncio.to_thread(db.setup)
    nodes = db.quorum_nodes()
    while time.monotonic() - t0 < timeout_s:
        if await find_leader_async(db, nodes, cid, 500) is not None:
            return time.monotonic() - t0
        await asyncio.sleep(0.05)
    raise TimeoutError(f"no leader within {timeout_s:.0f} s")


def bench_target(name: str, args, engine) -> dict:
    """Every figure for one target on a fresh cluster (torn down after)."""
    spec = target_spec(name)
    options = RunConfig(seed=SEED, nodes=5, db=name, kafka_version=args.kafka_version, kafka_topology="dedicated",
                        kraft_version=1).target_settings()
    software = node_software(spec, Resolved("docker", engine), options, lambda m: print(m, flush=True))
    cid = cluster_id_for(SEED)
    cluster = make_cluster("docker", spec.node_count(options), f"bench-{name}-{int(time.time())}", software,
                           subnet=args.subnet, engine=engine)
    db = None
    try:
        cluster.setup()
        db = spec.make_db(cluster, cid, options)
        out = {"first_leader_s": asyncio.run(first_leader_s(db, cid))}
        print(f"{name}: first leader after {out['first_leader_s']:.1f} s; "
              f"{args.clients} closed-loop clients for {args.seconds:.0f} s ...", flush=True)
        out["throughput"] = asyncio.run(throughput(name, db, cid, args.clients, args.seconds))
        samples = []
        for i in range(args.kills):
            samples.append(asyncio.run(failover_once(name, db, cid)))
            print(f"  {name} failover {i + 1}/{args.kills}: {samples[-1]:.0f} ms", flush=True)
        out["failover_ms"] = samples
        return out
    finally:
        if db is not None:
            db.teardown()
        cluster.teardown()


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``make bench DB=kafka``."""
    ap = argparse.ArgumentParser(prog="python -m harness.bench.targets", description=__doc__.splitlines()[0])
    ap.add_argument("--kafka-version", default=DEFAULT_VERSION)
    ap.add_argument("--clients", type=int, default=10, help="closed-loop clients for throughput")
    ap.add_argument("--seconds", type=float, default=20.0, help="throughput phase length (s)")
    ap.add_argument("--kills", type=int, default=10, help="leader kills for the failover median")
    ap.add_argument("--subnet", default="10.77.0.0/24")
    args = ap.parse_args(argv)
    figures = {}
    try:
        engine = connect_engine()
        for name in WRITERS:          # ours (the anchor), then Kafka
            figures[name] = bench_target(name, args, engine)
    except TargetError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 3
    except (ClusterError, TimeoutError) as e:
        print(f"bench: {e}", file=sys.stderr)
        return 4
    except KeyboardInterrupt:
        return 130
    print()
    print(f"{'':34}{'kraft (ours)':>16}{'kafka ' + args.kafka_version:>16}{'kafka/kraft':>14}")
    rows = [("first leader, cached image (s)", lambda f: f["first_leader_s"]),
            ("writes/s (closed loop)", lambda f: f["throughput"]["ops_per_s"]),
            ("write latency p50 (ms)", lambda f: f["throughput"]["p50_ms"]),
            ("write latency p99 (ms)", lambda f: f["throughput"]["p99_ms"]),
            (f"failover median of {args.kills} kill -9 (ms)", lambda f: statistics.median(f["failover_ms"]))]
    for label, get in rows:
        a, b = get(figures["kraft"]), get(figures["kafka"])
        print(f"{label:34}{a:16.1f}{b:16.1f}{b / a if a else float('nan'):13.2f}x")
    print("writes: kraft = committed appends to the leader; kafka = CreateTopics via the brokers "
          f"(errors: kraft {figures['kraft']['throughput']['errors']}, "
          f"kafka {figures['kafka']['throughput']['errors']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
