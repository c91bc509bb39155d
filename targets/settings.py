"""What a target reads of a run: its settings, one frozen value per target.

A target never reads the run's whole configuration. Each :class:`targets.registry.TargetSpec`
names its settings class (``TargetSpec.settings``); the harness fills it once, field by field,
from the run's configuration of the same names (``harness/config/resolved.py``), the target's
``prepare`` completes it, and every function of the target (node count, image, DB, host files,
repeat flags) reads that value alone. :class:`TargetSettings` holds what every target reads;
:class:`KraftSettings` is our quorum's; Kafka's is :class:`targets.kafka.settings.KafkaSettings`.
"""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class TargetSettings:
    """What every target reads of a run. ``seed`` drives the nodes' own random choices;
    ``nodes``: the quorum's nodes (voters, controllers); ``brokers``: broker nodes besides
    them (None: the target's default); ``kraft_version``: 0 static voters, 1 KIP-853 (None:
    the target's default, :attr:`targets.registry.TargetSpec.default_kraft_version`)."""

    seed: int = 0
    nodes: int = 3
    brokers: int | None = None
    kraft_version: int | None = None


@dataclasses.dataclass(frozen=True)
class KraftSettings(TargetSettings):
    """What the ``kraft`` target (our quorum, kraft/) reads besides :class:`TargetSettings`:
    ``base_image`` (the node image's base, None: the default), ``unsafe`` (``kraft.core.unsafe``
    switch names), ``fetch_max_records`` (a Fetch response's bound, None: the node's default)
    and ``segment_bytes`` (``log.segment.bytes`` in bytes, None: the node's 1 MiB)."""

    base_image: str | None = None
    unsafe: tuple[str, ...] = ()
    fetch_max_records: int | None = None
    segment_bytes: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "unsafe", tuple(self.unsafe))
