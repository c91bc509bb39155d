"""``kraft-chaos simulate``: seeded schedules of our quorum in virtual time (sim/), judged by
the named invariants after every step and by our checkers (the real runs' judge,
harness/simulation/judge.py, passed to the simulator), with shrinking of a failing seed and
its export as a scenario.

Swarm testing by default (sim/swarm.py): each seed draws its own configuration (voters,
kraft.version, workload and brokers, fault families, client rate, read fraction, Fetch size,
admin clients, fault lengths) from the seed alone; a dimension given on the command line is pinned, and
``--no-swarm`` pins every one at its default. A failing seed prints the configuration it drew
and the commands that repeat it (the same flags; every dimension pinned).

Exit 0 when no seed failed, 1 when one did, 3 for bad input.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

from faults.registry import SIMULATED
from harness.config.values import number, positive_int, seed_value, unsafe_switches
from harness.exits import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_INVALID, EXIT_VALID
from harness.simulation.judge import judge_history
from sim.api import SeedOutcome, SimOptions, simulate
from sim.swarm import DIMENSIONS, command_flags, describe
from sim.workloads import WORKLOADS

#: lines of a failing seed's event trace printed
TRACE_TAIL = 25
#: each pinned dimension's flag (its ``args`` attribute; None when not given)
PINS = {"voters": "voters", "kraft_version": "kraft_version", "workload": "workload", "brokers": "brokers",
        "families": "faults", "read_fraction": "read_fraction", "client_rate": "client_rate",
        "fetch_max_records": "fetch_max_records", "admin_clients": "admin_clients", "fault_max_ms": "fault_max_ms"}


def option_flags(opts: SimOptions) -> str:
    """The command-line flags that give ``opts`` (all but the seeds; sim/swarm.py ``command_flags``)."""
    return command_flags(opts)


def repeat_command(opts: SimOptions, seed: int) -> str:
    """The command line that repeats seed ``seed`` under ``opts``."""
    return f"kraft-chaos simulate --seed {seed} {option_flags(opts)}"


def options_from(args: argparse.Namespace) -> SimOptions:
    """The options the flags give: each dimension given on the command line pinned, the others
    drawn by each seed (swarm testing, sim/swarm.py) or, with ``--no-swarm``, at their defaults.
    Raises ValueError naming a bad one."""
    given = {dim: getattr(args, flag) for dim, flag in PINS.items() if getattr(args, flag) is not None}
    if "families" in given:
        given["families"] = None if given["families"] == ("all",) else tuple(
            f for f in given["families"] if f != "none")
    swarm = () if args.no_swarm else tuple(d for d in DIMENSIONS if d not in given)
    return SimOptions(unsafe=tuple(args.unsafe or ()), sim_seconds=args.sim_seconds, swarm=swarm, **given).check()


def digest(outcomes: list[SeedOutcome]) -> str:
    """sha256 of every outcome's replayable part (:meth:`SeedOutcome.key`), in seed order."""
    h = hashlib.sha256()
    for o in sorted(outcomes, key=lambda o: o.seed):
        h.update(repr(o.key()).encode())
    return h.hexdigest()[:16]


