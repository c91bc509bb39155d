"""``make bench``: the simulator's speed (sim/, ``kraft-chaos simulate``) and how soon it finds
each ``--unsafe`` switch.

Speed, on the correct build: ``BENCH_SIM_SEEDS`` (default 200) schedules of 30 virtual
seconds, each in the one default configuration (``simulate --no-swarm``, so that the figures
compare across changes of the swarm's draw), on 2 worker processes; prints simulated seconds
per wall second, events (core steps) per second, schedules per minute and the wall time 1,000 schedules would take
(the goal: under 60 s), beside the anchor measured in the same run: the bare cores of one
3-voter cluster stepping with no faults, invariants, history or judge (events/s), and the
ratio of the two. Then, with ``--switches`` (``make bench`` passes it), each switch run as
``kraft-chaos simulate --unsafe X`` runs it with no other option (swarm testing: each seed
draws its configuration, sim/swarm.py) seed after seed until the first failure or 60 s: wall
time to detect, seeds, the invariant and the configuration the failing seed drew. Wall times
depend on this shared machine's load (printed); nothing here is asserted.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time

from harness.simulation.judge import judge_history
from kraft.core.unsafe import SWITCHES
from sim.api import SimOptions, simulate
from sim.swarm import DIMENSIONS, describe

DETECT_BUDGET_S = 60.0


def bare_cores_events_per_s(events: int = 200_000) -> float:
    """The anchor: a 3-voter cluster of bare quorum cores (kraft/quorum/) in the simulator's
    runtime, no faults, no invariants, no clients, no judge; events per wall second."""
    from sim.quorum_nodes import quorum_nodes
    from sim.runtime import Runtime
    from kraft.core.unsafe import SAFE
    rt = Runtime(1)
    quorum_nodes(rt, 3, 0, SAFE)
    t0 = time.perf_counter()
    while rt.events < events:
        rt.run_until(rt.now + 1000.0)
    return rt.events / (time.perf_counter() - t0)


def speed(seeds: int, workers: int) -> dict:
    """Run ``seeds`` schedules of the correct build, judged by our checkers as ``kraft-chaos
    simulate`` judges them; the figures."""
    t0 = time.perf_counter()
    outs = list(simulate(SimOptions(), range(1, seeds + 1), workers, judge=judge_history))
    wall = time.perf_counter() - t0
    events = sum(o.events for o in outs)
    sim_s = sum(o.sim_seconds for o in outs)
    return {"seeds": len(outs), "failed": sum(not o.ok for o in outs), "wall_s": wall, "events": events,
            "events_per_s": events / wall, "sim_s_per_wall_s": sim_s / wall,
            "schedules_per_min": len(outs) / wall * 60, "wall_for_1000_s": wall / len(outs) * 1000}


def detect(switch: str, workers: int, budget_s: float = DETECT_BUDGET_S) -> dict:
    """Seeds 1, 2, ... with ``switch`` on, each drawing its configuration (``kraft-chaos
    simulate --unsafe SWITCH``), until the first failure or ``budget_s``; the wall and CPU
    seconds (this process and its workers) it took."""
    opts = SimOptions(unsafe=(switch,), swarm=DIMENSIONS)
    t0, c0 = time.perf_counter(), _cpu_s()
    n, found = 0, None
    outcomes = simulate(opts, range(1, 100_000), workers, deadline=time.monotonic() + budget_s, judge=judge_history)
    for o in outcomes:
        n += 1
        if not o.ok:
            found = o
            break
    wall = time.perf_counter() - t0
    outcomes.close()                      # the workers end and are reaped: their CPU time counts
    out = {"switch": switch, "found": found is not None, "wall_s": wall, "cpu_s": _cpu_s() - c0, "seeds": n}
    if found is not None:
        out.update(seed=found.seed, invariant=found.invariant, detail=found.detail,
                   configuration=describe(found.options))
    return out


def _cpu_s() -> float:
    """CPU seconds of this process and its ended children (the workers, once their pool closed)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _print_speed(seeds: int, workers: int) -> None:
    """Print the speed figures (module docstring) of ``seeds`` schedules on ``workers``."""
    anchor = bare_cores_events_per_s()
    s = speed(seeds, workers)
    print(f"simulate, correct build: {s['seeds']} schedules x 30 sim-s on {workers} workers in "
          f"{s['wall_s']:.1f} s ({s['failed']} failed)")
    print(f"  {s['sim_s_per_wall_s']:,.0f} sim-s per wall-s, {s['events_per_s']:,.0f} events/s, "
          f"{s['schedules_per_min']:,.0f} schedules/min; 1000 schedules would take {s['wall_for_1000_s']:.0f} s "
          f"(goal 60 s: {60 / s['wall_for_1000_s']:.2f}x of it)")
    print(f"  anchor, bare cores on one core: {anchor:,.0f} events/s; the simulator's whole loop on "
          f"{workers} workers: {s['events_per_s'] / anchor:.2f}x of it")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m harness.bench.simulate")
    p.add_argument("--seeds", type=int, default=int(os.environ.get("BENCH_SIM_SEEDS", "200")))
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--switches", action="store_true", help="also time the detection of every switch")
    p.add_argument("--only", type=lambda t: t.split(","), default=None, metavar="SWITCHES",
                   help="with --switches: these switches only (comma-separated)")
    p.add_argument("--no-speed", action="store_true", help="skip the speed figures (with --switches)")
    args = p.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} "
          f"on {os.cpu_count()} cores (a shared machine: wall times are noisy)")
    if not args.no_speed:
        _print_speed(args.seeds, args.workers)
    if args.switches:
        print(f"time to detect each switch (first failing seed, at most {DETECT_BUDGET_S:.0f} s of wall time):")
        for sw in args.only or list(SWITCHES):
            d = detect(sw, args.workers)
            if d["found"]:
                print(f"  {sw:26} {d['wall_s']:5.1f} s ({d['cpu_s']:5.1f} CPU-s)  seed {d['seed']:<4} "
                      f"({d['seeds']} seeds)  {d['invariant']}\n  {'':26} drew: {d['configuration']}", flush=True)
            else:
                print(f"  {sw:26} not found in {d['wall_s']:.0f} s ({d['seeds']} seeds)", flush=True)
    return 0


if __name__ == "__main__":
    random.seed(0)
    sys.exit(main(sys.argv[1:]))
