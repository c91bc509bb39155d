"""Finding the runs to analyse: every run under a store root, or a glob of history files."""
from __future__ import annotations

import dataclasses
import datetime as _dt
import glob
import re
from pathlib import Path

from history import store
from checkers.node_data import KAFKA_METADATA_DIR, KAFKA_METADATA_PARTITION

_STAMP = re.compile(r"^(\d{4})(\d{2})(\d{2})T")


@dataclasses.dataclass
class RunInfo:
    """One run to analyse.

    ``run_id``: dense int id in this analysis; ``name``: the run's path
    relative to the store root (``<test>/<timestamp>``), or the history's
    path for a loose file; ``history``: absolute path of its history file;
    ``workload``: from test.json (``append`` when absent: loose histories
    are append histories); ``date``: ``YYYY-MM-DD`` from the timestamp folder
    or test.json, else None; ``has_nodes``: ``nodes/`` holds node data; ``config``:
    test.json's ``config`` (``{}`` when absent).
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


def run_info(run_id: int, history: Path, root: Path | None) -> RunInfo:
    """Describe the run whose history is ``history`` (reads its test.json, if any).

    A test.json that is not JSON is recorded in ``error`` (the run is still
    analysed, as an append run).
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
    nd = store.nodes_dir(run_dir)
    # a node's data as checkers.node_data.load_node_data reads it: ``data/``, or a Kafka
    # node's ``metadata/__cluster_metadata-0`` (which has no ``data/``)
    info.has_nodes = nd.is_dir() and any(
        (p / "data").is_dir() or (p / KAFKA_METADATA_DIR / KAFKA_METADATA_PARTITION).is_dir()
        for p in nd.iterdir() if p.is_dir())
    return info


def find_runs(target: str) -> list[RunInfo]:
    """The runs under a store root (every ``history.jsonl`` below it; ``latest``
    links are not followed twice), or the files matching a glob.

    Raises FileNotFoundError naming ``target`` when nothing matches.
    """
    p = Path(target)
    if p.is_dir() and (p / store.HISTORY).is_file():     # one run directory: named test/timestamp
        runs = [run_info(0, (p / store.HISTORY).resolve(), p.resolve().parent.parent)]
    elif p.is_dir():
        root = p.resolve()
        found = sorted({h.resolve() for h in p.rglob(store.HISTORY)
                        if store.LATEST not in h.relative_to(p).parts})
        runs = [run_info(i, h, root) for i, h in enumerate(found)]
    elif p.is_file():
        runs = [run_info(0, p.resolve(), None)]
    else:
        files = sorted(Path(f).resolve() for f in glob.glob(target, recursive=True) if Path(f).is_file())
        runs = [run_info(i, h, None) for i, h in enumerate(files)]
    if not runs:
        raise FileNotFoundError(f"{target}: no runs (no {store.HISTORY} below it, and no file matches it)")
    return runs

