"""Trends over many stored runs: three PNGs and an ``index.html`` for ``kraft-chaos analyze``.

``write_trends`` takes the per-run table that ``analyze`` aggregates (one row
per run) and writes into one directory:

```
anomalies-per-day.png     per day: runs showing each anomaly type (stacked bars), runs that day (line)
availability-per-day.png  per day: mean and min availability (0..1) over the day's runs
latency-by-nemesis.png    per nemesis kind: the runs' latency p50 and p99 (ms), box plots
index.html                the three plots, verdict counts, anomaly types, non-valid runs, malformed lines
```

Days run from the first to the last dated run, days without runs included
(empty), so gaps in testing show. Runs without a usable date (``None``, or
not ``YYYY-MM-DD``) are left out of the per-day plots and counted in a note
on the page. The page is self-contained apart from the PNGs beside it (no
external JS or CSS); every piece of text from the input is escaped.
"""
from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from harness.reports.plots import FIGSIZE, _save  # noqa: E402
from harness.reports.trends_page import render_index  # noqa: E402,F401
from harness.reports.trends_tables import (ANOMALIES_PNG, AVAILABILITY_PNG, INDEX_HTML, LATENCY_PNG,  # noqa: E402,F401
                                           REQUIRED_COLUMNS, VERDICTS, _anomaly_counts, _require,
                                           _calendar, anomaly_runs_per_day, availability_per_day, run_days)

#: More days than this on an axis: only about ``TICK_LABELS_MAX`` date labels are drawn.
THIN_TICKS_OVER = 60
TICK_LABELS_MAX = 30
#: More days than this on an axis: date labels are rotated.
ROTATE_TICKS_OVER = 7
#: Latency values spanning more than this factor (two decades) get a log y-axis.
LOG_SPAN = 100.0
#: Colours of the latency quantiles.
QUANTILE_COLOURS = {"latency_p50_ms": "#81BFFC", "latency_p99_ms": "#FFA400"}
#: Colour of the anomaly plot's right axis and its line (runs per day): a purple that no
#: anomaly type's colour (tab10/tab20) is.
RUNS_COLOUR = "#6A0DAD"
#: Top of the anomaly plot's axes over the highest bar or point: room for the legend.
HEADROOM = 1.35


def day_tick_positions(n_days: int) -> list[int]:
    """Positions (0..n_days-1) of the days whose date label is drawn: all of them up
    to ``THIN_TICKS_OVER`` days, else every k-th, about ``TICK_LABELS_MAX`` in all."""
    if n_days <= THIN_TICKS_OVER:
        return list(range(n_days))
    return list(range(0, n_days, math.ceil(n_days / TICK_LABELS_MAX)))


# -- plots -------------------------------------------------------------------------


def _text(s) -> str:
    """Data text safe for matplotlib (no mathtext from a stray ``$``)."""
    return str(s).replace("$", r"\$")


def _day_axis(ax, days: list[str]) -> None:
    pos = day_tick_positions(len(days))
    ax.set_xticks(pos)
    ax.set_xticklabels([days[i] for i in pos])
    if len(days) > ROTATE_TICKS_OVER:
        plt.setp(ax.get_xticklabels(), rotation=45, ha="right", rotation_mode="anchor")
    ax.set_xlim(-0.6, len(days) - 0.4)
    ax.set_xlabel("day")


def _no_data(ax, what: str) -> None:
    ax.text(0.5, 0.5, f"no data ({what})", transform=ax.transAxes, ha="center", va="center",
            fontsize=14, color="gray")
    ax.set_xticks([])
    ax.set_yticks([])


def _type_colours(anomaly_columns: list[str]) -> dict[str, tuple]:
    """One colour per anomaly type, by its position in ``anomaly_columns`` (stable across pages)."""
    cmap = plt.get_cmap("tab10" if len(anomaly_columns) <= 10 else "tab20")
    return {c: cmap(i % cmap.N) for i, c in enumerate(anomaly_columns)}


def plot_anomalies_per_day(per_day: pd.DataFrame, anomaly_columns: list[str], path: Path) -> None:
    """``anomalies-per-day.png`` (:func:`anomalies_figure`), saved to ``path``."""
    _save(anomalies_figure(per_day, anomaly_columns), path)


