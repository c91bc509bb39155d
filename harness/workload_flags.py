"""``kraft-chaos run``'s broker and workload-option flags: ``--brokers`` and the flags of
:data:`harness.run_config.WORKLOAD_OPTIONS` (``--acks``, ``--min-insync-replicas``,
``--unclean-leader-election``, ``--partitions``, ``--replication-factor``,
``--idempotence``), and how a run's config gets them.

Every flag defaults to None (not given): the target's or the workload's own default then
applies. The runner hands the given ones to the workload's options class by field name
(:func:`workload_options`); a flag the workload has no option for is a clear
``ValueError`` naming the flag, raised before any cluster is made.
"""
from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from .run_config import WORKLOAD_OPTIONS


def _int(flag: str, minimum: int):
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} must be an integer, got {text!r}") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"{flag} must be >= {minimum}, got {v}")
        return v
    return parse


def parse_acks(text: str) -> int:
    """``--acks``: 0, 1, -1 or ``all`` (-1)."""
    t = text.strip().lower()
    if t in ("all", "-1"):
        return -1
    if t in ("0", "1"):
        return int(t)
    raise argparse.ArgumentTypeError(f"--acks must be 0, 1, -1 or all, got {text!r}")


def parse_bool(flag: str):
    def parse(text: str) -> bool:
        t = text.strip().lower()
        if t in ("true", "yes", "1", "on"):
            return True
        if t in ("false", "no", "0", "off"):
            return False
        raise argparse.ArgumentTypeError(f"{flag} must be true or false, got {text!r}")
    return parse


def add_flags(r: argparse.ArgumentParser) -> None:
    """Add ``--brokers`` and the workload-option flags to the ``run`` parser ``r``."""
    r.add_argument("--brokers", type=_int("--brokers", 0), default=None,
                   help="broker nodes: on --db kraft, B nodes with process.roles=broker after the "
                        "--nodes controllers (default 0, and 3 for workloads that need brokers, "
                        "e.g. queue); on --db kafka, the dedicated topology's brokers (default 3)")
    g = r.add_argument_group("workload options (default: the workload's own)")
    g.add_argument("--acks", type=parse_acks, default=None,
                   help="queue: the producers' acks, 0, 1 or all (-1) (default all)")
    g.add_argument("--min-insync-replicas", type=_int("--min-insync-replicas", 1), default=None,
                   help="queue: the topic's min.insync.replicas (default 2)")
    g.add_argument("--unclean-leader-election", type=parse_bool("--unclean-leader-election"), nargs="?",
                   const=True, default=None,
                   help="queue: the topic's unclean.leader.election.enable (alone: true; default false)")
    g.add_argument("--partitions", type=_int("--partitions", 1), default=None,
                   help="queue: the topic's partitions (default 3)")
    g.add_argument("--replication-factor", type=_int("--replication-factor", 1), default=None,
                   help="queue: the topic's replication factor (default 3)")
    g.add_argument("--idempotence", type=parse_bool("--idempotence"), nargs="?", const=True, default=None,
                   help="queue on --db kafka: the producer's enable.idempotence (alone: true; default "
                        "false, so retries show)")


def config_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The RunConfig keyword arguments of these flags, from parsed ``args``."""
    return {"brokers": args.brokers, **{k: getattr(args, k) for k in WORKLOAD_OPTIONS}}


def workload_options(config, options_class: type, workload: str) -> Any:
    """``options_class(concurrency=..., rate=..., **the given workload options)`` of
    ``config`` (a ``harness.run_config.RunConfig``). Raises ``ValueError`` naming the flag a
    workload has no option for, or the options class's own complaint about a value."""
    given = config.workload_options()
    fields = {f.name for f in dataclasses.fields(options_class)} if dataclasses.is_dataclass(options_class) else set()
    foreign = [WORKLOAD_OPTIONS[k] for k in given if k not in fields]
    if foreign:
        raise ValueError(f"{', '.join(foreign)} do{'es' if len(foreign) == 1 else ''} not apply to the "
                         f"{workload} workload")
    try:
        return options_class(concurrency=config.concurrency, rate=config.rate, **given)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{workload} workload options: {e}") from None


def resolve_brokers(config, workload_spec, target_spec) -> None:
    """Give ``config.brokers`` the workload's default (``workload_spec.brokers``) when it was
    not given and the target's brokers are optional (``target_spec.optional_brokers``).
    Raises ``ValueError`` naming ``--brokers`` when such a workload was given none."""
    wanted = getattr(workload_spec, "brokers", 0)
    if not wanted or not getattr(target_spec, "optional_brokers", False):
        return
    if config.brokers is None:
        config.brokers = wanted
    elif config.brokers < 1:
        raise ValueError(f"the {config.workload} workload needs brokers: give --brokers B (B >= 1) on "
                         f"--db {config.db}, or leave it out for {wanted}")
