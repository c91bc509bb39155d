"""``index.html`` of ``kraft-chaos analyze``'s trends: the three plots, verdict counts, anomaly
types, non-valid runs and malformed lines, self-contained apart from the PNGs beside it;
every piece of text from the input is escaped."""
from __future__ import annotations

import html
import math

import numpy as np
import pandas as pd

from harness.reports.trends_tables import (ANOMALIES_PNG, AVAILABILITY_PNG, LATENCY_PNG, VERDICTS, _anomaly_counts,
                                           run_days)


# -- page --------------------------------------------------------------------------

_CSS = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
td.num { text-align: right; }
img { max-width: 100%; display: block; margin: 0.5em 0 1.5em; }
.note { color: #666; }
"""


def _e(v) -> str:
    return html.escape(str(v), quote=True)


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA or v is pd.NaT


def _cell(v) -> str:
    """A table cell's text: empty for a missing value, ints without ``.0``."""
    if _missing(v):
        return ""
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    return str(v)


def _table(header: list[str], rows: list[list], classes: list[str] | None = None) -> str:
    out = ["<table>", "<tr>" + "".join(f"<th>{_e(h)}</th>" for h in header) + "</tr>"]
    for row in rows:
        cells = []
        for j, v in enumerate(row):
            cls = classes[j] if classes else ""
            cells.append(f'<td class="{_e(cls)}">{_e(_cell(v))}</td>' if cls else f"<td>{_e(_cell(v))}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _verdict_line(runs: pd.DataFrame) -> str:
    verdicts = runs["verdict"].astype(object).where(runs["verdict"].notna(), "?").map(str)
    counts = verdicts.value_counts()
    parts = [f"{int(counts.get(v, 0))} {v}" for v in VERDICTS]
    parts += [f"{int(counts[v])} {v}" for v in sorted(counts.index) if v not in VERDICTS]
    line = f"{len(runs)} runs: " + ", ".join(parts)
    if "synthetic" in runs.columns:
        synthetic = int(runs["synthetic"].fillna(False).astype(bool).sum())
        if synthetic:
            line += f" ({synthetic} synthetic)"
    return _e(line)


def _non_valid_rows(runs: pd.DataFrame, anomaly_columns: list[str]) -> list[list]:
    verdicts = runs["verdict"].astype(object).where(runs["verdict"].notna(), "?").map(str)
    bad = runs[verdicts != "valid"]
    counts = _anomaly_counts(bad, anomaly_columns)
    order = sorted(bad.index, key=lambda i: (verdicts[i] != "invalid", str(bad.at[i, "run"])))
    rows = []
    for i in order:
        nonzero = ", ".join(f"{c}: {counts.at[i, c]}" for c in anomaly_columns if counts.at[i, c])
        rows.append([bad.at[i, "run"], verdicts[i], nonzero, bad.at[i, "error"]])
    return rows


def render_index(runs: pd.DataFrame, anomaly_types: pd.DataFrame, anomaly_columns: list[str],
                 malformed: list[dict] | None = None) -> str:
    """The text of ``index.html`` (see ``write_trends``); the PNGs are referred to
    by their file names, relative to the page."""
    title = "kraft-chaos analysis"
    body = [f"<h1>{_e(title)}</h1>"]
    if len(runs) == 0:
        body.append("<p>No runs.</p>")
    else:
        body.append(f"<p>{_verdict_line(runs)}</p>")
        undated = int(run_days(runs).isna().sum())
        if undated:
            body.append(f'<p class="note">{undated} run{"s" if undated != 1 else ""} without a '
                        "date (missing or not YYYY-MM-DD) left out of the per-day plots.</p>")
    for name, alt in ((ANOMALIES_PNG, "anomalies per day"), (AVAILABILITY_PNG, "availability per day"),
                      (LATENCY_PNG, "latency by nemesis")):
        body.append(f'<h2>{_e(alt)}</h2>\n<img src="{_e(name)}" alt="{_e(alt)}">')
    body.append("<h2>anomaly types</h2>")
    if anomaly_types is None or len(anomaly_types) == 0:
        body.append("<p>No anomalies.</p>")
    else:
        cols = list(anomaly_types.columns)
        numeric = ["num" if pd.api.types.is_numeric_dtype(anomaly_types[c]) else "" for c in cols]
        body.append(_table(cols, anomaly_types.astype(object).values.tolist(), numeric))
    if len(runs):
        rows = _non_valid_rows(runs, anomaly_columns)
        body.append("<h2>non-valid runs</h2>")
        if rows:
            body.append(_table(["run", "verdict", "anomalies", "error"], rows))
        else:
            body.append("<p>Every run is valid.</p>")
    if malformed:
        body.append(f"<h2>malformed lines ({len(malformed)})</h2>\n<ul>")
        for m in malformed:
            body.append(f"<li><code>{_e(m.get('file', '?'))}:{_e(m.get('line', '?'))}</code>: "
                        f"{_e(m.get('reason', ''))}</li>")
        body.append("</ul>")
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{_e(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
            + "\n".join(body) + "\n</body>\n</html>\n")
