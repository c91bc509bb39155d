"""Checking a stored run: the checkers its workload declares, over its history and node data.

``kraft-chaos check STORE_DIR`` and the end of every run call
:func:`check_run_dir`. The workload (``test.json``'s ``config.workload``)
names its checkers (workloads/registry.py); the history is streamed through
them (checkers/fold.py), never held whole unless a checker keeps it. The target
(``config.db``) says how its node data is read (``TargetSpec.node_data``,
targets/registry.py): :func:`run_target` hands that to the checkers, which know no target.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Mapping

from checkers.fold import CheckContext, RunTarget
from checkers.registry import check_all_folds
from harness.reports.plot_data import PlotFold
from harness.reports.timeline import REPORT_MAX_BYTES, TimelineFold, write_timeline
from history import iter_history, store
from history.node_data import read_nodes
from targets.registry import DEFAULT_TARGET, target_spec
from workloads.registry import workload_checkers, workload_spec

log = logging.getLogger("kraft_chaos.check")


def run_config(run_dir: Path) -> dict:
    """``test.json``'s ``config`` of a stored run, or ``{}``."""
    test = store.read_test_json(run_dir) or {}
    config = test.get("config") if isinstance(test, dict) else None
    return config if isinstance(config, dict) else {}


def run_checker_names(run_dir: Path) -> tuple[str, ...]:
    """The checker names of a stored run's workload (``config.workload``, "append" when absent).
    Raises ValueError for a workload this harness does not know."""
    try:
        return workload_checkers(run_config(run_dir).get("workload", "append"))
    except ValueError as e:
        raise ValueError(f"{run_dir}: test.json names {e}") from None


def run_workload(run_dir: Path):
    """The :class:`workloads.registry.WorkloadSpec` of a stored run (``config.workload``,
    "append" when absent). Raises ValueError for a workload this harness does not know."""
    name = run_config(run_dir).get("workload", "append")
    try:
        return workload_spec(name)
    except ValueError as e:
        raise ValueError(f"{run_dir}: test.json names {e}") from None


def run_target(config: Mapping) -> RunTarget:
    """What the checkers know of a stored run's target (``config``: its ``test.json``'s
    ``config``; ``db`` absent: :data:`targets.registry.DEFAULT_TARGET`): its node data
    reader, default kraft.version and the files it fsyncs before renaming into place
    (``TargetSpec.node_data``, ``default_kraft_version``, ``synced_files``).
    Raises ValueError for a target this harness does not know."""
    name = config.get("db") or DEFAULT_TARGET
    try:
        spec = target_spec(name)
    except ValueError as e:
        raise ValueError(f"test.json names {e}") from None
    return RunTarget(node_data=spec.node_data, default_kraft_version=spec.default_kraft_version,
                     synced_files=spec.synced_files)


def run_workload_name(run_dir: Path) -> str:
    """The workload name of a stored run (see :func:`run_workload`)."""
    return run_workload(run_dir).name


def check_run_dir(run_dir: Path, out_dir: Path | None = None, options: dict | None = None) -> dict:
    """Run the checkers on a stored run and (re)write its ``results.json``.

    Reads ``history.jsonl``, ``test.json`` (which workload ran, hence which
    checkers; which target, hence how its node data is read: :func:`run_target`) and
    ``nodes/`` (node data is left out when ``nodes/`` holds none), and also writes
    ``latency-raw.png``, ``rate.png`` and ``latency-quantiles.png`` (harness/reports/plots.py)
    and, for a history of at most ``REPORT_MAX_BYTES``, ``timeline.html``
    (harness/reports/timeline.py). With ``out_dir`` (created if need be) those files
    go there and the run directory is only read. ``options``: the checkers' options given to
    ``check`` (``CheckContext.options``, e.g. ``ww_deps``). Returns ``{"valid", "anomalies": {checker: count},
    "checkers": {checker: result}, "stats": ..., "faults": which faults landed, per family and
    kind (checkers/fault_report.py)}``. Raises
    ``history.HistoryError`` (with the line number) for a malformed history,
    ``FileNotFoundError`` when there is none, ValueError for an unknown
    workload or target in test.json, OSError when ``out_dir`` cannot be written.
    """

    run_dir = Path(run_dir)
    names = run_checker_names(run_dir)
    config = run_config(run_dir)
    target = run_target(config)
    path = store.history_path(run_dir)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no history")
    ndir = store.nodes_dir(run_dir)
    nodes = read_nodes(ndir, target.node_data) if ndir.is_dir() else None
    dest = run_dir if out_dir is None else Path(out_dir)     # where reports go (linearizability.html too)
    dest.mkdir(parents=True, exist_ok=True)
    ctx = CheckContext(run_dir=dest, config=config, target=target, options=options or {})
    from harness.reports.plots import write_plots      # deferred: matplotlib
    extra = {"plots": PlotFold()}
    if path.stat().st_size <= REPORT_MAX_BYTES:
        extra["timeline"] = TimelineFold()
    raw = check_all_folds(lambda: iter_history(path), names, nodes or None, ctx, extra=extra)
    results = {"valid": raw["valid"], "anomalies": raw["anomaly_counts"],
               "checkers": raw["checkers"], "stats": raw["stats"], "faults": raw["faults"]}
    store.write_json(store.results_path(dest), results)
    try:
        write_plots(raw["extra"]["plots"], dest)
    except Exception as e:   # a plot must never cost the verdict
        log.error("could not write plots: %r", e)
    if "timeline" in raw["extra"]:
        try:
            write_timeline(raw["extra"]["timeline"], dest, f"timeline: {run_dir.name}")
        except Exception as e:   # nor the timeline
            log.error("could not write timeline.html: %r", e)
    return results
