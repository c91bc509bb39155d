"""``kraft-chaos run``: run one test (harness/run/runner.py) and print its seed, store, verdict
and the command that repeats it."""
from __future__ import annotations

import argparse
import random
import sys

from clusters.errors import ClusterError
from clusters.registry import CHOICES as BACKENDS, needs_hosts
from harness.cli.console import console_logging, remove_console_logging
from harness.cli.workload_flags import add_flags, config_kwargs
from harness.config.resolved import ResolvedConfig, resolve
from harness.config.run import RunConfig
from harness.config.schedules import DEFAULT_SCHEDULE as D
from harness.config.values import (db_name, hosts_file, ipv4_subnet, kafka_prop, kafka_version, nemeses, number,
                                   positive_int, seed_value, unsafe_switches, workload_name)
from harness.exits import EXIT_BAD_INPUT, EXIT_CLUSTER, EXIT_HARNESS, EXIT_INTERRUPTED, verdict_exit
from harness.reports.summary import format_results
from harness.run import runner
from nemesis.schedule import MODES
from targets.errors import TargetError
from targets.kraft_db import DBError
from targets.kafka.txn_clients import CLIENTS as TXN_CLIENTS
from targets.registry import DEFAULT_TARGET, target_spec


def add_parser(sub) -> None:
    """Add the ``run`` subcommand to ``sub`` (the subparsers of ``kraft-chaos``)."""
    r = sub.add_parser("run", help="run a test: cluster, workload, nemesis, check")
    r.add_argument("--nodes", type=positive_int("--nodes"), default=D.nodes,
                   help=f"cluster size (default {D.nodes})")
    r.add_argument("--time-limit", type=number("--time-limit"), default=D.time_limit,
                   help=f"seconds of workload + nemesis (default {D.time_limit:g})")
    r.add_argument("--nemesis", type=nemeses, default=list(D.nemesis),
                   help="comma-separated faults: partition, kill, pause, crash (kill -9 a majority "
                        "or all, then restart), packet (netem delay/loss/duplication/reordering), "
                        "flap (partitions cut and healed every few hundred ms), rolling (restart "
                        "nodes one at a time), lag (a follower falls behind, then the up-to-date "
                        "nodes die so it campaigns), elect (kill a node just after it votes or is "
                        f"elected), batch (kill the leader with a batch in flight), or none (default {','.join(D.nemesis)}); a family may name its "
                        "kinds, e.g. partition:isolate-leader+bridge")
    r.add_argument("--nemesis-mode", choices=list(MODES), default=D.mode,
                   help="serial: one fault at a time, every --nemesis-interval s for "
                        "--nemesis-duration s (the old schedule: serial 10/10); overlap: every "
                        f"fault on its own timeline at once, with those as mean calm and mean "
                        f"duration (the harsh schedule); windows: --nemesis-interval s of calm, "
                        f"then a window of --nemesis-duration s in which every fault runs on its "
                        f"own timeline, again and again (Jepsen's alternation; default {D.mode})")
    r.add_argument("--workload", type=workload_name, default=None,
                   help="append (unique appends, log reads; the log-safety checkers), kv "
                        "(read/write/cas on 5 keys; linearizability by key), metadata (--db kafka: "
                        "topic creations), queue (sends and polls of one topic) or txn (--db kafka: "
                        "Jepsen's Kafka workload in transactions) (default: append on kraft, metadata on kafka)")
    r.add_argument("--concurrency", type=positive_int("--concurrency"), default=D.concurrency,
                   help=f"client workers (default {D.concurrency})")
    r.add_argument("--rate", type=number("--rate"), default=D.rate, help=f"total ops/s (default {D.rate:g})")
    r.add_argument("--seed", type=seed_value, default=None, help="random seed (default: a random one)")
    r.add_argument("--cluster", choices=BACKENDS, default=RunConfig.cluster,
                   help="where the nodes run: docker (a container each), netns (Linux namespaces on "
                        "this host, as root; --db kraft only), ssh (one host each of --hosts, as root; "
                        "--db kraft only) or auto (docker when an engine answers, "
                        f"else netns) (default {RunConfig.cluster})")
    r.add_argument("--hosts", type=hosts_file, default=None, metavar="HOSTS.toml",
                   help="--cluster ssh: the hosts file (host, port, user, key_file, sudo, known_hosts, "
                        "host_key_policy, run_dir per host; see clusters/ssh_hosts.py)")
    r.add_argument("--db", type=db_name, default=DEFAULT_TARGET,
                   help="system under test: kraft (our quorum, default) or kafka (Apache Kafka)")
    kafka = r.add_mutually_exclusive_group()
    kafka.add_argument("--kafka-version", type=kafka_version, default=RunConfig.kafka_version,
                       help=f"Apache Kafka release for --db kafka, 3.3.x to 4.x from Maven Central "
                            f"(default {RunConfig.kafka_version}; see README, Testing Apache Kafka)")
    kafka.add_argument("--kafka-dist", default=None, metavar="PATH",
                       help="--db kafka: run this Kafka binary distribution (kafka_2.13-X.tgz, or its "
                            "unpacked folder with libs/) instead of a Maven release; its version is read "
                            "from it")
    r.add_argument("--kafka-topology", choices=["dedicated", "combined"], default="dedicated",
                   help="--db kafka: dedicated (--nodes controllers plus brokers, default) or "
                        "combined (--nodes combined controller+broker nodes)")
    r.add_argument("--kafka-prop", type=kafka_prop, action="append", default=None, metavar="KEY=VALUE",
                   help="--db kafka: an extra server.properties entry of every Kafka node (repeatable), "
                        "e.g. metadata.log.max.snapshot.interval.ms=2000")
    r.add_argument("--client", choices=sorted(TXN_CLIENTS), default=None,
                   help="--db kafka, --workload txn: the transactional client, librdkafka "
                        "(confluent-kafka, default) or java (the release's kafka-clients, built at set-up)")
    r.add_argument("--transaction-version", type=int, default=None, metavar="N",
                   help="--db kafka, --workload txn: the cluster's transaction.version feature at format "
                        "(0, 1 or 2: KIP-890 part 2; from Kafka 4.0; default the release's)")
    r.add_argument("--kraft-version", type=int, choices=[0, 1], default=RunConfig.kraft_version,
                   help="0 static voters (controller.quorum.voters), 1 dynamic quorum (KIP-853: "
                        "VotersRecord, directory ids, --nemesis membership); default 1 on --db kafka, "
                        "as Kafka 4's docs recommend, 0 on kraft")
    r.add_argument("--nemesis-targets", choices=["quorum", "clients", "all"], default=None,
                   help="nodes the faults touch: quorum (voters/controllers), clients (the "
                        "brokers) or all (default: all for the queue workload, whose records "
                        "the brokers hold; quorum for the others)")
    r.add_argument("--keep-cluster", action="store_true", help="leave the containers running")
    r.add_argument("--store", default="store", help="store root (default ./store)")
    r.add_argument("--base-image", default=None, help="base image for nodes (default: offline Debian)")
    r.add_argument("--subnet", type=ipv4_subnet, default="10.77.0.0/24", help="cluster subnet (default 10.77.0.0/24)")
    r.add_argument("--nemesis-interval", type=number("--nemesis-interval", strict=False),
                   default=D.interval, help=f"seconds of calm before each fault (windows mode: between fault "
                                             f"windows) (default {D.interval:g})")
    r.add_argument("--nemesis-duration", type=number("--nemesis-duration"), default=D.duration,
                   help=f"seconds each fault lasts (windows mode: each fault window) "
                        f"(default {D.duration:g})")
    r.add_argument("--unsafe", type=unsafe_switches, default=[], help="comma-separated kraft.core.unsafe switches")
    r.add_argument("--fetch-max-records", type=positive_int("--fetch-max-records"), default=None,
                   help="kraft target: records per Fetch response (default 2000); small values make "
                        "a laggard catch up over several Fetches")
    r.add_argument("--segment-bytes", type=positive_int("--segment-bytes"), default=None,
                   help="kraft target: log.segment.bytes (default 1 MiB); small values roll segments "
                        "every few seconds")
    r.add_argument("--no-progress", action="store_true", help="no live progress line")
    add_flags(r)                       # --brokers, --acks, --min-insync-replicas, ...


