"""The transactional clients (``--client``), chosen by name through one table.

- ``librdkafka``: confluent-kafka (``targets/kafka/txn_librdkafka.py``), the venv's; it
  speaks the original transaction protocol only.
- ``java``: Kafka's own Java client, kafka-clients of the release under test
  (``targets/kafka/txn_java.py``), compiled at set-up and cached per release
  (``targets/kafka/java_build.py``); from 4.0 it speaks transaction version 2 (KIP-890
  part 2) where the cluster has it.

:func:`check_client` refuses a client that cannot run (before anything starts: the run's
exit 3) and builds what it needs; :func:`client_factory` returns the run's
``targets.txn_client.TxnClientFactory``.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from targets.errors import TargetError
from targets.txn_client import FactoryMaker, TxnClientFactory

Log = Callable[[str], None]


def _librdkafka(version: str, log: Log) -> TxnClientFactory:
    from targets.kafka.txn_librdkafka import rdkafka_factory
    return rdkafka_factory(version, log)


def _java(version: str, log: Log) -> TxnClientFactory:
    from targets.kafka.txn_java import java_factory
    return java_factory(version, log)


def _prepare_java(version: str, log: Log) -> None:
    from targets.kafka.java_build import ensure_java_client
    ensure_java_client(version, log=log)


@dataclasses.dataclass(frozen=True)
class ClientSpec:
    """One ``--client``: ``name``, ``make`` (``(kafka_version, log) -> factory``),
    ``prepare`` (``(kafka_version, log) -> None``: fetch and build what it needs, raising
    ``TargetError``) and ``doc`` (one line for ``--help``)."""

    name: str
    make: FactoryMaker
    prepare: Callable[[str, Log], None]
    doc: str


CLIENTS: dict[str, ClientSpec] = {c.name: c for c in (
    ClientSpec("librdkafka", _librdkafka, lambda _v, _log: None,
               "confluent-kafka (librdkafka): the original transaction protocol"),
    ClientSpec("java", _java, _prepare_java,
               "Kafka's Java client of the release (kafka-clients); transaction version 2 from 4.0"),
)}
DEFAULT_CLIENT = "librdkafka"


def client_spec(name: str) -> ClientSpec:
    """The table's row for ``name``. Raises ``ValueError`` naming the known clients."""
    spec = CLIENTS.get(name)
    if spec is None:
        raise ValueError(f"unknown client {name!r}; known: {', '.join(sorted(CLIENTS))}")
    return spec


def check_client(name: str, kafka_version: str, log: Log = lambda _m: None) -> None:
    """Refuse a client that cannot run against Kafka ``kafka_version``, and make what it
    needs (the Java client: its jars resolved and the program compiled, cached per
    release). Raises ``ValueError`` with one line: an unknown client, a release whose
    kafka-clients jar does not resolve, no javac, a failed build."""
    spec = client_spec(name)
    try:
        spec.prepare(kafka_version, log)
    except TargetError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f"--client {name} with Kafka {kafka_version}: {first}") from None


def client_factory(name: str, kafka_version: str, log: Log = lambda _m: None) -> TxnClientFactory:
    """The run's factory of ``name``'s sessions (building is cached: call
    :func:`check_client` first to fail early). Raises ``ValueError`` as :func:`check_client`."""
    spec = client_spec(name)
    try:
        return spec.make(kafka_version, log)
    except TargetError as e:
        raise ValueError(f"--client {name} with Kafka {kafka_version}: {str(e).strip().splitlines()[0]}") from None
