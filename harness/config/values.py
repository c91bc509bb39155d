"""The value types of what a run is told, as text: each parses one value (a command-line flag's,
or a matrix file's, harness/matrix/file.py) or raises ``argparse.ArgumentTypeError`` naming
the flag and the bad value (``kraft-chaos`` exits 3 with it)."""
from __future__ import annotations

import argparse
import ipaddress
from pathlib import Path

from clusters.ssh_hosts import HostsFileError, load_hosts
from kraft.core import unsafe
from nemesis.schedule import parse_fault_names
from targets.errors import TargetError
from targets.kafka.releases import release
from targets.registry import target_spec
from workloads import WORKLOADS


def positive_int(name: str, minimum: int = 1):
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {text!r}") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"{name} must be >= {minimum}, got {v}")
        return v
    return parse


def number(name: str, minimum: float = 0.0, strict: bool = True):
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


def seed_value(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"seed must be an integer, got {text!r}") from None
    if not 0 <= v < 2 ** 63:
        raise argparse.ArgumentTypeError(f"seed must be in 0..2^63-1, got {v}")
    return v


def nemeses(text: str) -> list[str]:
    try:
        return parse_fault_names(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{e} (or 'none')") from None


def ipv4_subnet(text: str) -> str:
    try:
        net = ipaddress.ip_network(text, strict=True)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"bad --subnet {text!r}: {e}") from None
    if net.version != 4:
        raise argparse.ArgumentTypeError(f"--subnet must be IPv4, got {text!r}")
    return str(net)


def workload_name(text: str) -> str:
    if text not in WORKLOADS:
        raise argparse.ArgumentTypeError(f"unknown workload {text!r}: choose from {', '.join(WORKLOADS)}")
    return text


def unsafe_switches(text: str) -> list[str]:
    try:
        names = unsafe.parse(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return [n for n in dict.fromkeys(s.strip() for s in text.split(",")) if n in names]


def db_name(text: str) -> str:
    try:
        target_spec(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def hosts_file(text: str) -> str:
    """``--hosts``: a hosts file that parses (clusters/ssh_hosts.py), as an absolute path."""
    try:
        load_hosts(text)
    except HostsFileError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return str(Path(text).absolute())


def kafka_version(text: str) -> str:
    """``--kafka-version``: a release of a line kraft-chaos runs (targets/kafka/releases.py)."""
    try:
        release(text)
    except TargetError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def kafka_prop(text: str) -> tuple[str, str]:
    """``--kafka-prop KEY=VALUE``: one extra ``server.properties`` entry of every Kafka node."""
    key, eq, value = text.partition("=")
    key = key.strip()
    if not eq or not key:
        raise argparse.ArgumentTypeError(f"--kafka-prop takes KEY=VALUE (a Kafka server property), got {text!r}")
    return key, value.strip()


#: the lock file that ``bugs``, ``bisect``, ``hunt`` and ``scenario``'s families hold during each
#: run unless told otherwise (``--lock``): the conventional place of lock files on Linux (FHS)
DEFAULT_LOCK = "/run/lock/kraft-chaos.lock"
#: the ``--lock`` value that takes no lock
NO_LOCK = "none"


def lock_file(text: str) -> str | None:
    """``--lock FILE``: a file to ``flock`` during each run, created (with its folder) if missing;
    ``none``: no lock (None). Raises ``argparse.ArgumentTypeError`` naming the file when it
    cannot be created or opened for writing."""
    if text.strip().lower() == NO_LOCK:
        return None
    path = Path(text)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a"):
            pass
    except OSError as e:
        raise argparse.ArgumentTypeError(f"--lock: cannot create or open the lock file {text!r} "
                                         f"({e.strerror or e}): give another FILE, or --lock {NO_LOCK}") from None
    return text
