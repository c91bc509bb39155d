"""The per-day tables behind ``kraft-chaos analyze``'s trends (pandas only, no matplotlib):
each run's day, runs showing each anomaly type per day, availability per day, and the
file names and columns that the plots (harness/reports/trends.py) and the page
(harness/reports/trends_page.py) share."""
from __future__ import annotations

import pandas as pd


ANOMALIES_PNG = "anomalies-per-day.png"
AVAILABILITY_PNG = "availability-per-day.png"
LATENCY_PNG = "latency-by-nemesis.png"
INDEX_HTML = "index.html"
#: Columns ``runs`` must have (besides the anomaly columns) when it has any row.
REQUIRED_COLUMNS = ("run", "date", "verdict", "availability", "latency_p50_ms",
                    "latency_p99_ms", "nemesis", "error")
#: Verdicts counted on the page, in this order (any other value is counted as itself).
VERDICTS = ("valid", "invalid", "unknown")
#: A calendar longer than this (days) is not filled in: only days with runs are drawn.
MAX_CALENDAR_DAYS = 3 * 366


# -- per-day tables ----------------------------------------------------------------


def run_days(runs: pd.DataFrame) -> pd.Series:
    """Each run's day as ``"YYYY-MM-DD"`` (same index as ``runs``), or None when
    ``date`` is missing or not a ``YYYY-MM-DD`` date (or a datetime: its day)."""
    if len(runs) == 0 or "date" not in runs.columns:
        return pd.Series([None] * len(runs), index=runs.index, dtype=object)
    col = runs["date"]
    if pd.api.types.is_datetime64_any_dtype(col):
        parsed = col
    else:
        parsed = pd.to_datetime(col.astype(object).where(col.notna(), None),
                                format="%Y-%m-%d", errors="coerce")
    return parsed.dt.strftime("%Y-%m-%d").astype(object).where(parsed.notna(), None)


def _anomaly_counts(runs: pd.DataFrame, anomaly_columns: list[str]) -> pd.DataFrame:
    """The anomaly columns as ints (missing or non-numeric counts as 0)."""
    return pd.DataFrame({c: pd.to_numeric(runs[c], errors="coerce").fillna(0).astype("int64")
                         for c in anomaly_columns}, index=runs.index)


def anomaly_runs_per_day(runs: pd.DataFrame, anomaly_columns: list[str]) -> pd.DataFrame:
    """Runs showing each anomaly type, per day.

    Returns a frame indexed by day (``"YYYY-MM-DD"`` strings, ascending, index
    name ``date``), one int column per entry of ``anomaly_columns`` in that
    order, each the number of that day's runs whose count for the type is
    > 0, and a last int column ``runs``: all of that day's runs. Only days
    with at least one run appear; runs without a usable date are left out.
    Raises ValueError when ``runs`` has rows and lacks ``date`` or an anomaly
    column.
    """
    cols = list(anomaly_columns)
    if "runs" in cols:
        raise ValueError("an anomaly column cannot be named 'runs'")
    if len(runs) == 0:
        out = pd.DataFrame({c: pd.Series(dtype="int64") for c in [*cols, "runs"]},
                           index=pd.Index([], dtype=object, name="date"))
        return out
    _require(runs, ["date", *cols])
    days = run_days(runs)
    dated = days.notna()
    shown = (_anomaly_counts(runs, cols) > 0).astype("int64")[dated]
    shown["runs"] = 1
    out = shown.groupby(days[dated].to_numpy()).sum().sort_index()
    out.index = pd.Index(list(out.index), dtype=object, name="date")
    return out.astype("int64")


def availability_per_day(runs: pd.DataFrame) -> pd.DataFrame:
    """Availability (0..1) per day over the runs that have one.

    Returns a frame indexed like ``anomaly_runs_per_day`` (days with at least
    one dated run), columns ``mean`` and ``min`` (float, NaN when none of
    the day's runs has an availability) and ``n`` (int: runs with one).
    Raises ValueError when ``runs`` has rows and lacks ``date`` or ``availability``.
    """
    if len(runs) == 0:
        return pd.DataFrame({"mean": pd.Series(dtype=float), "min": pd.Series(dtype=float),
                             "n": pd.Series(dtype="int64")},
                            index=pd.Index([], dtype=object, name="date"))
    _require(runs, ["date", "availability"])
    days = run_days(runs)
    dated = days.notna()
    avail = pd.to_numeric(runs["availability"], errors="coerce")[dated]
    g = avail.groupby(days[dated].to_numpy())
    out = pd.DataFrame({"mean": g.mean(), "min": g.min(), "n": g.count().astype("int64")}).sort_index()
    out.index = pd.Index(list(out.index), dtype=object, name="date")
    return out


def _calendar(frame: pd.DataFrame, fill) -> pd.DataFrame:
    """``frame`` (indexed by day) reindexed to every day from its first to its last,
    new days filled with ``fill``; unchanged if that is over ``MAX_CALENDAR_DAYS``."""
    if len(frame) < 2:
        return frame
    days = pd.date_range(frame.index[0], frame.index[-1], freq="D")
    if len(days) > MAX_CALENDAR_DAYS:
        return frame
    full = pd.Index(list(days.strftime("%Y-%m-%d")), dtype=object, name="date")
    return frame.reindex(full, fill_value=fill)


def _require(runs: pd.DataFrame, columns) -> None:
    missing = [c for c in columns if c not in runs.columns]
    if missing:
        raise ValueError(f"runs lacks column(s) {', '.join(missing)}")
