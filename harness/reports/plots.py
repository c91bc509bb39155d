"""Jepsen's performance plots of a history: ``latency-raw.png``, ``latency-quantiles.png``
and ``rate.png``.

Both have time (s since the test started) on x, and the nemesis's faults as
shaded bands, one colour per fault name, so a latency spike or a drop in
throughput can be matched to the fault that caused it. Only the history is
read, once, op by op (:class:`harness.reports.plot_data.PlotData`), so it may be a stream.
"""
from __future__ import annotations

import math
from array import array
from pathlib import Path
from typing import Iterable

import matplotlib
import numpy as np

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

from harness.reports.plot_data import RATE_BUCKET_S, TYPE_COLOURS, PlotData, fault_colour, fault_label  # noqa: E402

#: Latency quantiles of ``latency-quantiles.png``: (quantile, label, line colour).
QUANTILES = ((0.5, "p50", "#1F77B4"), (0.95, "p95", "#2CA02C"), (0.99, "p99", "#FF7F0E"),
             (1.0, "max", "#D62728"))
#: ``latency-quantiles.png`` aims at about this many windows over the run (each at least 1 s).
QUANTILE_WINDOWS = 60
#: Size (inches) and resolution of every PNG here and in harness/reports/trends.py.
FIGSIZE = (10, 4.5)
DPI = 110


def _save(fig, path: Path) -> None:
    """Lay out ``fig``, write it to ``path`` at :data:`DPI` and close it."""
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def _shade(ax, data: PlotData) -> None:
    seen = set()
    for name, t0, t1 in data.fault_intervals():
        ax.axvspan(t0, t1, color=fault_colour(name), alpha=0.35, lw=0,
                   label=None if name in seen else fault_label(name))
        seen.add(name)


def draw_latency(data: PlotData, path: Path) -> None:
    """``latency-raw.png``: each client op's latency (ms, log scale) at its invoke time,
    one marker shape per f and one colour per completion type."""
    fig, ax = plt.subplots(figsize=FIGSIZE)
    _shade(ax, data)
    shapes = {f: "osD^v<>"[i % 7] for i, f in enumerate(sorted(data.first_invoke, key=data.first_invoke.get))}
    for (f, t), (xs, ys, order) in sorted(data.points.items()):
        by_invoke = np.argsort(np.frombuffer(order, dtype=np.int64), kind="stable")
        ax.scatter(np.frombuffer(xs)[by_invoke], np.frombuffer(ys)[by_invoke], s=4, marker=shapes[f],
                   color=TYPE_COLOURS.get(t, "gray"), label=f"{f} {t}", linewidths=0)
    ax.set_yscale("log")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("latency (ms)")
    ax.set_title("latency-raw")
    ax.legend(loc="upper right", fontsize=7, markerscale=3, ncol=2)
    _save(fig, path)


def draw_rate(data: PlotData, path: Path) -> None:
    """``rate.png``: completions per second, per f and completion type."""
    fig, ax = plt.subplots(figsize=FIGSIZE)
    _shade(ax, data)
    last = int(data.end // RATE_BUCKET_S) if data.end is not None else 0
    xs = [k * RATE_BUCKET_S for k in range(last + 1)]
    for (f, t), b in sorted(data.buckets.items()):
        ax.plot(xs, [b.get(k, 0) / RATE_BUCKET_S for k in range(last + 1)], lw=1,
                color=TYPE_COLOURS.get(t, "gray"), ls="-" if f == "append" else ":",
                label=f"{f} {t}")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("throughput (ops/s)")
    ax.set_title("rate")
    ax.legend(loc="upper right", fontsize=7, ncol=2)
    _save(fig, path)


def quantile_window_s(end_s: float | None) -> float:
    """The window (s) of ``latency-quantiles.png`` for a run lasting ``end_s`` s: a whole
    number of seconds, at least 1, giving about :data:`QUANTILE_WINDOWS` windows."""
    return float(max(1, math.ceil((end_s or 0.0) / QUANTILE_WINDOWS)))


def latency_quantiles(data: PlotData, window_s: float | None = None) -> dict:
    """Latency quantiles per f and window, as Jepsen's ``latency-quantiles`` computes them:
    every completed client op (ok, fail and info alike) falls in the window of its invoke
    time, and each window with ops gets the :data:`QUANTILES` of their latencies.

    Returns ``{f: (mids, {label: values})}``: ``mids`` the windows' midpoints (s since the
    test started), ``values`` latencies (ms), both numpy arrays of one length.
    ``window_s`` defaults to :func:`quantile_window_s` of the run's length.
    """
    w = window_s or quantile_window_s(data.end)
    by_f: dict[str, list[tuple[array, array]]] = {}
    for (f, _t), (xs, ys, _order) in data.points.items():
        by_f.setdefault(f, []).append((xs, ys))
    out = {}
    for f, parts in sorted(by_f.items()):
        x = np.concatenate([np.frombuffer(p[0]) for p in parts])
        y = np.concatenate([np.frombuffer(p[1]) for p in parts])
        if not len(x):
            continue
        bucket = np.floor(x / w).astype(np.int64)
        order = np.argsort(bucket, kind="stable")
        bucket, y = bucket[order], y[order]
        keys, starts = np.unique(bucket, return_index=True)
        groups = np.split(y, starts[1:])
        values = {label: np.array([np.quantile(g, q) for g in groups]) for q, label, _c in QUANTILES}
        out[f] = ((keys + 0.5) * w, values)
    return out


def draw_latency_quantiles(data: PlotData, path: Path, window_s: float | None = None) -> None:
    """``latency-quantiles.png``: p50, p95, p99 and max latency (ms, log scale) of each f per
    window (:func:`latency_quantiles`), one colour per quantile and one marker per f,
    faults shaded."""
    fig, ax = plt.subplots(figsize=FIGSIZE)
    _shade(ax, data)
    w = window_s or quantile_window_s(data.end)
    colours = {label: c for _q, label, c in QUANTILES}
    for i, (f, (mids, values)) in enumerate(latency_quantiles(data, w).items()):
        for label, ys in values.items():
            ax.plot(mids, ys, lw=1, marker="osD^v<>"[i % 7], ms=3, color=colours[label],
                    ls="-" if i == 0 else ":", label=f"{f} {label}")
    ax.set_yscale("log")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("latency (ms)")
    ax.set_title(f"latency-quantiles ({w:g} s windows)")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper right", fontsize=7, ncol=3)
    _save(fig, path)


def plot_latency(history: list[dict], path: Path) -> None:
    """``latency-raw.png`` of an op list (see :func:`draw_latency`)."""
    draw_latency(PlotData.of(history), path)


def plot_rate(history: list[dict], path: Path) -> None:
    """``rate.png`` of an op list (see :func:`draw_rate`)."""
    draw_rate(PlotData.of(history), path)


def write_plots(history: "Iterable[dict] | PlotData", run_dir: Path) -> list[Path]:
    """Write ``latency-raw.png``, ``rate.png`` and ``latency-quantiles.png`` into ``run_dir``;
    returns their paths.

    ``history``: the ops in index order, a list or a stream (e.g.
    ``history.iter_history(path)``), read once; or a :class:`PlotData`
    already fed (e.g. during the checkers' pass).
    """
    run_dir = Path(run_dir)
    paths = [run_dir / "latency-raw.png", run_dir / "rate.png", run_dir / "latency-quantiles.png"]
    data = history if isinstance(history, PlotData) else PlotData.of(history)
    draw_latency(data, paths[0])
    draw_rate(data, paths[1])
    draw_latency_quantiles(data, paths[2])
    return paths
