"""``kraft-chaos run``'s broker and workload-option flags: ``--brokers`` and the flags of
:data:`harness.config.options.WORKLOAD_OPTIONS` (``--acks``, ``--min-insync-replicas``,
``--unclean-leader-election``, ``--partitions``, ``--replication-factor``,
``--idempotence``, ``--txn-delay``, ``--transactions``, ``--compression``, ``--value-bytes``), and
the ``RunConfig`` keywords they give.

Every flag defaults to None (not given): the target's or the workload's own default then
applies (harness/config/options.py hands the given ones to the workload).
"""
from __future__ import annotations

import argparse
from typing import Any

from harness.config.options import WORKLOAD_OPTIONS
from harness.config.values import positive_int
from targets.txn_client import COMPRESSION_TYPES, check_compression, check_value_bytes
from targets.txn_values import MAX_VALUE_BYTES


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


def parse_compression(text: str) -> str:
    """``--compression``: one of ``targets.txn_client.COMPRESSION_TYPES``."""
    try:
        return check_compression(text.strip().lower())
    except ValueError:
        raise argparse.ArgumentTypeError(f"--compression must be one of {', '.join(COMPRESSION_TYPES)}, "
                                         f"got {text!r}") from None


def parse_value_bytes(text: str) -> int:
    """``--value-bytes``: an int from 0 to ``targets.txn_values.MAX_VALUE_BYTES``."""
    try:
        return check_value_bytes(int(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--value-bytes must be an integer from 0 to {MAX_VALUE_BYTES}, "
                                         f"got {text!r}") from None


def add_flags(r: argparse.ArgumentParser) -> None:
    """Add ``--brokers`` and the workload-option flags to the ``run`` parser ``r``."""
    r.add_argument("--brokers", type=positive_int("--brokers", 0), default=None,
                   help="broker nodes: on --db kraft, B nodes with process.roles=broker after the "
                        "--nodes controllers (default 0, and 3 for workloads that need brokers, "
                        "e.g. queue); on --db kafka, the dedicated topology's brokers (default 3)")
    g = r.add_argument_group("workload options (default: the workload's own)")
    g.add_argument("--acks", type=parse_acks, default=None,
                   help="queue: the producers' acks, 0, 1 or all (-1) (default all)")
    g.add_argument("--min-insync-replicas", type=positive_int("--min-insync-replicas", 1), default=None,
                   help="queue: the topic's min.insync.replicas (default 2)")
    g.add_argument("--unclean-leader-election", type=parse_bool("--unclean-leader-election"), nargs="?",
                   const=True, default=None,
                   help="queue: the topic's unclean.leader.election.enable (alone: true; default false)")
    g.add_argument("--partitions", type=positive_int("--partitions", 1), default=None,
                   help="queue: the topic's partitions (default 3)")
    g.add_argument("--replication-factor", type=positive_int("--replication-factor", 1), default=None,
                   help="queue: the topic's replication factor (default 3)")
    g.add_argument("--idempotence", type=parse_bool("--idempotence"), nargs="?", const=True, default=None,
                   help="queue on --db kafka: the producer's enable.idempotence (alone: true; default "
                        "false, so retries show)")
    g.add_argument("--txn-delay", dest="txn_delay_ms", type=positive_int("--txn-delay", 0), default=None,
                   metavar="MS", help="txn: ms to sleep between the micro-ops of a transaction, to widen "
                                      "its windows (default 0)")
    g.add_argument("--transactions", type=parse_bool("--transactions"), nargs="?", const=True, default=None,
                   help="txn: run every op in a Kafka transaction (default true); false: Jepsen's queue "
                        "workload without transactions (one micro-op an op, offsets committed to the group)")
    g.add_argument("--compression", type=parse_compression, default=None,
                   help=f"txn: the producers' compression.type, one of {', '.join(COMPRESSION_TYPES)} "
                        f"(default none)")
    g.add_argument("--value-bytes", type=parse_value_bytes, default=None, metavar="N",
                   help="txn: pad each sent value to N bytes with text derived from the value (the history "
                        "keeps the int), so that compressed batches carry bytes to decompress (default 0: "
                        "the digits alone)")


def config_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The RunConfig keyword arguments of these flags, from parsed ``args``."""
    return {"brokers": args.brokers, **{k: getattr(args, k) for k in WORKLOAD_OPTIONS}}
