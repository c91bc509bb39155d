"""The axes a matrix file may list (harness/matrix/file.py): one table, :data:`AXES`.

Each :class:`Axis` says how one value is checked and, for the axes that set a RunConfig field
per cell (``kafka_versions``, ``clients``, ``transaction_versions``), which cells take it:
the others run once without it. The targets, workloads, nemeses and seeds axes make the cells
themselves.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

from harness.config.options import CLIENT_FIELDS
from nemesis.schedule import parse_fault_names
from targets.errors import TargetError
from targets.kafka.releases import TRANSACTION_VERSIONS, newest_patch
from targets.kafka.txn_clients import client_spec
from targets.registry import target_spec
from workloads.registry import workload_spec


def _seed(x: Any) -> int:
    if not isinstance(x, int) or isinstance(x, bool) or not 0 <= x < 2 ** 63:
        raise ValueError(f"a seed must be an integer in 0..2^63-1, got {x!r}")
    return x


def _string(check: Callable[[str], Any]) -> Callable[[Any], Any]:
    """``check`` of one string value, refusing anything else."""
    def one(x: Any) -> Any:
        if not isinstance(x, str):
            raise ValueError(f"must list strings, got {x!r}")
        return check(x)
    return one


def _known(lookup: Callable[[str], Any]) -> Callable[[str], str]:
    """The check that ``lookup`` knows a name (it raises ValueError naming the choices)."""
    def check(x: str) -> str:
        lookup(x)
        return x
    return check


def _release(x: str) -> str:
    try:
        return newest_patch(x)
    except TargetError as e:
        raise ValueError(str(e)) from None


def _transaction_version(x: Any) -> int:
    if not isinstance(x, int) or isinstance(x, bool):
        raise ValueError(f"a transaction version must be an integer, got {x!r}")
    if x not in TRANSACTION_VERSIONS:
        raise ValueError(f"no transaction version {x}: choose from {', '.join(map(str, TRANSACTION_VERSIONS))}")
    return x


def _reads_field(field: str) -> Callable[[str, str], bool]:
    """Whether a (db, workload) cell takes the axis of RunConfig ``field``: the target's own
    field (``kafka_version``), or one its workload's client reads (``client``, ...)."""
    def applies(db: str, workload: str) -> bool:
        return field in target_spec(db).own_fields and (
            field not in CLIENT_FIELDS or field in workload_spec(workload).client_fields)
    return applies


@dataclasses.dataclass(frozen=True)
class Axis:
    """One axis a matrix file may list: ``key`` (the file's), ``check`` (one value -> itself
    normalised; ValueError naming what is wrong), ``field`` (the RunConfig field it sets per
    cell, multiplying the cells that take it; None for the axes that make the cells:
    targets, workloads, nemeses, seeds), ``applies`` (``(db, workload) -> bool``: whether such
    a cell takes it; the others run once without it), ``takers`` (who takes it, for the error
    when no cell does), ``refused`` (the error when a ``[target.<db>]`` table sets it and no
    cell of that target takes it; ``{db}`` is filled in) and ``count`` (an int N may stand for
    0..N-1)."""

    key: str
    check: Callable[[Any], Any]
    field: str | None = None
    applies: Callable[[str, str], bool] = lambda _db, _workload: True
    takers: str = ""
    refused: str = ""
    count: bool = False


#: every axis, in the order cells multiply (``kafka_versions``: releases ``"3.9.2"`` or lines
#: ``"3.9"``, each line's newest patch, on the targets that take a ``kafka_version``)
AXES: dict[str, Axis] = {a.key: a for a in (
    Axis("targets", _string(_known(target_spec))),
    Axis("workloads", _string(_known(workload_spec))),
    Axis("kafka_versions", _string(_release), "kafka_version", _reads_field("kafka_version"),
         "the targets that run a Kafka release", "--db {db} runs no Kafka release"),
    Axis("clients", _string(_known(client_spec)), "client", _reads_field("client"),
         "the txn workload's cells on --db kafka", "no workload of --db {db} here reads it: only the txn "
         "workload on --db kafka does"),
    Axis("transaction_versions", _transaction_version, "transaction_version", _reads_field("transaction_version"),
         "the txn workload's cells on --db kafka", "no workload of --db {db} here reads it: only the txn "
         "workload on --db kafka does"),
    Axis("nemeses", _string(parse_fault_names)),
    Axis("seeds", _seed, count=True),
)}
AXIS_KEYS = tuple(AXES)
#: the axes that set a RunConfig field per cell
FIELD_AXES = tuple(a for a in AXES.values() if a.field)
#: the RunConfig field the ``kafka_versions`` axis sets (on the targets whose own_fields have it)
VERSION_FIELD = AXES["kafka_versions"].field
