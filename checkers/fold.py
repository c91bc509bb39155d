"""Checkers as folds over a history, so a history never has to sit in memory whole.

A :class:`Checker` sees the ops in index order, one at a time, in one or
more passes (a second pass is for checks that must know the end of the
history first, e.g. the final committed log before judging each ack), and
then gives its result from what it kept and the collected node data.
:func:`run_checkers` reads the history once per pass for all of them.

Every checker's result is ``{"valid": True | False | "unknown",
"anomalies": [...], ...}``; each anomaly names the ops (by ``index``) that
show it.
"""
from __future__ import annotations

import dataclasses
import gc
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from history.node_data import NodeDataReader


@dataclasses.dataclass(frozen=True)
class RunTarget:
    """What the checkers know of a run's target (``--db``): the checkers import no target,
    so the caller that runs them over a stored run builds this from the target's
    ``TargetSpec`` (``harness.run.check.run_target``).

    ``node_data``: how the run's ``nodes/<node>/`` folders are read
    (``history.node_data``), None when unknown (no node data is read).
    ``default_kraft_version``: the kraft.version a run of the target has when its
    config names none (0 static voters, 1 KIP-853), None when unknown.
    ``synced_files``: the file names the target writes by atomic replace, fsynced before the
    rename, so that a power loss never reverts them (checkers/unsynced_checkpoint.py).
    """

    node_data: NodeDataReader | None = None
    default_kraft_version: int | None = None
    synced_files: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class CheckContext:
    """What a checker may know besides the history and node data.

    ``run_dir``: the run's store folder (for reports such as
    ``linearizability.html``), or None. ``config``: the run's test config
    (``test.json``'s ``config``: the harness's own settings, never the
    system's claims), ``{}`` when unknown. ``options``: what the check itself
    was told (``kraft-chaos check``'s checker options, e.g. ``ww_deps``),
    ``{}`` when nothing. ``target``: what is known of the run's target
    (:class:`RunTarget`; nothing by default).
    """

    run_dir: Path | None = None
    config: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    target: RunTarget = RunTarget()


class Checker:
    """Base class: a fold over the history's ops.

    Subclasses set ``passes`` (how many times they read the history) and
    implement :meth:`feed` and :meth:`result`; :meth:`begin` is called before
    each pass with its number (0-based).
    """

    passes: int = 1

    def begin(self, pass_no: int) -> None:
        """A new pass starts (``pass_no`` 0, 1, ...)."""
        self.pass_no = pass_no

    def feed(self, op: dict) -> None:
        """One op of the current pass, in index order."""
        raise NotImplementedError

    def result(self, nodes) -> dict:
        """The verdict, after the last pass. ``nodes``: ``{node: NodeData}`` or None."""
        raise NotImplementedError


class ListChecker(Checker):
    """A checker written as ``fn(history, nodes) -> result`` over the whole op list.

    It keeps every op it is fed that ``keep(op)`` accepts (default: all), so
    use it only where that subset is small. ``fn`` gets the kept ops.
    """

    def __init__(self, fn: Callable[[list[dict], Any], dict], keep: Callable[[dict], bool] | None = None):
        self.fn, self.keep, self.ops = fn, keep, []

    def feed(self, op: dict) -> None:
        if self.keep is None or self.keep(op):
            self.ops.append(op)

    def result(self, nodes) -> dict:
        return self.fn(self.ops, nodes)


def run_checkers(open_history: Callable[[], Iterable[dict]], checkers: Mapping[str, Checker],
                 nodes=None) -> dict[str, dict]:
    """Feed every op of the history to every checker, pass by pass; returns ``{name: result}``.

    ``open_history()`` yields the ops in index order and is called once per
    pass (the most any checker asks for). Raises what it raises (e.g.
    ``history.HistoryError`` for a malformed line) and what a checker raises.
    Python's cyclic garbage collector is paused meanwhile (as it was before, after): the
    checkers keep millions of small objects alive, which it would scan again and again,
    and make no cycles worth collecting.
    """
    passes = max((c.passes for c in checkers.values()), default=0)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for p in range(passes):
            active = [c for c in checkers.values() if c.passes > p]
            for c in active:
                c.begin(p)
            feeds = [c.feed for c in active]
            for op in open_history():
                for feed in feeds:
                    feed(op)
        return {name: c.result(nodes) for name, c in checkers.items()}
    finally:
        if was_enabled:
            gc.enable()


def ops_of(history: list[dict]) -> Callable[[], Iterator[dict]]:
    """An ``open_history`` over an in-memory op list."""
    return lambda: iter(history)


def check_list(checker: Checker, history: list[dict], nodes=None) -> dict:
    """Run one ``checker`` over an in-memory op list (all its passes); returns its result."""
    return run_checkers(ops_of(history), {"checker": checker}, nodes)["checker"]