def anomalies_figure(per_day: pd.DataFrame, anomaly_columns: list[str]):
    """The anomalies-per-day figure: for each day, stacked bars of the runs showing each
    anomaly type (a run showing two types counts in both) against the left axis,
    and the day's number of runs as a dashed line against the right axis. The
    two axes are told apart by their labels ("left"/"right"), and the right
    one, its ticks, spine and line share :data:`RUNS_COLOUR`, which no
    anomaly type uses; the legend says which axis each entry is read on.
    ``per_day`` is ``anomaly_runs_per_day``'s frame; a "no data" placeholder when
    it is empty. Returns the matplotlib Figure (not yet saved)."""
    fig, ax = plt.subplots(figsize=FIGSIZE)
    if len(per_day) == 0:
        _no_data(ax, "no dated runs")
        ax.set_title("anomalies per day")
        return fig
    per_day = _calendar(per_day, 0)
    days = list(per_day.index)
    x = np.arange(len(days))
    colours = _type_colours(anomaly_columns)
    bottom = np.zeros(len(days))
    for c in anomaly_columns:
        ys = per_day[c].to_numpy(dtype=float)
        if ys.sum() == 0:
            continue
        ax.bar(x, ys, bottom=bottom, width=0.8, color=colours[c], label=f"{_text(c)} (bars, left axis)", lw=0)
        bottom += ys
    ax.set_ylabel("left axis (bars): runs showing each anomaly")
    ax.set_ylim(0, max(1.0, bottom.max()) * HEADROOM)
    if bottom.max() == 0:
        ax.text(0.5, 0.5, "no anomalies", transform=ax.transAxes, ha="center", va="center",
                fontsize=12, color="gray")
    ax2 = ax.twinx()
    runs = per_day["runs"].to_numpy(dtype=float)
    ax2.plot(x, runs, color=RUNS_COLOUR, ls="--", marker="D", ms=4, lw=1.5,
             label="all runs that day (line, right axis)")
    ax2.set_ylim(0, max(1.0, runs.max()) * HEADROOM)
    ax2.set_ylabel("right axis (dashed line): all runs that day", color=RUNS_COLOUR)
    ax2.tick_params(axis="y", colors=RUNS_COLOUR)
    ax2.spines["right"].set_color(RUNS_COLOUR)
    ax2.spines["right"].set_linewidth(1.5)
    for a in (ax, ax2):
        a.yaxis.set_major_locator(MaxNLocator(integer=True))
    _day_axis(ax, days)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, loc="upper left", fontsize=7, ncol=3)
    ax.set_title("anomalies per day")
    return fig


def plot_availability_per_day(per_day: pd.DataFrame, path: Path) -> None:
    """``availability-per-day.png``: each day's mean (line) and min (marker) availability
    over its runs, y in 0..1. ``per_day`` is ``availability_per_day``'s frame; days
    without availability are gaps; a "no data" placeholder when there is none."""
    fig, ax = plt.subplots(figsize=FIGSIZE)
    ax.set_title("availability per day")
    if len(per_day) == 0 or per_day["mean"].isna().all():
        _no_data(ax, "no availability" if len(per_day) else "no dated runs")
        _save(fig, path)
        return
    per_day = _calendar(per_day, np.nan)
    days = list(per_day.index)
    x = np.arange(len(days))
    ax.plot(x, per_day["mean"].to_numpy(dtype=float), color="#1F77B4", marker="o", ms=4, lw=1,
            label="mean")
    ax.plot(x, per_day["min"].to_numpy(dtype=float), color="#FF1E90", marker="v", ms=5, lw=0,
            label="min")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("availability (fraction of 1 s windows)")
    _day_axis(ax, days)
    ax.legend(loc="best", fontsize=7)
    _save(fig, path)


def latency_by_nemesis(runs: pd.DataFrame) -> dict[str, dict[str, np.ndarray]]:
    """Per nemesis kind (``"none"`` first, then by name; a missing kind is ``"?"``),
    ``{"latency_p50_ms": values, "latency_p99_ms": values}``: the runs' latency
    quantiles in ms, NaN left out. Kinds whose runs have no latency at all are left out."""
    if len(runs) == 0:
        return {}
    kinds = runs["nemesis"].astype(object).where(runs["nemesis"].notna(), "?").map(str)
    out: dict[str, dict[str, np.ndarray]] = {}
    for kind in sorted(set(kinds), key=lambda k: (k != "none", k)):
        rows = runs[kinds == kind]
        vals = {q: pd.to_numeric(rows[q], errors="coerce").dropna().to_numpy(dtype=float)
                for q in QUANTILE_COLOURS}
        if any(len(v) for v in vals.values()):
            out[kind] = vals
    return out


