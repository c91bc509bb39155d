"""Finding the runs to analyse: every run under a store root, or a glob of history files.

What each run's target (``test.json``'s ``config.db``) means for the checkers, its node
data reader above all, comes from the caller (``target_of``: ``harness.run.check.run_target``):
the checkers import no target.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import glob
import re
from pathlib import Path
from typing import Callable, Mapping

from checkers.fold import RunTarget
from history import store
from history.node_data import holds_node_data

#: ``target_of(config) -> RunTarget``: what the checkers know of a run's target, from its
#: test.json ``config``; raises ValueError for a target it does not know
TargetOf = Callable[[Mapping], RunTarget]

_STAMP = re.compile(r"^(\d{4})(\d{2})(\d{2})T")


@dataclasses.dataclass
class RunInfo:
    """One run to analyse.

    ``run_id``: dense int id in this analysis; ``name``: the run's path
    relative to the store root (``<test>/<timestamp>``), or the history's
    path for a loose file; ``history``: absolute path of its history file;
    ``workload``: from test.json (``append`` when absent: loose histories
    are append histories); ``date``: ``YYYY-MM-DD`` from the timestamp folder
    or test.json, else None; ``has_nodes``: ``nodes/`` holds node data its target's reader
    reads; ``config``: test.json's ``config`` (``{}`` when absent); ``target``: what is
    known of its target (no node data reader when the target is unknown, which ``error`` says).
    """

    run_id: int
    name: str
    dir: Path
    history: Path
    workload: str = "append"
    seed: int | None = None
    commit: str | None = None
    nemesis: str = "none"
    date: str | None = None
    synthetic: bool = False
    has_nodes: bool = False
    error: str | None = None
    config: dict = dataclasses.field(default_factory=dict)
    target: RunTarget = RunTarget()


def _date_of(run_dir: Path, test: dict | None) -> str | None:
    date = ((test or {}).get("config") or {}).get("date")
    if isinstance(date, str) and re.match(r"^\d{4}-\d{2}-\d{2}$", date):
        return date
    m = _STAMP.match(run_dir.name)
    if m:
        try:
            return _dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3))).isoformat()
        except ValueError:
            return None
    return None


def run_info(run_id: int, history: Path, root: Path | None, target_of: TargetOf) -> RunInfo:
    """Describe the run whose history is ``history`` (reads its test.json, if any; its
    target through ``target_of``).

    A test.json that is not JSON, or that names a target ``target_of`` does not know, is
    recorded in ``error`` (the run is still analysed, as an append run in the first case,
    without node data in the second).
    """
    run_dir = history.parent
    try:
        name = str(run_dir.relative_to(root)) if root else str(history)
    except ValueError:
        name = str(history)
    info = RunInfo(run_id, name, run_dir, history.resolve())
    try:
        test = store.read_test_json(run_dir)
    except (ValueError, OSError) as e:
        info.error = f"{run_dir / store.TEST_JSON}: {e}"
        test = None
    cfg = (test or {}).get("config") or {}
    info.config = cfg if isinstance(cfg, dict) else {}
    info.workload = cfg.get("workload") or "append"
    seed = (test or {}).get("seed", cfg.get("seed"))
    info.seed = seed if isinstance(seed, int) and not isinstance(seed, bool) else None
    commit = (test or {}).get("commit")
    info.commit = commit if isinstance(commit, str) else None
    nem = cfg.get("nemesis")
    info.nemesis = "+".join(nem) if isinstance(nem, list) and nem else "none"
    info.synthetic = cfg.get("synthetic") is True
    info.date = _date_of(run_dir, test)
    try:
        info.target = target_of(info.config)
    except ValueError as e:
        info.error = f"{run_dir / store.TEST_JSON}: {e}"
    reader = info.target.node_data
    info.has_nodes = reader is not None and holds_node_data(store.nodes_dir(run_dir), reader)
    return info


def find_runs(target: str, target_of: TargetOf) -> list[RunInfo]:
    """The runs under a store root (every ``history.jsonl`` below it; ``latest``
    links are not followed twice), or the files matching a glob. ``target_of``: what
    the checkers know of a run's target (:data:`TargetOf`, see :func:`run_info`).

    Raises FileNotFoundError naming ``target`` when nothing matches.
    """
    p = Path(target)
    if p.is_dir() and (p / store.HISTORY).is_file():     # one run directory: named test/timestamp
        runs = [run_info(0, (p / store.HISTORY).resolve(), p.resolve().parent.parent, target_of)]
    elif p.is_dir():
        root = p.resolve()
        found = sorted({h.resolve() for h in p.rglob(store.HISTORY)
                        if store.LATEST not in h.relative_to(p).parts})
        runs = [run_info(i, h, root, target_of) for i, h in enumerate(found)]
    elif p.is_file():
        runs = [run_info(0, p.resolve(), None, target_of)]
    else:
        files = sorted(Path(f).resolve() for f in glob.glob(target, recursive=True) if Path(f).is_file())
        runs = [run_info(i, h, None, target_of) for i, h in enumerate(files)]
    if not runs:
        raise FileNotFoundError(f"{target}: no runs (no {store.HISTORY} below it, and no file matches it)")
    return runs

