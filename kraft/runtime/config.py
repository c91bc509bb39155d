"""Node configuration: a Kafka-style properties file (see kraft/README.md).

Keys: ``node.id``, ``listeners`` (host:port to listen on),
``controller.quorum.voters`` (``id@host:port,...``: the static voters of
kraft.version 0), ``controller.quorum.bootstrap.servers`` (``host:port,...``:
where a kraft.version 1 replica looks for the leader; KIP-853; one of the
two is required), ``log.dir``,
``controller.quorum.election.timeout.ms`` (1000),
``controller.quorum.fetch.timeout.ms`` (2000),
``controller.quorum.request.timeout.ms`` (2000),
``controller.quorum.fetch.max.wait.ms`` (500),
``fetch.max.records`` (2000: records per Fetch response; ours, where Kafka
bounds bytes), ``log.segment.bytes`` (1048576: a segment rolls once it holds that
many bytes),
``controller.quorum.election.backoff.max.ms`` (1000),
``controller.quorum.retry.backoff.ms`` (20),
``pre_vote`` (true), ``check_quorum`` (true), ``cluster.id`` (optional; checked
against meta.properties), ``unsafe`` (comma list), ``seed`` (election jitter).

Data plane (brokers; docs/data-plane.md): ``process.roles`` (``controller``, the
default, or ``broker``), ``replica.lag.time.max.ms`` (3000: a follower not caught
up for this long leaves the ISR), ``replica.high.watermark.checkpoint.interval.ms``
(500), ``log.flush.interval.ms`` (1000: the page-cache-ack flush period),
``replica.fetch.wait.max.ms`` (500: the ReplicaFetch long poll).
Controllers: ``broker.session.timeout.ms`` (3000: a broker with no heartbeat for this
long is fenced by the active controller; KIP-631).
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from ..core import unsafe as unsafe_switches
from ..storage.log import DEFAULT_SEGMENT_BYTES
from ..storage.meta import parse_properties


class ConfigError(ValueError):
    """The config file is missing a key or has a malformed value (the message names it)."""


@dataclasses.dataclass(frozen=True)
class Voter:
    """A voter endpoint: ``id`` (int), ``host`` (str), ``port`` (int)."""

    id: int
    host: str
    port: int


@dataclasses.dataclass(frozen=True)
class NodeConfig:
    """A node's configuration; times in ms."""

    node_id: int
    listen_host: str
    listen_port: int
    voters: tuple[Voter, ...]
    data_dir: Path
    election_timeout_ms: int = 1000
    fetch_timeout_ms: int = 2000
    request_timeout_ms: int = 2000
    fetch_max_wait_ms: int = 500
    fetch_max_records: int = 2000
    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    election_backoff_max_ms: int = 1000
    retry_backoff_ms: int = 20
    pre_vote: bool = True
    check_quorum: bool = True
    cluster_id: str | None = None
    unsafe: frozenset[str] = frozenset()
    seed: int | None = None
    #: KIP-853 ``controller.quorum.bootstrap.servers``: ``((host, port), ...)``.
    bootstrap_servers: tuple[tuple[str, int], ...] = ()
    #: ``process.roles``: "controller" (a voter) or "broker" (docs/data-plane.md).
    process_roles: str = "controller"
    #: Broker data plane (kraft/broker/service.py), in ms.
    replica_lag_time_max_ms: int = 3000
    replica_hw_checkpoint_interval_ms: int = 500
    log_flush_interval_ms: int = 1000
    replica_fetch_wait_max_ms: int = 500
    #: Controller data plane (kraft/controller/service.py): KIP-631 broker session, in ms.
    broker_session_timeout_ms: int = 3000

    @property
    def voter_ids(self) -> list[int]:
        """Ids of all voters, ascending."""
        return sorted(v.id for v in self.voters)

    def voter(self, node_id: int) -> Voter | None:
        """The voter with ``node_id``, or None."""
        return next((v for v in self.voters if v.id == node_id), None)


def parse_voters(text: str) -> tuple[Voter, ...]:
    """Parse ``1@host:9093,2@host:9093``; raises ConfigError on a malformed entry."""
    out = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        try:
            vid, addr = item.split("@", 1)
            host, port = addr.rsplit(":", 1)
            out.append(Voter(int(vid), host, int(port)))
        except ValueError:
            raise ConfigError(f"controller.quorum.voters: malformed entry {item!r}, expected id@host:port") from None
    if not out:
        raise ConfigError("controller.quorum.voters is empty")
    if len({v.id for v in out}) != len(out):
        raise ConfigError(f"controller.quorum.voters has a duplicate id: {text!r}")
    return tuple(out)


