"""Our own ``history.jsonl`` (DEVELOPERS.md, "History")."""
from __future__ import annotations

from pathlib import Path

from ..model import Model
from .pairing import Paired, pair_history

#: functions our histories hold beside any model's ops: the quorum monitor's samples
#: (workloads/monitor.py)
SIDE_FUNCTIONS = ("describe-quorum",)


def pair_run_history(history: list[dict], model: Model, path="history") -> Paired:
    """Pair already-read history op dicts (``history.read_history``) for ``model``.

    Source lines are taken as ``index + 1`` (one op per line from index 0).
    """
    events = [(op.get("index", i) + 1 if isinstance(op.get("index"), int) else i + 1,
               {**op, "value": tuplify(op.get("value"))}) for i, op in enumerate(history)]
    return pair_history(events, model, path, side=SIDE_FUNCTIONS)


def read_jsonl(path: Path, model: Model) -> Paired:
    """Read a history.jsonl and pair it for ``model``.

    Raises ``history.HistoryError`` naming the file and line of a
    truncated or non-JSON line, or of an op missing a field, and
    :class:`~.errors.FormatError` for ops that do not pair.
    """
    from history import read_history
    return pair_run_history(read_history(Path(path)), model, path)


def tuplify(v):
    """JSON lists as tuples (hashable model values), recursively."""
    if isinstance(v, list):
        return tuple(tuplify(x) for x in v)
    return v
