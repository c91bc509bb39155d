"""One pass over a history: the ops of Jepsen's Kafka workload, paired and read, for the analyses.

:class:`Collector` is fed every op in history order (as a fold is) and keeps, per completed
``send`` / ``poll`` / ``txn`` op, a :class:`TxnOp` (its sends and polls, read by
:func:`checkers.kafka_txn.mops.parse_mops`), per ``assign`` / ``subscribe`` a
:class:`Subscription`, both in completion order, and each data op's real-time predecessors
(Elle's ``realtime-graph``: the ok data ops that had completed, and were not implied by a later
one, when it was invoked). Jepsen's pairing rules: a completion completes its process's open
invoke; an invoke never completed counts as ``info``. Nemesis ops, ``crash`` and
``debug-topic-partitions`` are set aside; ops of other functions are counted in ``ignored``.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

from history import NEMESIS

from .mops import DATA_FS, SUBSCRIPTION_FS, MopError, Records, norm_key, parse_mops, subscription_keys
from .server_errors import ServerErrors

#: functions of Jepsen's Kafka workload that carry nothing the checker reads
QUIET_FS = frozenset(("crash", "debug-topic-partitions"))
#: ``type`` codes
OK, INFO, FAIL = "ok", "info", "fail"


class TxnOp:
    """One completed send / poll / txn op.

    ``id``: position among the collected ops (0..). ``index``: the completion's history
    index (the invoke's for an op never completed, ``open`` True). ``invoke``: the invoke's
    index. ``type``: ok / info / fail. ``writes``: ``(key, value, offset or None)`` per send.
    ``spans``: where the records it polled are in the history's :class:`~.mops.Records`, one per
    key; ``reads``: key -> ``(offsets, values)`` polled, in order (made from the spans at each
    use). ``rt_preds``: ids of the
    ok ops that precede it in real time (a transitive reduction). ``rebalanced``: keys named
    by the op's rebalance log (Jepsen's ``:rebalance-log``), exempt from its internal poll
    checks.
    """

    __slots__ = ("id", "index", "invoke", "process", "type", "f", "writes", "spans", "store", "mops", "rt_preds",
                 "rebalanced", "open", "polled")

    def __init__(self, id: int, index: int, invoke: int, process: Any, type: str, f: str, writes: list,
                 spans: tuple, store: Records, mops: int, rt_preds: tuple, rebalanced: frozenset,
                 open: bool = False):
        self.id, self.index, self.invoke, self.process, self.type, self.f = id, index, invoke, process, type, f
        self.writes, self.spans, self.store, self.mops, self.rt_preds = writes, spans, store, mops, rt_preds
        self.rebalanced, self.open = rebalanced, open
        self.polled = bool(spans[0])            # did it poll any record?

    @property
    def reads(self) -> dict[str, tuple]:
        """Key -> ``(offsets, values)`` this op polled, in order."""
        keys, bounds = self.spans
        get = self.store.get
        return {k: get(bounds[2 * i], bounds[2 * i + 1]) for i, k in enumerate(keys)}

    def values(self) -> list[tuple[str, Sequence]]:
        """``(key, values polled)`` per key, in order."""
        keys, bounds = self.spans
        get = self.store.values
        return [(k, get(bounds[2 * i], bounds[2 * i + 1])) for i, k in enumerate(keys)]

    def ends(self) -> list[tuple[str, tuple, tuple]]:
        """``(key, (offset, value) first polled, (offset, value) last polled)`` per key."""
        keys, bounds = self.spans
        get = self.store.first_last
        return [(k, *get(bounds[2 * i], bounds[2 * i + 1])) for i, k in enumerate(keys)]

    def __repr__(self) -> str:
        return f"TxnOp({self.index}, {self.type} {self.f}, process {self.process})"


class Subscription:
    """A completed (ok or info) ``assign`` or ``subscribe``: the consumer's keys from then on.
    ``seek``: an assign that seeks its keys to the beginning (``seek_to_beginning``, Jepsen's
    ``:seek-to-beginning?``)."""

    __slots__ = ("index", "process", "type", "f", "keys", "seek")

    def __init__(self, index: int, process: Any, type: str, f: str, keys: frozenset, seek: bool):
        self.index, self.process, self.type, self.f, self.keys, self.seek = index, process, type, f, keys, seek


def _seeks(op: dict) -> bool:
    return bool(op.get("seek_to_beginning", op.get("seek-to-beginning?")))


_NO_KEYS: frozenset = frozenset()


def _rebalanced(op: dict) -> frozenset:
    log = op.get("rebalance_log", op.get("rebalance-log"))
    if not log:
        return _NO_KEYS
    keys = set()
    for event in log:
        if isinstance(event, dict):
            for k in event.get("keys") or ():
                keys.add(norm_key(k))
    return frozenset(keys)


class Collector:
    """Feed ops in history order (:meth:`feed`), then :meth:`finish`; then read ``ops``
    (:class:`TxnOp` in completion order), ``seq`` (the same and the :class:`Subscription` s,
    in completion order), ``subscribed`` (any subscribe invoked), ``ignored`` (client ops of
    other functions, by ``f``), ``problems`` (``(index, why)`` for data ops that cannot be
    read or paired), ``invoked`` (data ops invoked) and ``server_errors``
    (:class:`~.server_errors.ServerErrors`: the failed data ops' server errors)."""

    def __init__(self) -> None:
        self.ops: list[TxnOp] = []
        self.records = Records()
        self.seq: list = []
        self.open: dict[Any, list] = {}          # process -> [index, f, value, rt snapshot or seek]
        self.buffer: set[int] = set()            # ok data ops not yet implied by a later ok one
        self.subscribed = False
        self.ignored: Counter = Counter()
        self.problems: list[tuple[int, str]] = []
        self.invoked = 0
        self.server_errors = ServerErrors()

    def feed(self, op: dict) -> None:
        """One op of the history, in order."""
        process = op.get("process")
        if process == NEMESIS:
            self.server_errors.nemesis(op)
            return
        f, t = op.get("f"), op.get("type")
        if t == "invoke":
            if f in DATA_FS:
                self.invoked += 1
                snapshot = tuple(self.buffer)
            else:
                snapshot = _seeks(op)        # for an assign: whether it seeks to the beginning
                if f == "subscribe":
                    self.subscribed = True
                elif f not in SUBSCRIPTION_FS and f not in QUIET_FS:
                    self.ignored[str(f)] += 1
            prev = self.open.get(process)
            if prev is not None and prev[1] in DATA_FS:
                self.problems.append((prev[0], f"process {process} invoked op {op.get('index')} while "
                                               f"this op was still open"))
            self.open[process] = [op.get("index"), f, op.get("value"), snapshot]
            return
        inv = self.open.pop(process, None)
        if f in DATA_FS:
            if inv is None or inv[1] != f:
                why = "with no open invoke" if inv is None else f"completing a {inv[1]!r} invoke"
                self.problems.append((op.get("index"), f"{t} {f} by process {process} {why}"))
                return
            if t != OK:
                self.server_errors.completed(op, inv[2])
            self._data(op, inv, t)
        elif f in SUBSCRIPTION_FS:
            if t in (OK, INFO):
                value = op.get("value")
                if not isinstance(value, (list, tuple)) and inv is not None:
                    value = inv[2]
                try:
                    keys = subscription_keys(value)
                except MopError as e:
                    self.problems.append((op.get("index"), f"{f}: {e}"))
                    return
                seek = _seeks(op) or (inv is not None and inv[1] == f and bool(inv[3]))
                self.seq.append(Subscription(op.get("index"), process, t, f, keys, seek))

    def _data(self, op: dict, inv: list, t: str) -> None:
        value = op.get("value")
        if not isinstance(value, (list, tuple)):
            value = inv[2]
        try:
            writes, reads, n = parse_mops(value, self.records)
            rebalanced = _rebalanced(op)
        except MopError as e:
            self.problems.append((op.get("index"), f"{t} {op.get('f')} by process {op.get('process')}: {e}"))
            return
        self._add(op.get("index"), inv[0], op.get("process"), t, op.get("f"), writes, reads, n, inv[3],
                  rebalanced)

    def _add(self, index, invoke, process, t, f, writes, reads, n, preds, rebalanced, open_=False) -> TxnOp:
        o = TxnOp(len(self.ops), index, invoke, process, t, f, writes, reads, self.records, n, preds or (),
                  rebalanced, open_)
        self.ops.append(o)
        self.seq.append(o)
        if t == OK:
            if preds:
                self.buffer.difference_update(preds)
            self.buffer.add(o.id)
        return o

    def finish(self) -> None:
        """After the last op: each data op still open becomes an ``info`` op (Jepsen: its
        outcome is unknown), read from its invoke's value."""
        for process, (index, f, value, snapshot) in sorted(self.open.items(), key=lambda kv: kv[1][0] or 0):
            if f not in DATA_FS:
                continue
            try:
                writes, reads, n = parse_mops(value, self.records)
            except MopError as e:
                self.problems.append((index, f"invoke {f} by process {process}: {e}"))
                continue
            self._add(index, index, process, INFO, f, writes, reads, n, snapshot, _NO_KEYS, open_=True)
        self.open.clear()