def cmd_simulate(args: argparse.Namespace) -> int:
    """Run the seeds, print the summary (and the first failing seed); see the module doc."""
    try:
        opts = options_from(args)
    except ValueError as e:
        print(f"kraft-chaos simulate: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    seeds = [args.seed] if args.seed is not None else list(range(args.first_seed, args.first_seed + args.seeds))
    deadline = time.monotonic() + args.time_limit if args.time_limit else None
    drawn = f"; each seed draws its {', '.join(opts.swarm)}" if opts.swarm else ""
    print(f"simulating {len(seeds)} seed(s) on {args.workers} worker(s): {option_flags(opts)}{drawn}", flush=True)
    t0 = time.perf_counter()
    outcomes: list[SeedOutcome] = []
    first_fail_wall = None
    try:
        for o in simulate(opts, seeds, args.workers, deadline, judge=judge_history):
            outcomes.append(o)
            if not o.ok:
                print(f"  seed {o.seed}: {o.invariant}: {o.detail}", flush=True)
                if first_fail_wall is None:
                    first_fail_wall = time.perf_counter() - t0
                if args.stop_at_first:
                    break
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    wall = time.perf_counter() - t0
    failed = sorted((o for o in outcomes if not o.ok), key=lambda o: o.seed)
    events = sum(o.events for o in outcomes)
    sim_s = sum(o.sim_seconds for o in outcomes)
    unknown = sum(1 for o in outcomes if o.ok and o.verdict == "unknown")
    print(f"{len(outcomes)} seed(s), {len(failed)} violation(s); wall {wall:.1f} s on {args.workers} worker(s)")
    if unknown:
        print(f"  {unknown} seed(s) the checkers could not judge in full (verdict unknown: no complete final "
              f"read, the cluster did not recover in time); not counted as violations")
    print(f"  {events:,} events, {events / wall:,.0f} events/s, {sim_s / wall:,.1f} sim-s per wall-s, "
          f"{len(outcomes) / wall * 60:,.0f} schedules/min")
    if first_fail_wall is not None:
        print(f"  first violation after {first_fail_wall:.1f} s of wall time")
    print(f"  digest {digest(outcomes)} (of every outcome, in seed order)")
    if args.out:
        _write_out(Path(args.out), opts, outcomes, wall)
    if not failed:
        return EXIT_VALID
    f = failed[0]
    checker = (f.invariant or "").startswith("checker:")
    print(f"\nfirst failing seed {f.seed}: {f.invariant}\n  {f.detail}")
    print("  trace (the faults, then the last steps):" if checker else f"  trace (last {TRACE_TAIL} steps):")
    for line in (f.trace if checker else f.trace[-TRACE_TAIL:]):
        print(f"    {line}")
    concrete = f.options or opts.for_seed(f.seed)
    if opts.swarm:
        print(f"  its configuration (drawn): {describe(concrete)}")
    print(f"repeat with: {repeat_command(opts, f.seed)}")
    if opts.swarm:
        print(f"  or, its configuration pinned: {repeat_command(concrete, f.seed)}")
    if args.shrink or args.export_scenario:
        _shrink(concrete, f.seed, args)
    return EXIT_INVALID


def _shrink(opts: SimOptions, seed: int, args) -> None:
    from sim.export import write_scenario
    from sim.shrink import shrink_seed
    print(f"\nshrinking seed {seed} ...", flush=True)
    r = shrink_seed(opts, seed, judge=judge_history)
    o, p = r.original, r.plan
    print(f"  {len(o.faults)} fault(s) -> {len(p.faults)}, {len(o.client_ops)} client op(s) -> {len(p.client_ops)}, "
          f"{o.end_ms / 1000:g} s -> {p.end_ms / 1000:g} s, in {r.runs} run(s); still {r.target}")
    print(f"  {r.result.first[1]}")
    for fault in p.faults:
        print(f"    fault {fault.describe()}")
    for a in r.result.applied:
        print(f"    landed {a['family']}/{a['kind']} at {a['at_ms'] / 1000:.3f} s on "
              f"{['n%d' % t for t in a['targets']]}{' grudge ' + str(a['grudge']) if 'grudge' in a else ''}")
    print(f"  shrunk trace (last {TRACE_TAIL} steps):")
    for line in r.result.trace[-TRACE_TAIL:]:
        print(f"    {line}")
    if args.export_scenario:
        path = write_scenario(opts, seed, r, Path(args.export_scenario), args.subnet)
        print(f"scenario: {path}\nreplay on a real cluster with: kraft-chaos scenario run {path}")
    if args.out:
        r.result_dir = Path(args.out) / f"seed-{seed}-shrunk"
        from sim.recording import Recording
        rec = Recording(lambda: 0.0)
        rec.ops = r.result.ops
        rec.write(r.result_dir / "history.jsonl")


def _write_out(out: Path, opts: SimOptions, outcomes: list[SeedOutcome], wall: float) -> None:
    out.mkdir(parents=True, exist_ok=True)
    doc = {"options": {"flags": option_flags(opts), "swarm": list(opts.swarm), "unsafe": list(opts.unsafe),
                       "sim_seconds": opts.sim_seconds},
           "wall_s": wall, "digest": digest(outcomes),
           "outcomes": [{"seed": o.seed, "ok": o.ok, "invariant": o.invariant, "detail": o.detail,
                         "events": o.events, "sim_seconds": o.sim_seconds, "wall_s": o.wall_s,
                         "configuration": option_flags(o.options) if o.options is not None else None}
                        for o in sorted(outcomes, key=lambda o: o.seed)]}
    (out / "summary.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    from sim.schedule import run_schedule
    for o in outcomes:
        if not o.ok:
            r = run_schedule(opts.for_seed(o.seed), o.seed, judge=judge_history, keep=True)
            from sim.recording import Recording
            rec = Recording(lambda: 0.0)
            rec.ops = r.ops
            rec.write(out / f"seed-{o.seed}" / "history.jsonl")
            (out / f"seed-{o.seed}" / "trace.txt").write_text("\n".join(r.trace) + "\n", encoding="utf-8")
    print(f"  written: {out / 'summary.json'}")


def fault_families(text: str) -> tuple[str, ...]:
    """``--faults``: comma-separated simulated fault families, ``all`` or ``none``."""
    names = tuple(dict.fromkeys(f.strip() for f in text.split(",") if f.strip()))
    if names in (("all",), ("none",)):
        return names
    bad = [f for f in names if f not in SIMULATED]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"no simulated fault family {', '.join(bad) or repr(text)}: choose from "
                                         f"{', '.join(SIMULATED)}, all or none")
    return names


def add_parser(sub) -> None:
    """The ``simulate`` subcommand."""
    s = sub.add_parser("simulate", help="seeded schedules of our quorum in virtual time: invariants after "
                                        "every step, our checkers on every history (sim/)")
    which = s.add_mutually_exclusive_group()
    which.add_argument("--seeds", type=positive_int("--seeds"), default=100, help="how many seeds (default 100)")
    which.add_argument("--seed", type=seed_value, default=None, help="run this one seed (a failing seed's replay)")
    s.add_argument("--first-seed", type=seed_value, default=1, help="the first of --seeds (default 1)")
    s.add_argument("--sim-seconds", type=number("--sim-seconds"), default=30.0,
                   help="virtual seconds of faults and clients per schedule (default 30)")
    s.add_argument("--no-swarm", action="store_true",
                   help="every seed the same configuration: the dimensions not given below at their "
                        "defaults (without it, each seed draws those: swarm testing)")
    s.add_argument("--voters", type=positive_int("--voters"), default=None,
                   help="quorum voters: 3 or 5 (default: drawn by each seed; --no-swarm: 3)")
    s.add_argument("--brokers", type=positive_int("--brokers", 0), default=None,
                   help="our brokers beside the quorum, with the queue workload (default: as the workload "
                        "needs; --no-swarm: 0)")
    s.add_argument("--kraft-version", type=int, choices=(0, 1), default=None,
                   help="0: static voters; 1: KIP-853, with wipes and voter changes (default: drawn; "
                        "--no-swarm: 0)")
    s.add_argument("--workload", choices=tuple(WORKLOADS), default=None,
                   help="the clients' workload (default: drawn; --no-swarm: the one --brokers runs)")
    s.add_argument("--faults", type=fault_families, default=None, metavar="FAMILIES",
                   help=f"the fault families on, comma-separated, or all or none: {', '.join(SIMULATED)} "
                        f"(default: drawn; --no-swarm: all)")
    s.add_argument("--unsafe", type=unsafe_switches, default=None, help="kraft.core.unsafe switches, comma-separated")
    s.add_argument("--client-rate", type=number("--client-rate"), default=None,
                   help="client ops per virtual second (default: drawn; --no-swarm: 40)")
    s.add_argument("--read-fraction", type=number("--read-fraction", 0.0, strict=False), default=None,
                   help="the share of client ops that are reads (default: drawn; --no-swarm: 0.1)")
    s.add_argument("--fetch-max-records", type=positive_int("--fetch-max-records"), default=None,
                   help="records per Fetch response (default: drawn; --no-swarm: 2000)")
    s.add_argument("--admin-clients", type=positive_int("--admin-clients"), default=None,
                   help="voter changes requested at once, 1..3 (default: drawn; --no-swarm: 1)")
    s.add_argument("--fault-max-ms", type=number("--fault-max-ms"), default=None,
                   help="how long a fault lasts at most, ms; a few last up to twice that (default: drawn; "
                        "--no-swarm: 5000)")
    s.add_argument("--workers", type=positive_int("--workers"), default=2, help="worker processes (default 2)")
    s.add_argument("--time-limit", type=number("--time-limit"), default=None,
                   help="stop starting seeds after this many wall seconds")
    s.add_argument("--stop-at-first", action="store_true", help="stop at the first failing seed")
    s.add_argument("--shrink", action="store_true", help="shrink the first failing seed (delta debugging)")
    s.add_argument("--export-scenario", metavar="DIR", default=None,
                   help="write the shrunk failing trace's faults as a scenario file into DIR")
    s.add_argument("--subnet", default=None, help="the exported scenario's cluster subnet (e.g. 10.111.0.0/24)")
    s.add_argument("--out", metavar="DIR", default=None,
                   help="write summary.json and each failing seed's history.jsonl and trace.txt into DIR")
