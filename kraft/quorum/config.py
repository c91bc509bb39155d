"""What a quorum core is configured with (the ``controller.quorum.*`` settings; times in ms)."""
from __future__ import annotations

import dataclasses

from ..core.unsafe import SAFE, Unsafe


@dataclasses.dataclass(frozen=True)
class QuorumConfig:
    """A quorum core's settings.

    ``node_id`` and ``directory_id`` (meta.properties; None at kraft.version 0 works
    too) name the replica. Times are ms: ``election_timeout_ms`` (randomised in [T,
    2T)), ``fetch_timeout_ms``, ``request_timeout_ms`` (client requests' default
    deadline), ``fetch_max_wait_ms`` (the long poll a follower asks for),
    ``election_backoff_max_ms``, ``retry_backoff_ms``, ``append_linger_ms`` (the
    leader batches appends for one fsync this long). ``fetch_max_records`` bounds a
    Fetch response. ``pre_vote`` and ``check_quorum`` are KIP-996's. ``bootstrap_servers``
    are where an observer looks for the leader (opaque destinations for :class:`Send`;
    empty: at kraft.version 1 the voters). ``unsafe`` is the policy of
    :class:`kraft.core.unsafe.Unsafe`.
    """

    node_id: int
    directory_id: str | None = None
    election_timeout_ms: int = 1000
    fetch_timeout_ms: int = 2000
    request_timeout_ms: int = 2000
    fetch_max_wait_ms: int = 500
    fetch_max_records: int = 2000
    election_backoff_max_ms: int = 1000
    retry_backoff_ms: int = 20
    append_linger_ms: float = 2.0
    pre_vote: bool = True
    check_quorum: bool = True
    bootstrap_servers: tuple = ()
    unsafe: Unsafe = SAFE
