"""A run's workload options, broker count and fault targets: the :data:`WORKLOAD_OPTIONS`
fields of a ``RunConfig`` (``--acks``, ``--min-insync-replicas``, ...) handed to the
workload's options class, the default ``--brokers`` of a workload that needs brokers, and
the default ``--nemesis-targets`` of a workload.

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
                    "unclean_leader_election": "--unclean-leader-election", "idempotence": "--idempotence",
                    "txn_delay_ms": "--txn-delay", "transactions": "--transactions",
                    "compression": "--compression", "value_bytes": "--value-bytes"}

#: RunConfig fields that are target settings read by one workload's client alone (the
#: ``txn`` workload's, ``WorkloadSpec.client_fields``), each with its flag
CLIENT_FIELDS = {"client": "--client", "transaction_version": "--transaction-version"}


def check_client_fields(config, workload_spec) -> None:
    """Raise ``ValueError`` naming each :data:`CLIENT_FIELDS` flag given (not None) to a
    workload whose spec does not read it (``workload_spec.client_fields``)."""
    foreign = [flag for name, flag in CLIENT_FIELDS.items()
               if getattr(config, name, None) is not None and name not in workload_spec.client_fields]
    if foreign:
        users = "the txn workload"
        raise ValueError(f"{', '.join(foreign)} appl{'ies' if len(foreign) == 1 else 'y'} to {users}, "
                         f"not to the {config.workload} workload")


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


def resolve_brokers(config, workload_spec, target_spec) -> int | None:
    """``config.brokers``, or the workload's default (``workload_spec.brokers``) when it was
    not given and the target's brokers are optional (``target_spec.optional_brokers``).
    Raises ``ValueError`` naming ``--brokers`` when such a workload was given none."""
    wanted = workload_spec.brokers
    if not wanted or not target_spec.optional_brokers:
        return config.brokers
    if config.brokers is None:
        return wanted
    if config.brokers < 1:
        raise ValueError(f"the {config.workload} workload needs brokers: give --brokers B (B >= 1) on "
                         f"--db {config.db}, or leave it out for {wanted}")
    return config.brokers


#: ``--nemesis-targets`` choices (``targets.base.DB.fault_nodes``)
NEMESIS_TARGETS = ("quorum", "clients", "all")


def resolve_nemesis_targets(config, workload_spec) -> str:
    """``config.nemesis_targets``, or the workload's default (``workload_spec.nemesis_targets``:
    ``all`` for the queue workload, whose bugs live in the brokers; ``quorum`` otherwise)
    when it was not given (None). Raises ``ValueError`` naming an unknown choice."""
    chosen = workload_spec.nemesis_targets if config.nemesis_targets is None else config.nemesis_targets
    if chosen not in NEMESIS_TARGETS:
        raise ValueError(f"unknown nemesis targets {chosen!r}: choose from {', '.join(NEMESIS_TARGETS)}")
    return chosen