def plot_latency_by_nemesis(runs: pd.DataFrame, path: Path) -> None:
    """``latency-by-nemesis.png``: per nemesis kind, box plots of the runs' latency
    p50 and p99 (ms) side by side, each run a dot. The y-axis is log when every
    value is > 0 and they span more than ``LOG_SPAN``; a "no data" placeholder
    when no run has a latency."""
    fig, ax = plt.subplots(figsize=FIGSIZE)
    ax.set_title("latency by nemesis")
    data = latency_by_nemesis(runs)
    if not data:
        _no_data(ax, "no latency")
        _save(fig, path)
        return
    rng = np.random.default_rng(0)  # jitter of the dots; fixed so the file is repeatable
    kinds = list(data)
    every = np.concatenate([v for d in data.values() for v in d.values()])
    for j, (q, colour) in enumerate(QUANTILE_COLOURS.items()):
        offset = -0.2 + 0.4 * j
        for i, kind in enumerate(kinds):
            vals = data[kind][q]
            if len(vals) == 0:
                continue
            pos = i + offset
            ax.boxplot([vals], positions=[pos], widths=0.32, patch_artist=True, showfliers=False,
                       boxprops={"facecolor": colour, "alpha": 0.5},
                       medianprops={"color": "black"}, manage_ticks=False)
            ax.scatter(pos + rng.uniform(-0.08, 0.08, len(vals)), vals, s=8, color=colour,
                       edgecolors="black", linewidths=0.3, zorder=3,
                       label=q.removeprefix("latency_").removesuffix("_ms") if i == 0 else None)
    if (every > 0).all() and every.max() / every.min() > LOG_SPAN:
        ax.set_yscale("log")
    ax.set_xticks(range(len(kinds)))
    n = {k: max(len(v) for v in data[k].values()) for k in kinds}
    ax.set_xticklabels([f"{_text(k)}\n({n[k]} runs)" for k in kinds], fontsize=8)
    if len(kinds) > 6:
        plt.setp(ax.get_xticklabels(), rotation=30, ha="right", rotation_mode="anchor")
    ax.set_xlim(-0.6, len(kinds) - 0.4)
    ax.set_xlabel("nemesis")
    ax.set_ylabel("latency (ms)")
    ax.legend(loc="best", fontsize=7)
    _save(fig, path)


def write_trends(runs: pd.DataFrame, anomaly_types: pd.DataFrame, out_dir: Path,
                 anomaly_columns: list[str], malformed: list[dict] | None = None) -> list[Path]:
    """Write the three trend PNGs and ``index.html`` into ``out_dir`` (created).

    ``runs``: one row per run, with at least the columns ``REQUIRED_COLUMNS``
    (``run`` str, ``date`` ``"YYYY-MM-DD"`` or None, ``verdict``
    ``"valid"``/``"invalid"``/``"unknown"``, ``availability`` 0..1 or NaN,
    ``latency_p50_ms`` / ``latency_p99_ms`` in ms or NaN, ``nemesis`` str,
    ``error`` str or None) and one int column per entry of ``anomaly_columns``
    (the anomaly's count in that run; a run "shows" the type when it is > 0).
    Other columns are ignored, apart from ``synthetic`` (bool), counted on
    the page. ``anomaly_types``: one row per type (``anomaly``, ``runs``,
    ``total``), shown as a table as given. ``malformed``: ``{"file", "line",
    "reason"}`` per input line ``analyze`` could not read.

    An empty ``runs`` (no rows, any columns) gives "no data" plots and a
    page that says there are no runs. Returns the paths of
    ``anomalies-per-day.png``, ``availability-per-day.png``,
    ``latency-by-nemesis.png`` and ``index.html``, in that order. Raises
    ValueError when ``runs`` has rows and lacks a required or anomaly
    column, OSError when ``out_dir`` cannot be written.
    """
    out_dir = Path(out_dir)
    anomaly_columns = list(anomaly_columns)
    if len(runs):
        _require(runs, [*REQUIRED_COLUMNS, *anomaly_columns])
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / ANOMALIES_PNG, out_dir / AVAILABILITY_PNG, out_dir / LATENCY_PNG,
             out_dir / INDEX_HTML]
    plot_anomalies_per_day(anomaly_runs_per_day(runs, anomaly_columns), anomaly_columns, paths[0])
    plot_availability_per_day(availability_per_day(runs), paths[1])
    plot_latency_by_nemesis(runs, paths[2])
    paths[3].write_text(render_index(runs, anomaly_types, anomaly_columns, malformed), encoding="utf-8")
    return paths
