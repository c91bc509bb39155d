"""The ``kraft-chaos`` command line: ``run``, ``check``, ``teardown``, and ``analyze``,
``export``, ``synth`` (harness/analyze_cmd.py), ``matrix`` (harness/matrix.py), ``serve``
(harness/serve.py).

Exit codes (DEVELOPERS.md): 0 valid, 1 invalid, 2 unknown; 3 bad input
(bad arguments, malformed history), 4 the cluster or engine could not be set
up, 5 any other harness error, 130 interrupted.
"""
from __future__ import annotations

import argparse
import json
import logging
import random
import sys
from typing import Any, Sequence

EXIT_VALID, EXIT_INVALID, EXIT_UNKNOWN = 0, 1, 2
EXIT_BAD_INPUT, EXIT_CLUSTER, EXIT_HARNESS, EXIT_INTERRUPTED = 3, 4, 5, 130

log = logging.getLogger("kraft_chaos.cli")


class UsageError(Exception):
    """Bad command-line input (exit 3); the message names the bad value."""


class _Parser(argparse.ArgumentParser):
    """argparse that raises :class:`UsageError` instead of exiting 2."""

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(f"{self.prog}: error: {message}")


# -- argument types ---------------------------------------------------------

def _positive_int(name: str, minimum: int = 1):
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {text!r}") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"{name} must be >= {minimum}, got {v}")
        return v
    return parse


def _number(name: str, minimum: float = 0.0, strict: bool = True):
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, got {text!r}") from None
        if v != v or v in (float("inf"), float("-inf")) or (v <= minimum if strict else v < minimum):
            raise argparse.ArgumentTypeError(
                f"{name} must be {'>' if strict else '>='} {minimum:g}, got {text!r}")
        return v
    return parse


def _seed(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"seed must be an integer, got {text!r}") from None
    if not 0 <= v < 2 ** 63:
        raise argparse.ArgumentTypeError(f"seed must be in 0..2^63-1, got {v}")
    return v


def _nemeses(text: str) -> list[str]:
    from nemesis.schedule import parse_fault_names
    try:
        return parse_fault_names(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{e} (or 'none')") from None


def _subnet(text: str) -> str:
    import ipaddress
    try:
        net = ipaddress.ip_network(text, strict=True)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"bad --subnet {text!r}: {e}") from None
    if net.version != 4:
        raise argparse.ArgumentTypeError(f"--subnet must be IPv4, got {text!r}")
    return str(net)


def _workload(text: str) -> str:
    from workloads import WORKLOADS
    if text not in WORKLOADS:
        raise argparse.ArgumentTypeError(f"unknown workload {text!r}: choose from {', '.join(WORKLOADS)}")
    return text


