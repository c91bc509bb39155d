"""Matrix files (``kraft-chaos matrix FILE.toml``): reading and checking them, and their cells.

The format (see ``examples/nightly.toml``)::

    name = "nightly"                   # optional: the JUnit suite's name
    targets = ["kraft", "kafka"]       # default ["kraft"]
    workloads = ["append", "kv"]       # default: each target's default workload
    nemeses = ["partition,kill", "pause", "none"]   # --nemesis values; default: the run's default
    seeds = [1, 2, 3]                  # or a count: seeds = 3 is 0, 1, 2; default [0]
    kafka_versions = ["3.9", "4.4.0"]  # Kafka releases (a line: its newest patch); kafka cells only
    clients = ["librdkafka", "java"]   # the txn workload's --client; its cells only
    transaction_versions = [0, 2]      # the txn workload's --transaction-version; its cells only
    time_limit = 60                    # shared RunConfig settings, top level
    nodes = 5

    [target.kafka]                     # per-target overrides: settings and the axes
    workloads = ["metadata"]
    time_limit = 90

The axes are one table, :data:`harness.matrix.axes.AXES`; the settings a file may give are :data:`RUN_FIELDS`. A
workload a target cannot run (workloads/registry.py) is skipped with a
note. An unknown key, target, workload, nemesis, unsafe switch or client, or a bad
value, is a :class:`MatrixError` naming the file, line and key (exit 3); so is an axis no
cell takes (``clients`` without the txn workload), and a transaction version a cell's
release lacks.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import re
import tomllib
from pathlib import Path
from typing import Any, Callable

from harness.config import values as arg_types
from harness.config.run import RunConfig
from harness.matrix.axes import AXES, AXIS_KEYS, FIELD_AXES, VERSION_FIELD
from nemesis.schedule import MODES
from targets.errors import TargetError
from targets.kafka.releases import DEFAULT_VERSION, check_transaction_version, release
from targets.registry import DEFAULT_TARGET, target_spec
from workloads.registry import workload_spec

#: RunConfig fields the file may set, at the top level or per target
RUN_FIELDS = ("nodes", "time_limit", "concurrency", "rate", "nemesis_mode", "nemesis_interval",
              "nemesis_duration", "nemesis_targets", "subnet", "base_image", "unsafe", "fetch_max_records",
              "kafka_version", "kafka_topology", "kafka_props", "kraft_version", "cluster", "store")


class MatrixError(ValueError):
    """A matrix file is malformed; the message names the file, line and key (exit 3)."""


@dataclasses.dataclass
class Cell:
    """One run of the matrix: its axes and the :class:`harness.config.run.RunConfig` it runs
    (``resolved``: that config resolved already, harness/config/resolved.py; None: the run
    resolves it)."""

    db: str
    workload: str
    nemesis: list[str]
    seed: int
    config: Any
    kafka_version: str | None = None     # the kafka_versions axis's release, when it applies
    resolved: Any = None
    client: str | None = None            # the clients axis's, when it applies
    transaction_version: int | None = None   # the transaction_versions axis's, when it applies

    @property
    def target(self) -> str:
        """``kraft``, or with the release of the ``kafka_versions`` axis ``kafka-3.9.2``."""
        return f"{self.db}-{self.kafka_version}" if self.kafka_version else self.db

    @property
    def variant(self) -> str:
        """The workload with the client axes' values: ``txn+java+tv2``; ``append`` without."""
        parts = [self.workload]
        if self.client:
            parts.append(self.client)
        if self.transaction_version is not None:
            parts.append(f"tv{self.transaction_version}")
        return "+".join(parts)

    @property
    def id(self) -> str:
        """``kraft/append/partition,kill/seed1`` (``kafka-3.9.2/metadata/...`` on the
        ``kafka_versions`` axis, ``kafka/txn+java+tv2/...`` on the client axes)."""
        return f"{self.target}/{self.variant}/{','.join(self.nemesis) or 'none'}/seed{self.seed}"


@dataclasses.dataclass
class Matrix:
    """A loaded matrix file: ``cells`` to run, ``skipped`` pairs (``{"db", "workload",
    "reason"}``) the registry says cannot run, ``name`` and the file ``path``."""

    path: Path
    name: str
    cells: list[Cell]
    skipped: list[dict]


# -- loading -----------------------------------------------------------------

def _line_of(text: str, key: str, table: str | None = None, value: Any = None) -> int | None:
    """The 1-based line where ``key`` is set in ``[table]`` (None: the top level), or the line
    within its value that holds ``value``; None when it cannot be found."""
    cur, lines = None, text.splitlines()
    for i, raw in enumerate(lines, start=1):
        line = raw.strip()
        head = re.match(r"\[([^\[\]]+)\]\s*(#.*)?$", line)
        if head:
            cur = re.sub(r"[\s\"']", "", head.group(1))
            continue
        if cur == table and re.match(rf"[\"']?{re.escape(key)}[\"']?\s*=", line):
            if value is None:
                return i
            lit = re.compile(rf"[\"']{re.escape(value)}[\"']" if isinstance(value, str)
                             else rf"(?<![\w.]){re.escape(json.dumps(value))}(?![\w.])")
            for j in range(i, len(lines) + 1):
                if j > i and re.match(r"\s*(\[|[\w\"'-]+\s*=)", lines[j - 1]):
                    break
                if lit.search(lines[j - 1].split("=", 1)[1] if j == i else lines[j - 1]):
                    return j
            return i
    return None


