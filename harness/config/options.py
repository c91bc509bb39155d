"""A run's workload options and broker count: the :data:`WORKLOAD_OPTIONS` fields of a
``RunConfig`` (``--acks``, ``--min-insync-replicas``, ...) handed to the workload's options
class, and the default ``--brokers`` of a workload that needs brokers.

Every option defaults to None (not given): the target's or the workload's own default then
applies. A flag the workload has no option for is a clear ``ValueError`` naming the flag,
raised before any cluster is made.
"""
from __future__ import annotations

import dataclasses
from typing import Any

#: RunConfig fields that are workload options (the workload's ``options_class`` fields of
#: the same name), each with its ``kraft-chaos run`` flag; None in a RunConfig: the
#: workload's default
WORKLOAD_OPTIONS = {"partitions": "--partitions", "replication_factor": "--replication-factor",
                    "acks": "--acks", "min_insync_replicas": "--min-insync-replicas",
                    "unclean_leader_election": "--unclean-leader-election", "idempotence": "--idempotence"}


def workload_options(config, options_class: type, workload: str) -> Any:
    """``options_class(concurrency=..., rate=..., **the given workload options)`` of
    ``config`` (a ``harness.config.run.RunConfig``). Raises ``ValueError`` naming the flag a
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
