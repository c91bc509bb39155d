"""``make bench``: commit throughput/latency and leader failover time on a real cluster
(``--cluster``: docker by default, or netns).

Prints, for a 5-node cluster without faults:

- throughput (committed appends/s) and commit latency p50/p99 (ms) of
  closed-loop clients, each waiting for its append to commit;
- failover time after kill -9 of the leader: from the kill to the first
  committed append invoked after it (ms), the median of 10 kills;

and ratios against the default workload's target rate and the election
timeout. Times are wall-clock on this machine; nothing here is asserted.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time

from checkers.stats import quantile
from clusters.errors import ClusterError
from clusters.registry import make_cluster, resolve_backend
from harness.run.leader import wait_for_catch_up, wait_for_leader
from harness.run.runner import cluster_id_for
from history.outcomes import ClientError
from targets.kraft_client import KraftClient
from targets.kraft_db import KraftDB
from targets.registry import node_software, target_spec
from targets.settings import KraftSettings


async def throughput(db: KraftDB, nodes: list[str], cid: str, clients: int, seconds: float) -> dict:
    """Closed-loop appends to the leader for ``seconds``; returns ops/s and latency (ms)."""
    leader = await wait_for_leader(db, nodes, cid, 30.0)
    host, port = db.address(leader)
    lat: list[float] = []
    errors = 0
    stop = time.monotonic() + seconds

    async def worker(w: int) -> None:
        nonlocal errors
        c = KraftClient(host, port, cid, timeout_ms=5000)
        i = 0
        while time.monotonic() < stop:
            t = time.perf_counter()
            try:
                await c.append(f"bench-{w}-{i}")
                lat.append((time.perf_counter() - t) * 1000)
            except ClientError:
                errors += 1
            i += 1
        await c.close()

    t0 = time.monotonic()
    await asyncio.gather(*(worker(w) for w in range(clients)))
    elapsed = time.monotonic() - t0
    lat.sort()
    return {"ops": len(lat), "errors": errors, "ops_per_s": len(lat) / elapsed,
            "p50_ms": quantile(lat, 0.5), "p99_ms": quantile(lat, 0.99)}


async def failover_once(db: KraftDB, nodes: list[str], cid: str) -> float:
    """Kill -9 the leader; ms from issuing the kill to the first commit of an append invoked after it.

    The appenders only talk to the other nodes, so nothing commits until a
    new leader is elected among them.
    """
    leader = await wait_for_leader(db, nodes, cid, 30.0)
    others = [n for n in nodes if n != leader]
    done = asyncio.Event()
    killed_at: list[float] = []
    commits: list[float] = []

    async def appender(k: int) -> None:
        target = others[k % len(others)]
        clients = {n: KraftClient(*db.address(n), cid, timeout_ms=500) for n in others}
        i = 0
        while not done.is_set():
            invoked = time.monotonic()
            try:
                await clients[target].append(f"failover-{k}-{i}")
                if killed_at and invoked >= killed_at[0]:
                    commits.append(time.monotonic())
                    done.set()
            except ClientError as e:
                hint = db.node_for_id(e.leader_id) if e.leader_id else None
                target = hint if hint in clients else others[(others.index(target) + 1) % len(others)]
                await asyncio.sleep(0.005)
            i += 1
        for c in clients.values():
            await c.close()

    tasks = [asyncio.create_task(appender(k)) for k in range(4)]
    await asyncio.sleep(0.5)
    killed_at.append(time.monotonic())   # before the kill command: includes its latency
    await asyncio.to_thread(db.kill, leader)
    try:
        await asyncio.wait_for(done.wait(), 30.0)
    finally:
        done.set()
        await asyncio.gather(*tasks, return_exceptions=True)
    ms = (commits[0] - killed_at[0]) * 1000
    await asyncio.to_thread(db.start, leader)
    await wait_for_catch_up(db, nodes, cid, 15.0)
    return ms


async def bench(db: KraftDB, nodes: list[str], cid: str, args) -> dict:
    """Run both benchmarks; returns their figures."""
    tp = await throughput(db, nodes, cid, args.clients, args.seconds)
    samples = []
    for i in range(args.kills):
        ms = await failover_once(db, nodes, cid)
        samples.append(ms)
        print(f"  failover {i + 1}/{args.kills}: {ms:.0f} ms", flush=True)
        await asyncio.sleep(1.0)
    return {"throughput": tp, "failover_ms": samples}


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``make bench``. Exit 0, or 4 when the cluster cannot be set up."""
    ap = argparse.ArgumentParser(prog="python -m harness.bench.quorum", description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5)
    ap.add_argument("--clients", type=int, default=20, help="closed-loop clients for throughput")
    ap.add_argument("--seconds", type=float, default=20.0, help="throughput phase length (s)")
    ap.add_argument("--kills", type=int, default=10, help="leader kills for the failover median")
    ap.add_argument("--subnet", default="10.77.0.0/24")
    ap.add_argument("--cluster", choices=["docker", "netns", "auto"], default="docker", help="backend (default docker)")
    args = ap.parse_args(argv)
    seed = 595
    cid = cluster_id_for(seed)
    try:
        backend = resolve_backend(args.cluster)
        options = KraftSettings(seed=seed, nodes=args.nodes)
        software = node_software(target_spec("kraft"), backend, options, lambda m: print(m, flush=True))
        cluster = make_cluster(backend.name, args.nodes, f"bench-{int(time.time())}", software,
                               subnet=args.subnet, engine=backend.engine)
    except ClusterError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 4
    db = None
    try:
        cluster.setup()
        db = KraftDB(cluster, cid, seed)
        db.setup()
        print(f"{args.nodes}-node cluster up; {args.clients} closed-loop clients for {args.seconds:.0f} s ...", flush=True)
        out = asyncio.run(bench(db, cluster.nodes, cid, args))
    except KeyboardInterrupt:
        return 130
    finally:
        if db is not None:
            db.teardown()
        cluster.teardown()
    tp, fo = out["throughput"], out["failover_ms"]
    med = statistics.median(fo)
    print()
    print(f"throughput, {args.nodes} nodes, no faults : {tp['ops_per_s']:.0f} committed appends/s "
          f"({tp['ops']} ops, {tp['errors']} errors)")
    print(f"commit latency                     : p50 {tp['p50_ms']:.1f} ms, p99 {tp['p99_ms']:.1f} ms")
    print(f"failover after kill -9 of leader   : median {med:.0f} ms over {len(fo)} kills "
          f"(min {min(fo):.0f}, max {max(fo):.0f})")
    print(f"ratio throughput / default target rate (100 ops/s): {tp['ops_per_s'] / 100:.1f}x")
    print(f"ratio failover median / fetch timeout (2000 ms)   : {med / 2000:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