def _field_check(name: str) -> Callable[[Any], Any]:
    """The check of a RUN_FIELDS value: returns it normalised or raises ValueError."""


    def via(parse: Callable[[str], Any], kinds: tuple) -> Callable[[Any], Any]:
        def check(v: Any) -> Any:
            if not isinstance(v, kinds) or isinstance(v, bool):
                raise ValueError(f"must be {' or '.join(k.__name__ for k in kinds)}, got {v!r}")
            try:
                return parse(str(v))
            except argparse.ArgumentTypeError as e:
                raise ValueError(str(e)) from None
        return check

    def choice(options: tuple) -> Callable[[Any], Any]:
        def check(v: Any) -> Any:
            if v not in options:
                raise ValueError(f"{v!r}: choose from {', '.join(map(str, options))}")
            return v
        return check

    def text(v: Any) -> str:
        if not isinstance(v, str) or not v:
            raise ValueError(f"must be a non-empty string, got {v!r}")
        return v

    def unsafe(v: Any) -> list[str]:
        if isinstance(v, list) and all(isinstance(x, str) for x in v):
            v = ",".join(v)
        return via(arg_types.unsafe_switches, (str,))(v)

    def props(v: Any) -> dict[str, str]:
        if not isinstance(v, dict) or not all(isinstance(x, (str, int, float, bool)) for x in v.values()):
            raise ValueError(f"must be a table of server properties (strings, numbers, booleans), got {v!r}")
        return {k: str(x).lower() if isinstance(x, bool) else str(x) for k, x in v.items()}

    return {
        "kafka_props": props,
        "nodes": via(arg_types.positive_int("nodes"), (int,)),
        "concurrency": via(arg_types.positive_int("concurrency"), (int,)),
        "fetch_max_records": via(arg_types.positive_int("fetch_max_records"), (int,)),
        "time_limit": via(arg_types.number("time_limit"), (int, float)),
        "rate": via(arg_types.number("rate"), (int, float)),
        "nemesis_interval": via(arg_types.number("nemesis_interval", strict=False), (int, float)),
        "nemesis_duration": via(arg_types.number("nemesis_duration"), (int, float)),
        "subnet": via(arg_types.ipv4_subnet, (str,)),
        "kafka_version": via(arg_types.kafka_version, (str,)),
        "nemesis_mode": choice(MODES),
        "nemesis_targets": choice(("quorum", "clients", "all")),
        "kafka_topology": choice(("dedicated", "combined")),
        "kraft_version": choice((0, 1)),
        "unsafe": unsafe,
        "base_image": text, "cluster": text, "store": text,
    }[name]


def _axes(doc: dict, err: Callable[..., MatrixError], table: str | None) -> dict[str, list]:
    """The axes of :data:`AXES` that ``doc`` sets, each value checked by its axis."""
    out: dict[str, list] = {}
    for key, axis in AXES.items():
        if key not in doc:
            continue
        v = doc[key]
        if axis.count and isinstance(v, int) and not isinstance(v, bool):
            if v < 1:
                raise err(key, table, None, f"a count of {key} must be >= 1, got {v}")
            v = list(range(v))
        if not isinstance(v, list) or not v:
            raise err(key, table, None, f"must be a non-empty list, got {v!r}")
        checked = []
        for x in v:
            try:
                checked.append(axis.check(x))
            except ValueError as e:
                raise err(key, table, x, str(e)) from None
        out[key] = list(dict.fromkeys(checked)) if axis.field else checked
    return out


def _settings(doc: dict, err: Callable[..., MatrixError], table: str | None) -> dict[str, Any]:
    """The RUN_FIELDS ``doc`` sets, checked and normalised."""
    out = {}
    for key in RUN_FIELDS:
        if key in doc:
            try:
                out[key] = _field_check(key)(doc[key])
            except ValueError as e:
                raise err(key, table, None, str(e)) from None
    return out


