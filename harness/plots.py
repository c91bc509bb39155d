"""Jepsen's performance plots of a history: ``latency-raw.png`` and ``rate.png``.

Both have time (s since the test started) on x, and the nemesis's faults as
shaded bands, one colour per fault name, so a latency spike or a drop in
throughput can be matched to the fault that caused it. Only the history is
read.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

from history import NEMESIS, pair_ops  # noqa: E402

#: Marker colour per completion type (Jepsen's palette: ok blue, info orange, fail pink).
TYPE_COLOURS = {"ok": "#81BFFC", "info": "#FFA400", "fail": "#FF1E90"}
FAULT_COLOURS = {"partition": "#C5A0AF", "kill": "#E9A4A0", "pause": "#A0C5E9", "crash": "#E9D3A0"}
#: Width of a throughput bucket (s).
RATE_BUCKET_S = 1.0
#: Size (inches) and resolution of every PNG here and in harness/trends.py.
FIGSIZE = (10, 4.5)
DPI = 110


def _save(fig, path: Path) -> None:
    """Lay out ``fig``, write it to ``path`` at :data:`DPI` and close it."""
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def fault_intervals(history: list[dict]) -> list[tuple[str, float, float]]:
    """(fault name, start s, stop s) for each fault, from the nemesis's start and stop ops.

    A fault still active at the end of the history runs to its last op.
    """
    end = history[-1]["time"] / 1e9 if history else 0.0
    active: dict[str, float] = {}
    out = []
    for op in history:
        if op["process"] != NEMESIS or op["type"] != "info":
            continue
        phase, _, name = op["f"].partition("-")
        if phase == "start":
            active[name] = op["time"] / 1e9
        elif phase == "stop" and name in active:
            out.append((name, active.pop(name), op["time"] / 1e9))
    out.extend((name, t, end) for name, t in active.items())
    return sorted(out, key=lambda x: x[1])


def _shade(ax, history: list[dict]) -> None:
    seen = set()
    for name, t0, t1 in fault_intervals(history):
        ax.axvspan(t0, t1, color=FAULT_COLOURS.get(name, "#DDDDDD"), alpha=0.35, lw=0,
                   label=None if name in seen else name)
        seen.add(name)


def plot_latency(history: list[dict], path: Path) -> None:
    """``latency-raw.png``: each client op's latency (ms, log scale) at its invoke time,
    one marker shape per f and one colour per completion type."""
    fig, ax = plt.subplots(figsize=FIGSIZE)
    _shade(ax, history)
    shapes: dict[str, str] = {}
    points: dict[tuple[str, str], tuple[list[float], list[float]]] = {}
    for inv, comp in pair_ops(history):
        if comp is None or inv["process"] == NEMESIS:
            continue
        shapes.setdefault(inv["f"], "osD^v<>"[len(shapes) % 7])
        xs, ys = points.setdefault((inv["f"], comp["type"]), ([], []))
        xs.append(inv["time"] / 1e9)
        ys.append(max((comp["time"] - inv["time"]) / 1e6, 1e-3))
    for (f, t), (xs, ys) in sorted(points.items()):
        ax.scatter(xs, ys, s=4, marker=shapes[f], color=TYPE_COLOURS.get(t, "gray"),
                   label=f"{f} {t}", linewidths=0)
    ax.set_yscale("log")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("latency (ms)")
    ax.set_title("latency-raw")
    ax.legend(loc="upper right", fontsize=7, markerscale=3, ncol=2)
    _save(fig, path)


def plot_rate(history: list[dict], path: Path) -> None:
    """``rate.png``: completions per second, per f and completion type."""
    fig, ax = plt.subplots(figsize=FIGSIZE)
    _shade(ax, history)
    buckets: dict[tuple[str, str], dict[int, int]] = {}
    for op in history:
        if op["process"] == NEMESIS or op["type"] == "invoke":
            continue
        b = buckets.setdefault((op["f"], op["type"]), {})
        k = int(op["time"] / 1e9 // RATE_BUCKET_S)
        b[k] = b.get(k, 0) + 1
    last = int(history[-1]["time"] / 1e9 // RATE_BUCKET_S) if history else 0
    xs = [k * RATE_BUCKET_S for k in range(last + 1)]
    for (f, t), b in sorted(buckets.items()):
        ax.plot(xs, [b.get(k, 0) / RATE_BUCKET_S for k in range(last + 1)], lw=1,
                color=TYPE_COLOURS.get(t, "gray"), ls="-" if f == "append" else ":",
                label=f"{f} {t}")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("throughput (ops/s)")
    ax.set_title("rate")
    ax.legend(loc="upper right", fontsize=7, ncol=2)
    _save(fig, path)


def write_plots(history: list[dict], run_dir: Path) -> list[Path]:
    """Write ``latency-raw.png`` and ``rate.png`` into ``run_dir``; returns their paths."""
    run_dir = Path(run_dir)
    paths = [run_dir / "latency-raw.png", run_dir / "rate.png"]
    plot_latency(history, paths[0])
    plot_rate(history, paths[1])
    return paths