def _unsafe(text: str) -> list[str]:
    from kraft import unsafe
    try:
        names = unsafe.parse(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return [n for n in dict.fromkeys(s.strip() for s in text.split(",")) if n in names]


def _db(text: str) -> str:
    from targets.registry import target_spec
    try:
        target_spec(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def _hosts_file(text: str) -> str:
    """``--hosts``: a hosts file that parses (clusters/ssh_hosts.py), as an absolute path."""
    from pathlib import Path
    from clusters.ssh_hosts import HostsFileError, load_hosts
    try:
        load_hosts(text)
    except HostsFileError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return str(Path(text).absolute())


def _kafka_version(text: str) -> str:
    """``--kafka-version``: a release of a line kraft-chaos runs (targets/kafka/releases.py)."""
    from targets.errors import TargetError
    from targets.kafka.releases import release
    try:
        release(text)
    except TargetError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def build_parser() -> argparse.ArgumentParser:
    """The ``kraft-chaos`` argument parser (errors raise :class:`UsageError`)."""
    p = _Parser(prog="kraft-chaos", description="Jepsen-style fault injection for a KRaft quorum.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    from harness.bug_catalogue import DEFAULT_SCHEDULE as D
    from harness.run_config import RunConfig
    r = sub.add_parser("run", help="run a test: cluster, workload, nemesis, check")
    r.add_argument("--nodes", type=_positive_int("--nodes"), default=D.nodes,
                   help=f"cluster size (default {D.nodes})")
    r.add_argument("--time-limit", type=_number("--time-limit"), default=D.time_limit,
                   help=f"seconds of workload + nemesis (default {D.time_limit:g})")
    r.add_argument("--nemesis", type=_nemeses, default=list(D.nemesis),
                   help="comma-separated faults: partition, kill, pause, crash (kill -9 a majority "
                        "or all, then restart), packet (netem delay/loss/duplication/reordering), "
                        "flap (partitions cut and healed every few hundred ms), rolling (restart "
                        "nodes one at a time), lag (a follower falls behind, then the up-to-date "
                        "nodes die so it campaigns), elect (kill a node just after it votes or is "
                        f"elected), batch (kill the leader with a batch in flight), or none (default {','.join(D.nemesis)}); a family may name its "
                        "kinds, e.g. partition:isolate-leader+bridge")
    r.add_argument("--nemesis-mode", choices=["serial", "overlap"], default=D.mode,
                   help="serial: one fault at a time, every --nemesis-interval s for "
                        "--nemesis-duration s (the old schedule: serial 10/10); overlap: every "
                        f"fault on its own timeline at once, with those as mean calm and mean "
                        f"duration (default {D.mode})")
    r.add_argument("--workload", type=_workload, default=None,
                   help="append (unique appends, log reads; the log-safety checkers), kv "
                        "(read/write/cas on 5 keys; linearizability by key) or metadata (--db kafka: "
                        "topic creations) (default: append on kraft, metadata on kafka)")
    r.add_argument("--concurrency", type=_positive_int("--concurrency"), default=D.concurrency,
                   help=f"client workers (default {D.concurrency})")
    r.add_argument("--rate", type=_number("--rate"), default=D.rate, help=f"total ops/s (default {D.rate:g})")
    r.add_argument("--seed", type=_seed, default=None, help="random seed (default: a random one)")
    from clusters.registry import CHOICES as BACKENDS
    r.add_argument("--cluster", choices=BACKENDS, default=RunConfig.cluster,
                   help="where the nodes run: docker (a container each), netns (Linux namespaces on "
                        "this host, as root; --db kraft only), ssh (one host each of --hosts, as root; "
                        "--db kraft only) or auto (docker when an engine answers, "
                        f"else netns) (default {RunConfig.cluster})")
    r.add_argument("--hosts", type=_hosts_file, default=None, metavar="HOSTS.toml",
                   help="--cluster ssh: the hosts file (host, port, user, key_file, sudo, known_hosts, "
                        "host_key_policy, run_dir per host; see clusters/ssh_hosts.py)")
    r.add_argument("--db", type=_db, default="kraft",
                   help="system under test: kraft (our quorum, default) or kafka (Apache Kafka)")
    kafka = r.add_mutually_exclusive_group()
    kafka.add_argument("--kafka-version", type=_kafka_version, default=RunConfig.kafka_version,
                       help=f"Apache Kafka release for --db kafka, 3.3.x to 4.x from Maven Central "
                            f"(default {RunConfig.kafka_version}; see README, Testing Apache Kafka)")
    kafka.add_argument("--kafka-dist", default=None, metavar="PATH",
                       help="--db kafka: run this Kafka binary distribution (kafka_2.13-X.tgz, or its "
                            "unpacked folder with libs/) instead of a Maven release; its version is read "
                            "from it")
    r.add_argument("--kafka-topology", choices=["dedicated", "combined"], default="dedicated",
                   help="--db kafka: dedicated (--nodes controllers plus brokers, default) or "
                        "combined (--nodes combined controller+broker nodes)")
    r.add_argument("--kraft-version", type=int, choices=[0, 1], default=RunConfig.kraft_version,
                   help="0 static voters (controller.quorum.voters), 1 dynamic quorum (KIP-853: "
                        "VotersRecord, directory ids, --nemesis membership); default 1 on --db kafka, "
                        "as Kafka 4's docs recommend, 0 on kraft")
    r.add_argument("--nemesis-targets", choices=["quorum", "clients", "all"], default="quorum",
                   help="nodes the faults touch: quorum (voters/controllers, default), clients "
                        "(Kafka's brokers) or all")
    r.add_argument("--keep-cluster", action="store_true", help="leave the containers running")
    r.add_argument("--store", default="store", help="store root (default ./store)")
    r.add_argument("--base-image", default=None, help="base image for nodes (default: offline Debian)")
    r.add_argument("--subnet", type=_subnet, default="10.77.0.0/24", help="cluster subnet (default 10.77.0.0/24)")
    r.add_argument("--nemesis-interval", type=_number("--nemesis-interval", strict=False),
                   default=D.interval, help=f"seconds of calm before each fault (default {D.interval:g})")
    r.add_argument("--nemesis-duration", type=_number("--nemesis-duration"), default=D.duration,
                   help=f"seconds each fault lasts (default {D.duration:g})")
    r.add_argument("--unsafe", type=_unsafe, default=[], help="comma-separated kraft.unsafe switches")
    r.add_argument("--fetch-max-records", type=_positive_int("--fetch-max-records"), default=None,
                   help="kraft target: records per Fetch response (default 2000); small values make "
                        "a laggard catch up over several Fetches")
    r.add_argument("--segment-bytes", type=_positive_int("--segment-bytes"), default=None,
                   help="kraft target: log.segment.bytes (default 1 MiB); small values roll segments "
                        "every few seconds")
    r.add_argument("--no-progress", action="store_true", help="no live progress line")
    from harness.workload_flags import add_flags
    add_flags(r)                       # --brokers, --acks, --min-insync-replicas, ...

    c = sub.add_parser("check", help="re-run the checkers on a stored run, or check a history file "
                                      "for linearizability (--model, --format)")
    c.add_argument("store_dir", metavar="RUN_DIR_OR_FILE", nargs="+",
                   help="a run directory (or a store root: its latest run), or a history file; several "
                        "are checked one after another in this process (exit code: the worst verdict)")
    from harness.check_file import add_file_options
    add_file_options(c)

    t = sub.add_parser("teardown", help="remove every container and network labelled kraft-chaos, "
                                        "every namespace, link and iptables rule of the netns backend, "
                                        "and (--hosts) every node, folder and rule on the ssh hosts")
    t.add_argument("--cluster", choices=["all", "ssh"], default="all",
                   help="all: docker, netns and (with --hosts) the ssh hosts (default); ssh: only the hosts")
    t.add_argument("--hosts", type=_hosts_file, default=None, metavar="HOSTS.toml",
                   help="the ssh hosts to sweep (every run's nodes, folders and iptables chains)")
    from harness.analyze_cmd import add_parsers
    add_parsers(sub)
    from harness.bugs import add_parser as add_bugs_parser
    add_bugs_parser(sub)
    from harness.scenario_cmd import add_parsers as add_scenario_parsers
    add_scenario_parsers(sub)
    from harness.matrix import add_parser as add_matrix_parser
    add_matrix_parser(sub)
    from harness.serve import add_parser as add_serve_parser
    add_serve_parser(sub)
    return p


# -- output -----------------------------------------------------------------

def verdict_exit(valid: Any) -> int:
    """Exit code for a verdict: True -> 0, False -> 1, anything else ("unknown") -> 2."""
    if valid is True:
        return EXIT_VALID
    if valid is False:
        return EXIT_INVALID
    return EXIT_UNKNOWN


def _fmt(x: Any, unit: str = "") -> str:
    if x is None:
        return "n/a"
    if isinstance(x, float):
        return f"{x:.1f}{unit}"
    return f"{x}{unit}"


def format_results(results: dict, max_details: int = 3) -> str:
    """The human summary of ``results`` (results.json): verdict, anomalies, stats."""
    valid = results.get("valid")
    word = {True: "VALID", False: "INVALID"}.get(valid, "UNKNOWN")
    lines = [f"verdict: {word} (valid={json.dumps(valid)})"]
    counts = results.get("anomalies") or {}
    checkers = results.get("checkers") or {}
    found = {k: n for k, n in counts.items() if n}
    if found:
        lines.append("anomalies:")
        for name, n in found.items():
            lines.append(f"  {name}: {n}")
            for a in (checkers.get(name) or {}).get("anomalies", [])[:max_details]:
                if name == "linearizability":
                    from harness.check_file import anomaly_sentence
                    lines.append(f"    - {anomaly_sentence(a)}")
                else:
                    lines.append(f"    - {json.dumps(a, default=str)[:300]}")
            if name == "linearizability" and (checkers.get(name) or {}).get("html"):
                lines.append(f"    explained in {checkers[name]['html']}")
    else:
        lines.append("anomalies: none")
    unknown = [k for k, r in checkers.items() if isinstance(r, dict) and r.get("valid") == "unknown"]
    if unknown:
        lines.append(f"undecided checkers: {', '.join(unknown)}")
        for k in unknown:
            if checkers[k].get("error"):
                lines.append(f"  {k}: {checkers[k]['error']}")
    stats = results.get("stats") or {}
    op_counts = stats.get("counts") or {}
    if stats and "append" not in op_counts and any(f in op_counts for f in ("write", "cas")):
        lines.append(_kv_stats_line(stats))
    elif stats and "append" not in op_counts and "send" in op_counts:      # the queue workload
        sd = op_counts["send"]
        lat = (stats.get("latency_ms") or {}).get("send", {})
        avail = stats.get("availability")
        lines.append(
            f"stats: sends ok={sd.get('ok', 0)} fail={sd.get('fail', 0)} info={sd.get('info', 0)}; "
            f"availability {_fmt(avail * 100 if avail is not None else None, '%')}; "
            f"send latency p50 {_fmt(lat.get('p50'), ' ms')} p99 {_fmt(lat.get('p99'), ' ms')}")
    elif stats:
        ap = (stats.get("counts") or {}).get("append", {})
        lat = (stats.get("latency_ms") or {}).get("append", {})
        avail = stats.get("availability")
        app_avail = stats.get("append_availability")
        lines.append(
            f"stats: appends ok={ap.get('ok', 0)} fail={ap.get('fail', 0)} info={ap.get('info', 0)}; "
            f"availability {_fmt(avail * 100 if avail is not None else None, '%')} "
            f"(appends {_fmt(app_avail * 100 if app_avail is not None else None, '%')}); "
            f"append latency p50 {_fmt(lat.get('p50'), ' ms')} p99 {_fmt(lat.get('p99'), ' ms')}")
    epochs = stats.get("epochs") or {}
    if epochs.get("max") is not None:
        lines.append(f"elections: {epochs['leaders']} leader(s) seen, highest epoch {epochs['max']}")
    return "\n".join(lines)


def _kv_stats_line(stats: dict) -> str:
    """The stats line of a kv run: counts and latency per f, availability."""
    counts, lat = stats.get("counts") or {}, stats.get("latency_ms") or {}
    parts = []
    for f in ("read", "write", "cas"):
        c = counts.get(f, {})
        extra = f" (cas-mismatch {stats['cas_mismatches']})" if f == "cas" and "cas_mismatches" in stats else ""
        parts.append(f"{f} ok={c.get('ok', 0)} fail={c.get('fail', 0)}{extra} info={c.get('info', 0)}")
    avail = stats.get("availability")
    latency = ", ".join(f"{f} {_fmt((lat.get(f) or {}).get('p50'))}/{_fmt((lat.get(f) or {}).get('p99'))}"
                        for f in ("read", "write", "cas"))
    return (f"stats: {'; '.join(parts)}; availability "
            f"{_fmt(avail * 100 if avail is not None else None, '%')}; latency p50/p99 ms: {latency}")


def _remove_console_logging() -> None:
    root = logging.getLogger()
    for h in [h for h in root.handlers if getattr(h, "_kraft_chaos_console", False)]:
        root.removeHandler(h)


def _console_logging(verbose: bool) -> None:
    root = logging.getLogger()
    if any(getattr(h, "_kraft_chaos_console", False) for h in root.handlers):
        return
    if sys.stderr.isatty():
        from rich.logging import RichHandler
        h: logging.Handler = RichHandler(show_path=False, markup=False)
        h.setFormatter(logging.Formatter("%(message)s"))
    else:
        h = logging.StreamHandler(sys.stderr)
        h.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    h.setLevel(logging.INFO if verbose else logging.WARNING)
    h._kraft_chaos_console = True  # type: ignore[attr-defined]
    root.addHandler(h)
    root.setLevel(logging.INFO)


# -- commands ---------------------------------------------------------------

def cmd_run(args: argparse.Namespace) -> int:
    """``kraft-chaos run``: run one test and print its verdict."""
    from harness import runner
    from harness.workload_flags import config_kwargs, resolve_brokers

    from targets.registry import target_spec
    from workloads.registry import workload_spec
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2 ** 31)
    if args.workload is None:
        args.workload = target_spec(args.db).default_workload
    if (args.cluster == "ssh") != bool(args.hosts):
        print("kraft-chaos run: " + ("--cluster ssh needs --hosts FILE" if args.hosts is None
                                     else "--hosts applies to --cluster ssh only"), file=sys.stderr)
        return EXIT_BAD_INPUT
    config = runner.RunConfig(
        seed=seed, nodes=args.nodes, time_limit=args.time_limit, nemesis=args.nemesis,
        workload=args.workload, concurrency=args.concurrency, rate=args.rate, cluster=args.cluster,
        keep_cluster=args.keep_cluster, store=args.store, base_image=args.base_image,
        subnet=args.subnet, nemesis_interval=args.nemesis_interval,
        nemesis_duration=args.nemesis_duration, nemesis_mode=args.nemesis_mode, unsafe=args.unsafe,
        fetch_max_records=args.fetch_max_records, segment_bytes=args.segment_bytes, db=args.db, kafka_version=args.kafka_version,
        kafka_dist=args.kafka_dist, kafka_topology=args.kafka_topology, kraft_version=args.kraft_version,
        nemesis_targets=args.nemesis_targets, hosts=args.hosts, **config_kwargs(args))
    from targets.errors import TargetError
    try:
        resolve_brokers(config, workload_spec(config.workload), target_spec(args.db))
        target_spec(args.db).prepare(config)
    except (ValueError, TargetError) as e:
        print(f"kraft-chaos: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return run_and_report(config, args.no_progress)


def run_and_report(config, no_progress: bool = False) -> int:
    """Run ``config`` (a ``harness.runner.RunConfig``), print its seed, store, verdict and
    the command that repeats it; returns the exit code."""
    from clusters.errors import ClusterError
    from harness import runner
    from targets.errors import TargetError
    from targets.kraft_db import DBError

    print(f"seed: {config.seed}")
    print(f"repeat with: {config.repeat_command()}")
    _console_logging(verbose=True)
    run_dir = None
    try:
        run_dir = runner.prepare_run(config)
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
        print(f"kraft-chaos: {config.db} error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ValueError as e:
        print(f"kraft-chaos: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as e:
        where = f" (details in {run_dir}/harness.log)" if run_dir else ""
        print(f"kraft-chaos: harness error: {type(e).__name__}: {e}{where}", file=sys.stderr)
        return EXIT_HARNESS
    finally:
        _remove_console_logging()
    print(format_results(results))
    print(f"store: {run_dir}")
    print(f"repeat with: {config.repeat_command()}")
    return verdict_exit(results.get("valid"))


def cmd_check(args: argparse.Namespace) -> int:
    """``kraft-chaos check INPUT...``: re-check stored runs (rewriting results.json, or into
    ``--out``) and check history files for linearizability (results under the store, or
    ``--out``), one after another in this process (:mod:`harness.check_many`). Exit code:
    the worst verdict of the inputs."""
    from harness.check_many import cmd_check as check_many
    return check_many(args)


def cmd_teardown(args: argparse.Namespace) -> int:
    """``kraft-chaos teardown``: remove what every backend left (clusters.registry.
    teardown_everything), then the lazyfs disks of power-loss runs that did not clean up.
    Exit 4 when no backend could be swept, or an ssh host could not be. ``--cluster ssh
    --hosts F``: only the hosts of F."""
    from clusters.errors import ClusterError
    from clusters.registry import teardown_everything, teardown_ssh

    ssh_errors: list[str] = []
    if args.cluster == "ssh" or args.hosts:
        if not args.hosts:
            print("kraft-chaos teardown: --cluster ssh needs --hosts FILE", file=sys.stderr)
            return EXIT_BAD_INPUT
        removed, ssh_errors = teardown_ssh(args.hosts)
        for name in removed:
            print(f"removed {name.replace(': removed ', ': ', 1)}")
        for err in ssh_errors:
            print(f"kraft-chaos teardown: {err}", file=sys.stderr)
        if args.cluster == "ssh":
            print(f"removed {sum(': removed ' in n for n in removed)} object(s) from the ssh hosts")
            return EXIT_CLUSTER if ssh_errors else 0
    try:
        removed, notes = teardown_everything()
    except ClusterError as e:
        print(f"kraft-chaos teardown: {e}", file=sys.stderr)
        return EXIT_CLUSTER
    for name in removed:
        print(f"removed {name}")
    for note in notes:
        print(note, file=sys.stderr)
    from .disks import sweep_disks
    for line in sweep_disks():       # after the nodes, which hold copies of the mounts
        print(line)
    print(f"removed {len(removed)} object(s)")
    return EXIT_CLUSTER if len(notes) == 2 or ssh_errors else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``kraft-chaos`` / ``python -m harness``; returns the exit code."""
    try:
        args = build_parser().parse_args(argv)
    except UsageError as e:
        print(str(e), file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        from harness import analyze_cmd, bugs, matrix, scenario_cmd, serve
        return {"run": cmd_run, "check": cmd_check, "teardown": cmd_teardown,
                "analyze": analyze_cmd.cmd_analyze, "export": analyze_cmd.cmd_export,
                "synth": analyze_cmd.cmd_synth, "bugs": bugs.cmd_bugs,
                "scenario": scenario_cmd.cmd_scenario, "shrink": scenario_cmd.cmd_shrink,
                "matrix": matrix.cmd_matrix, "serve": serve.cmd_serve}[args.command](args)
    except BrokenPipeError:      # e.g. `kraft-chaos check DIR | head`
        sys.stdout = None
        return 0
