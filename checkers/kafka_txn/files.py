"""History files of Jepsen's Kafka workload: telling one apart, and reading its ops.

Two formats: our ``history.jsonl`` (DEVELOPERS.md, "History"; streamed) and Jepsen's
``history.edn`` as ``jepsen.tests.kafka`` writes it (one op map per line, or a vector of them;
read with checkers/linearizability/formats/edn.py: keywords become strings, vectors tuples).
A history is a Kafka-workload history when the first ``send``, ``poll`` or ``txn`` client op
among its first :data:`LOOK_OPS` client ops has a micro-op list for its value
(checkers/kafka_txn/mops.py).
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Iterator

from history import NEMESIS, OP_TYPES

from .mops import DATA_FS, is_mop_list

#: client ops looked at to tell a Kafka-workload history (its first data op comes early)
LOOK_OPS = 10_000
#: the formats this checker reads (``kraft-chaos check --format``)
FORMATS = ("jsonl", "edn")


def is_kafka_history(ops: Iterable[dict]) -> bool:
    """Is this a Kafka-workload history (module docstring)? Reads ``ops`` only as far as it
    must."""
    seen = 0
    for op in ops:
        if op.get("process") == NEMESIS:
            continue
        if op.get("f") in DATA_FS:
            return is_mop_list(op.get("value"))
        seen += 1
        if seen >= LOOK_OPS:
            return False
    return False


def looks_like_kafka(path: Path, fmt: str) -> bool:
    """Is the file at ``path`` (format ``fmt``: jsonl or edn) a Kafka-workload history? Reads
    only its first ops (an EDN op map at a time). Raises FileNotFoundError, and for jsonl
    ``history.HistoryError`` on a malformed line before the decision."""
    if fmt == "jsonl":
        from history import iter_history
        return is_kafka_history(iter_history(path))
    if fmt == "edn":
        import edn_format

        from ..linearizability.formats.edn import as_op_map, op_maps, plain

        def ops():
            for _line, chunk in op_maps(Path(path).read_text(encoding="utf-8", errors="replace"), path):
                try:
                    op = as_op_map(plain(edn_format.loads(chunk)))
                except Exception:       # a bad map: not ours to judge here (the reader names it)
                    return
                if isinstance(op, dict):
                    yield op
        return is_kafka_history(ops())
    return False


def edn_ops(path: Path) -> list[dict]:
    """The ops of a Jepsen ``history.edn``, as op dicts with ``index`` and ``time`` (the op's
    position where Jepsen's test histories leave them out). Raises FileNotFoundError, and
    :class:`~checkers.linearizability.formats.errors.FormatError` naming the line of bad EDN
    or of an op without ``type``, ``process`` or ``f``, or with an unknown ``type``."""
    from ..linearizability.formats.edn import read_edn_ops
    from ..linearizability.formats.errors import FormatError

    out = []
    for pos, (line, op) in enumerate(read_edn_ops(Path(path))):
        for field in ("type", "process", "f"):
            if field not in op:
                raise FormatError(path, line, f"op has no :{field}: {str(op)[:120]}")
        if op["type"] not in OP_TYPES:
            raise FormatError(path, line, f"unknown op type :{op['type']}: expected invoke, ok, fail or info")
        op.setdefault("index", pos)
        op.setdefault("time", pos)
        out.append(op)
    return out


def open_ops(path: Path, fmt: str) -> Callable[[], Iterator[dict]]:
    """A function returning a fresh iterator over the ops of ``path`` in ``fmt`` (jsonl:
    streamed each time; edn: read once, then served from memory). Raises ValueError for
    another format, and what the readers raise."""
    if fmt == "jsonl":
        from history import iter_history
        return lambda: iter_history(path)
    if fmt == "edn":
        ops = edn_ops(path)
        return lambda: iter(ops)
    raise ValueError(f"the Kafka workload checker reads {' and '.join(FORMATS)} histories, not {fmt!r}")