def cmd_run(args: argparse.Namespace) -> int:
    """``kraft-chaos run``: run one test and print its verdict."""
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2 ** 31)
    if args.workload is None:
        args.workload = target_spec(args.db).default_workload
    if needs_hosts(args.cluster) != bool(args.hosts):
        print("kraft-chaos run: " + ("--cluster ssh needs --hosts FILE" if args.hosts is None
                                     else "--hosts applies to --cluster ssh only"), file=sys.stderr)
        return EXIT_BAD_INPUT
    config = RunConfig(
        seed=seed, nodes=args.nodes, time_limit=args.time_limit, nemesis=args.nemesis,
        workload=args.workload, concurrency=args.concurrency, rate=args.rate, cluster=args.cluster,
        keep_cluster=args.keep_cluster, store=args.store, base_image=args.base_image,
        subnet=args.subnet, nemesis_interval=args.nemesis_interval,
        nemesis_duration=args.nemesis_duration, nemesis_mode=args.nemesis_mode, unsafe=args.unsafe,
        fetch_max_records=args.fetch_max_records, segment_bytes=args.segment_bytes, db=args.db, kafka_version=args.kafka_version,
        kafka_dist=args.kafka_dist, kafka_topology=args.kafka_topology, kraft_version=args.kraft_version,
        kafka_props=dict(args.kafka_prop) if args.kafka_prop else None,
        nemesis_targets=args.nemesis_targets, hosts=args.hosts, client=args.client,
        transaction_version=args.transaction_version, **config_kwargs(args))
    try:
        resolved = resolve(config)
    except (ValueError, TargetError) as e:
        print(f"kraft-chaos: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return run_and_report(resolved, args.no_progress)


def run_and_report(config: ResolvedConfig, no_progress: bool = False) -> int:
    """Run ``config`` (resolved: harness/config/resolved.py), print its seed, store, verdict and
    the command that repeats it; returns the exit code."""
    print(f"seed: {config.seed}")
    print(f"repeat with: {config.flat.repeat_command()}")
    console_logging(verbose=True)
    run_dir = None
    try:
        config, run_dir = runner.prepare_run(config)
        print(f"store: {run_dir}", flush=True)
        results, run_dir = runner.run_test(config, run_dir,
                                           progress=False if no_progress else None)
    except runner.Interrupted:
        print(f"interrupted; cluster torn down. store: {run_dir}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (ClusterError, runner.RunSetupError, DBError) as e:
        print(f"kraft-chaos: cluster error: {e}", file=sys.stderr)
        return EXIT_CLUSTER
    except TargetError as e:     # a target that cannot be fetched or started (e.g. a Kafka version)
        print(f"kraft-chaos: {config.target.spec.name} error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ValueError as e:
        print(f"kraft-chaos: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as e:
        where = f" (details in {run_dir}/harness.log)" if run_dir else ""
        print(f"kraft-chaos: harness error: {type(e).__name__}: {e}{where}", file=sys.stderr)
        return EXIT_HARNESS
    finally:
        remove_console_logging()
    print(format_results(results))
    print(f"store: {run_dir}")
    print(f"repeat with: {config.flat.repeat_command()}")
    return verdict_exit(results.get("valid"))
