"""``kraft-chaos hunt``: spend a time budget on simulation seeds and real-cluster runs that rotate
through the catalogue's schedules, workloads and kraft.versions; shrink the first failure into a
scenario; print and save one report (harness/hunt/).

The report goes to ``STORE/hunt/<timestamp>/``: ``hunt.json``, ``hunt.txt`` (the table),
``hunt.xml`` (JUnit, also copied to ``--junit FILE``) and the scenario files. Exit code: 0
nothing found, 1 a failure found, 2 only unknown verdicts, 3 bad input, 4 runs that could not
be made because of the cluster, 5 another harness error (or no run at all), 130 interrupted
(after writing the report of what ran).
"""
from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

from clusters.registry import CHOICES as BACKENDS, needs_hosts
from harness.cli.args import add_lock_flag
from harness.cli.console import console_logging, remove_console_logging
from harness.config.run import RunConfig
from harness.config.values import (db_name, hosts_file, ipv4_subnet, kafka_version, number, positive_int, seed_value,
                                   unsafe_switches)
from harness.exits import EXIT_BAD_INPUT, EXIT_INTERRUPTED
from harness.hunt.loop import Hunt
from harness.hunt.options import HuntOptions
from harness.hunt.report import format_table
from harness.hunt.shrink_real import SHRINK_MAX_RUNS
from history import store
from targets.errors import TargetError
from targets.registry import DEFAULT_TARGET


def _workloads(values: list[list[str]] | None) -> tuple[str, ...]:
    return tuple(w for group in values or [] for w in group)


def _workload_list(text: str) -> list[str]:
    names = [w.strip() for w in text.split(",") if w.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"--workload takes workload names, got {text!r}")
    return names


def options_from(args: argparse.Namespace) -> HuntOptions:
    """The :class:`HuntOptions` of parsed ``hunt`` arguments (a random seed when none is given)."""
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2 ** 31)
    return HuntOptions(seed=seed, db=args.db, minutes=args.minutes, workloads=_workloads(args.workload),
                       unsafe=tuple(args.unsafe), kafka_version=args.kafka_version, stop_at_first=args.stop_at_first,
                       sim=not args.no_sim, swarm=not args.no_swarm, junit=args.junit, cluster=args.cluster,
                       hosts=args.hosts, subnet=args.subnet, lock=args.lock, store=args.store, shrink_runs=args.shrink_runs)


def cmd_hunt(args: argparse.Namespace) -> int:
    """``kraft-chaos hunt``: see the module docstring."""
    opts = options_from(args)
    if needs_hosts(opts.cluster) != bool(opts.hosts):
        print("kraft-chaos hunt: " + ("--cluster ssh needs --hosts FILE" if opts.hosts is None
                                      else "--hosts applies to --cluster ssh only"), file=sys.stderr)
        return EXIT_BAD_INPUT
    out = Path(opts.store) / "hunt" / store.timestamp()
    try:
        hunt = Hunt(opts, out, echo=lambda m: print(m, flush=True))
    except (ValueError, TargetError) as e:
        print(f"kraft-chaos hunt: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    console_logging(verbose=False)
    try:
        doc = hunt.run()
    except KeyboardInterrupt:          # a second Ctrl-C while writing the report
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        remove_console_logging()
    print(format_table(doc))
    print(f"hunt.json, hunt.txt and hunt.xml in {out}" + (f"; JUnit also in {opts.junit}" if opts.junit else ""))
    return doc["exit_code"]


def add_parser(sub) -> None:
    """The ``hunt`` subcommand's arguments."""
    h = sub.add_parser("hunt", help="spend a time budget finding bugs: simulation seeds, then real runs that "
                                    "rotate through the catalogue's schedules, workloads and kraft.versions; "
                                    "the first failure shrunk to a scenario; one table and a JUnit file")
    h.add_argument("--db", type=db_name, default=DEFAULT_TARGET,
                   help="system under test: kraft (our quorum: simulation seeds, then real runs; default) or "
                        "kafka (Apache Kafka: real runs)")
    h.add_argument("--minutes", type=number("--minutes"), default=20.0,
                   help="the time budget in minutes; no run is started that would not finish in it (default 20)")
    h.add_argument("--workload", type=_workload_list, action="append", default=None, metavar="W",
                   help="a workload the real runs rotate through (repeatable or comma-separated; default every "
                        "workload of the target: append, kv, queue on kraft; metadata, queue on kafka)")
    h.add_argument("--unsafe", type=unsafe_switches, default=[], help="comma-separated kraft.core.unsafe switches "
                                                                       "(--db kraft), in every run and seed")
    h.add_argument("--kafka-version", type=kafka_version, default=None,
                   help=f"--db kafka: the Apache Kafka release (default {RunConfig.kafka_version})")
    h.add_argument("--stop-at-first", action="store_true",
                   help="stop after the first failure (shrunk into a scenario); default: go on")
    h.add_argument("--no-sim", action="store_true", help="no simulation phase: real runs only")
    h.add_argument("--no-swarm", action="store_true",
                   help="the simulation phase runs four fixed configurations (the quorum alone and with "
                        "brokers, at kraft.version 0 and 1) instead of swarm testing (each seed draws its own)")
    h.add_argument("--shrink-runs", type=positive_int("--shrink-runs", 0), default=SHRINK_MAX_RUNS,
                   help=f"most replays spent shrinking the first failed real run, within the budget; 0: its "
                        f"faults written as they happened (default {SHRINK_MAX_RUNS})")
    h.add_argument("--seed", type=seed_value, default=None,
                   help="seed of the rotation and of every run (run n: seed + n); default a random one")
    h.add_argument("--junit", default=None, metavar="FILE", help="also write the JUnit XML report here")
    h.add_argument("--cluster", choices=BACKENDS, default=RunConfig.cluster,
                   help=f"where the nodes run: docker, netns, ssh or auto (default {RunConfig.cluster})")
    h.add_argument("--hosts", type=hosts_file, default=None, metavar="HOSTS.toml", help="--cluster ssh: the hosts file")
    h.add_argument("--subnet", type=ipv4_subnet, default=None, help="cluster subnet (default: run's default)")
    add_lock_flag(h, during="each real run and each simulation batch", extra="; waiting counts against the budget")
    h.add_argument("--store", default="store", help="store root for the runs and the report (default ./store)")
