"""What the ``kafka`` target reads of a run (:class:`KafkaSettings`), filled by the harness and
completed by :func:`targets.kafka.target.prepare`."""
from __future__ import annotations

import dataclasses
import types
from typing import Mapping

from targets.kafka.releases import DEFAULT_VERSION
from targets.settings import TargetSettings


@dataclasses.dataclass(frozen=True)
class KafkaSettings(TargetSettings):
    """:class:`targets.settings.TargetSettings` (``nodes``: the controllers, or the combined
    servers; ``brokers``: the dedicated topology's brokers, None: 3) and

    ``kafka_version``: the release (``"4.3.1"``); ``kafka_dist``: a Kafka distribution run in
    place of a Maven release (a path, or None), with ``kafka_dist_digest``, its content digest
    (targets/kafka/dist.py; None until prepared); ``kafka_topology``: ``dedicated`` (controllers
    plus brokers) or ``combined``; ``kafka_props``: extra ``server.properties`` of every node,
    ``{key: value}`` (None: none), held read-only. ``client``: the transactional client of the
    ``txn`` workload (``--client``, targets/kafka/txn_clients.py; None: the default,
    librdkafka). ``transaction_version``: the cluster's ``transaction.version`` feature level
    at format (``--transaction-version``; None: the release's default)."""

    kafka_version: str = DEFAULT_VERSION
    kafka_dist: str | None = None
    kafka_dist_digest: str | None = None
    kafka_topology: str = "dedicated"
    kafka_props: Mapping[str, object] | None = None
    client: str | None = None
    transaction_version: int | None = None

    def __post_init__(self) -> None:
        if self.kafka_props is not None:
            object.__setattr__(self, "kafka_props", types.MappingProxyType(dict(self.kafka_props)))