def parse_bootstrap_servers(text: str) -> tuple[tuple[str, int], ...]:
    """Parse ``host:9093,host2:9093``; raises ConfigError on a malformed entry."""
    out = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        try:
            host, port = item.rsplit(":", 1)
            out.append((host, int(port)))
        except ValueError:
            raise ConfigError(f"controller.quorum.bootstrap.servers: malformed entry {item!r}, "
                              f"expected host:port") from None
    return tuple(out)


def _bool(key: str, text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise ConfigError(f"{key}: expected true or false, got {text!r}")


def parse_config(text: str) -> NodeConfig:
    """Parse properties text into a NodeConfig. Raises ConfigError naming the bad key."""
    p = parse_properties(text)

    def need(key: str) -> str:
        if key not in p:
            raise ConfigError(f"missing required key {key}")
        return p[key]

    def num(key: str, default: int | None) -> int | None:
        if key not in p:
            return default
        try:
            v = int(p[key])
        except ValueError:
            raise ConfigError(f"{key}: expected an integer, got {p[key]!r}") from None
        if v < 0:
            raise ConfigError(f"{key}: must not be negative, got {v}")
        return v

    listen = need("listeners").split("://")[-1]
    try:
        host, port = listen.rsplit(":", 1)
        port_n = int(port)
    except ValueError:
        raise ConfigError(f"listeners: expected host:port, got {listen!r}") from None
    try:
        unsafe = unsafe_switches.parse(p.get("unsafe", ""))
    except ValueError as e:
        raise ConfigError(f"unsafe: {e}") from None
    segment_bytes = num("log.segment.bytes", DEFAULT_SEGMENT_BYTES)
    if segment_bytes < 1:
        raise ConfigError(f"log.segment.bytes: must be at least 1, got {segment_bytes}")
    fetch_max_records = num("fetch.max.records", 2000)
    if fetch_max_records < 1:
        raise ConfigError(f"fetch.max.records: must be at least 1, got {fetch_max_records}")
    bootstrap = parse_bootstrap_servers(p.get("controller.quorum.bootstrap.servers", ""))
    if not bootstrap and "controller.quorum.voters" not in p:
        raise ConfigError("missing required key controller.quorum.voters "
                          "(or controller.quorum.bootstrap.servers)")
    voters = parse_voters(p["controller.quorum.voters"]) if "controller.quorum.voters" in p else ()
    roles = p.get("process.roles", "controller").strip()
    if roles not in ("controller", "broker"):
        raise ConfigError(f"process.roles: expected controller or broker, got {roles!r}")
    node_id = num("node.id", None)
    if node_id is None:
        raise ConfigError("missing required key node.id")
    return NodeConfig(
        node_id=node_id, listen_host=host, listen_port=port_n,
        voters=voters, bootstrap_servers=bootstrap,
        data_dir=Path(need("log.dir")),
        election_timeout_ms=num("controller.quorum.election.timeout.ms", 1000),
        fetch_timeout_ms=num("controller.quorum.fetch.timeout.ms", 2000),
        request_timeout_ms=num("controller.quorum.request.timeout.ms", 2000),
        fetch_max_wait_ms=num("controller.quorum.fetch.max.wait.ms", 500),
        fetch_max_records=fetch_max_records, segment_bytes=segment_bytes,
        election_backoff_max_ms=num("controller.quorum.election.backoff.max.ms", 1000),
        retry_backoff_ms=num("controller.quorum.retry.backoff.ms", 20),
        pre_vote=_bool("pre_vote", p.get("pre_vote", "true")) and "no-pre-vote" not in unsafe,
        check_quorum=_bool("check_quorum", p.get("check_quorum", "true")) and "no-check-quorum" not in unsafe,
        cluster_id=p.get("cluster.id") or None,
        unsafe=unsafe,
        seed=num("seed", None),
        process_roles=roles,
        replica_lag_time_max_ms=num("replica.lag.time.max.ms", 3000),
        replica_hw_checkpoint_interval_ms=num("replica.high.watermark.checkpoint.interval.ms", 500),
        log_flush_interval_ms=num("log.flush.interval.ms", 1000),
        replica_fetch_wait_max_ms=num("replica.fetch.wait.max.ms", 500),
        broker_session_timeout_ms=num("broker.session.timeout.ms", 3000),
    )


def load_config(path: Path | str) -> NodeConfig:
    """Read and parse a config file. Raises ConfigError (also for a missing file)."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise ConfigError(f"cannot read config {path}: {e.strerror}") from None
    return parse_config(text)
