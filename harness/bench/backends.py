"""``make bench``: the time to start a cluster and elect a leader, per backend, side by side.

For each backend (``docker``, ``netns``), ``--repeats`` times, a fresh ``--nodes``-node
cluster of our KRaft (``--db kraft``), with what its nodes run already prepared (a cached
node image; the deployed files):

- **cluster up**: seconds of ``cluster.setup()`` (containers and network; namespaces,
  bridge and inits);
- **first leader**: seconds from the start of ``db.setup()`` (config, format, start every
  node) to the first DescribeQuorum answer that names a leader;
- **total**: the two together, what a run waits before its workload starts;
- **teardown**: seconds of ``db.teardown()`` and ``cluster.teardown()``.

Every figure is measured in this run, the backends one after the other (median of the
repeats; min and max beside it). A backend that cannot run here (no Docker engine, not
root) is reported with the reason and the other is still measured. Exit 0 when at least one
backend was measured, 4 when none could be.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time

from clusters.errors import ClusterError
from clusters.registry import BACKENDS, make_cluster, resolve_backend
from harness.bench.targets import first_leader_s
from harness.run.runner import cluster_id_for
from targets.errors import TargetError
from targets.registry import node_software, target_spec
from targets.settings import KraftSettings

SEED = 15
#: the subnet each backend's clusters use (both free on a host running only kraft-chaos)
SUBNETS = {"docker": "10.86.0.0/24", "netns": "10.88.0.0/24"}
FIGURES = ("cluster_up_s", "first_leader_s", "total_s", "teardown_s")


def once(backend, software, nodes: int, index: int, subnet: str) -> dict:
    """One cold start of a ``nodes``-node cluster on ``backend`` (a ``clusters.registry.
    Resolved``): its figures in seconds (see the module doc). Raises ``ClusterError``,
    ``TimeoutError``."""
    spec = target_spec("kraft")
    options = KraftSettings(seed=SEED, nodes=nodes)
    cid = cluster_id_for(SEED)
    cluster = make_cluster(backend.name, nodes, f"bench-{backend.name}-{int(time.time())}-{index}", software,
                           subnet=subnet, engine=backend.engine)
    db = None
    t0 = time.monotonic()
    try:
        cluster.setup()
        up = time.monotonic() - t0
        db = spec.make_db(cluster, cid, options)
        leader = asyncio.run(first_leader_s(db, cid, timeout_s=120.0))
    finally:
        t1 = time.monotonic()
        if db is not None:
            db.teardown()
        cluster.teardown()
        down = time.monotonic() - t1
    return {"cluster_up_s": up, "first_leader_s": leader, "total_s": up + leader, "teardown_s": down}


def measure(name: str, args) -> dict:
    """Every repeat on backend ``name``: ``{"runs": [figures, ...]}``, or ``{"error": why}``."""
    try:
        backend = resolve_backend(name)
        software = node_software(target_spec("kraft"), backend, KraftSettings(), lambda m: print(m, flush=True))
        runs = []
        for i in range(args.repeats):
            runs.append(once(backend, software, args.nodes, i, SUBNETS[name]))
            print(f"  {name} {i + 1}/{args.repeats}: " + ", ".join(f"{k} {v:.2f}" for k, v in runs[-1].items()),
                  flush=True)
        return {"runs": runs}
    except (ClusterError, TargetError, TimeoutError, ValueError) as e:
        return {"error": str(e).splitlines()[0][:300]}
    finally:
        if "backend" in locals() and backend.engine is not None:       # the docker backend's client
            backend.engine.close()


def table(results: dict, nodes: int) -> str:
    """The side-by-side table: one row per figure, one column per backend (median [min-max])."""
    names = list(results)
    lines = [f"{nodes}-node kraft cluster, cold start to first leader (s; median [min-max] of the repeats)",
             f"{'':26}" + "".join(f"{n:>24}" for n in names)]
    for fig in FIGURES:
        cells = []
        for n in names:
            runs = results[n].get("runs")
            if not runs:
                cells.append(f"{'n/a':>24}")
                continue
            xs = [r[fig] for r in runs]
            cells.append(f"{statistics.median(xs):>10.2f} [{min(xs):.2f}-{max(xs):.2f}]".rjust(24))
        lines.append(f"{fig.replace('_s', '').replace('_', ' '):26}" + "".join(cells))
    measured = [n for n in names if results[n].get("runs")]
    if len(measured) == 2:
        a, b = (statistics.median(r["total_s"] for r in results[n]["runs"]) for n in measured)
        lines.append(f"total {measured[0]} / {measured[1]}: {a / b:.1f}x")
    for n in names:
        if "error" in results[n]:
            lines.append(f"{n}: not measured: {results[n]['error']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Entry point (``python -m harness.bench.backends``)."""
    ap = argparse.ArgumentParser(prog="python -m harness.bench.backends", description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3, help="cold starts per backend (default 3)")
    ap.add_argument("--backends", default=",".join(BACKENDS), help="comma-separated (default docker,netns)")
    args = ap.parse_args(argv)
    names = [n for n in args.backends.split(",") if n]
    bad = [n for n in names if n not in BACKENDS]
    if bad or args.nodes < 1 or args.repeats < 1:
        print(f"bench: bad --backends {bad} (choose from {', '.join(BACKENDS)}), or --nodes/--repeats < 1",
              file=sys.stderr)
        return 3
    results = {}
    try:
        for name in names:
            print(f"{name}: {args.repeats} cold start(s) of {args.nodes} nodes ...", flush=True)
            results[name] = measure(name, args)
    except KeyboardInterrupt:
        return 130
    print()
    print(table(results, args.nodes))
    return 0 if any(r.get("runs") for r in results.values()) else 4


if __name__ == "__main__":
    sys.exit(main())