def load(path: Path | str, overrides: dict[str, Any] | None = None) -> Matrix:
    """Read and check the matrix file at ``path``; ``overrides`` (RunConfig fields, e.g. a
    command line's ``store`` or ``subnet``) win over the file. Raises :class:`MatrixError`
    naming the line and key, ``FileNotFoundError``."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise MatrixError(f"{path}: not TOML: {e}") from None

    def err(key: str, table: str | None, value: Any, problem: str) -> MatrixError:
        line = _line_of(text, key, table, value)
        where = f"[{table}] " if table else ""
        return MatrixError(f"{path}:{line or 1}: {where}{key!r}: {problem}")

    allowed = set(AXIS_KEYS) | set(RUN_FIELDS) | {"name", "target"}
    hints = {"seed": "seeds", "db": "targets", "workload": "workloads", "nemesis": "nemeses",
             "client": "clients", "transaction_version": "transaction_versions"}
    for key in doc:
        if key == "keep_cluster":
            raise err(key, None, None, "not in a matrix: every cell's cluster is torn down")
        if key in hints:
            raise err(key, None, None, f"unknown key (did you mean {hints[key]!r}?)")
        if key not in allowed:
            raise err(key, None, None, f"unknown key: choose from {', '.join(sorted(allowed))}")
    if "name" in doc and not isinstance(doc["name"], str):
        raise err("name", None, None, "must be a string")
    axes = {"targets": [DEFAULT_TARGET], "seeds": [0], **_axes(doc, err, None)}
    shared = _settings(doc, err, None)
    per_target = doc.get("target", {})
    if not isinstance(per_target, dict):
        raise err("target", None, None, "must be tables such as [target.kafka]")
    for db, table in per_target.items():
        name = f"target.{db}"
        if db not in axes["targets"]:
            try:
                target_spec(db)
            except ValueError as e:
                raise MatrixError(f"{path}:{_line_of_table(text, name)}: [{name}]: {e}") from None
            raise MatrixError(f"{path}:{_line_of_table(text, name)}: [{name}]: {db!r} is not in targets")
        if not isinstance(table, dict):
            raise err(db, "target", None, "must be a table")
        for key in table:
            if key not in set(RUN_FIELDS) | set(AXIS_KEYS) - {"targets"}:
                raise err(key, name, None, f"unknown key: choose from {', '.join(sorted(RUN_FIELDS))}, "
                          + ", ".join(k for k in AXIS_KEYS if k != "targets"))
    cells, skipped = [], []
    taken: set[str] = set()          # the field axes some cell took
    for db in axes["targets"]:
        table = per_target.get(db, {})
        where = f"target.{db}"
        mine = {**axes, **_axes(table, err, where)}
        fields = {**shared, **_settings(table, err, where), **(overrides or {})}
        workloads = mine.get("workloads") or [target_spec(db).default_workload]
        for axis in FIELD_AXES:
            if axis.key not in mine:
                continue
            table_of = where if axis.key in table else None
            if axis.field in fields:
                raise err(axis.key, table_of, None, f"give {axis.field} or {axis.key}, not both ({db})")
            if axis.key in table and not any(axis.applies(db, w) for w in workloads):
                raise err(axis.key, where, None, axis.refused.format(db=db))
        for workload in workloads:
            dbs = workload_spec(workload).dbs
            if db not in dbs:
                skipped.append({"db": db, "workload": workload,
                                "reason": f"workload {workload!r} does not run on --db {db}: "
                                          f"it supports {', '.join(dbs)}"})
                continue
            for pinned in _field_values(mine, db, workload):
                taken.update(a.key for a in FIELD_AXES if a.field in pinned)
                for nemesis in mine.get("nemeses") or [list(RunConfig(seed=0).nemesis)]:
                    for seed in mine["seeds"]:
                        cfg = RunConfig(seed=seed, db=db, workload=workload, nemesis=list(nemesis),
                                        **fields, **pinned)
                        cell = Cell(db, workload, list(nemesis), seed, cfg, **pinned)
                        problem = _cell_problem(cell, fields)
                        if problem:
                            key = "transaction_versions"
                            raise err(key, where if key in table else None, cell.transaction_version, problem)
                        cells.append(cell)
    if not cells:
        raise MatrixError(f"{path}: no cell to run: " + "; ".join(s["reason"] for s in skipped))
    for axis in FIELD_AXES:
        if axis.key in doc and axis.key not in taken:
            raise err(axis.key, None, None, f"no cell takes it: only {axis.takers} do")
    return Matrix(path, doc.get("name") or path.stem, cells, skipped)


def _field_values(axes: dict[str, list], db: str, workload: str) -> list[dict[str, Any]]:
    """Every combination of the field axes (:data:`FIELD_AXES`) a (db, workload) cell takes,
    as ``{field: value}``, in the table's order; ``[{}]`` when it takes none."""
    combos: list[dict[str, Any]] = [{}]
    for axis in FIELD_AXES:
        if axis.key in axes and axis.applies(db, workload):
            combos = [{**c, axis.field: v} for c in combos for v in axes[axis.key]]
    return combos


def _cell_problem(cell: Cell, fields: dict[str, Any]) -> str | None:
    """Why ``cell`` cannot run, when its transaction version is one its Kafka release lacks
    (the release: the cell's, the file's ``kafka_version`` or the default); else None."""
    if cell.transaction_version is None:
        return None
    version = cell.kafka_version or fields.get(VERSION_FIELD) or DEFAULT_VERSION
    try:
        check_transaction_version(release(version), version, cell.transaction_version)
    except TargetError as e:
        return f"cell {cell.id}: {e}"
    return None


def _line_of_table(text: str, name: str) -> int:
    for i, line in enumerate(text.splitlines(), start=1):
        if re.sub(r"[\s\"']", "", line.split("#", 1)[0]) == f"[{name}]":
            return i
    return 1
