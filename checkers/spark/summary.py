"""The analysis's summary tables: one row per run, one row per anomaly type (Parquet and CSV)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from checkers import log_safety
from checkers.leadership import NEMESIS_AND_MONITOR_CHECKERS
from checkers.queue_checker import QUEUE_KINDS

#: The checkers the Spark jobs (and the driver's leadership pass) compute.
SPARK_CHECKERS = (*log_safety.CHECKERS, "linearizability", *NEMESIS_AND_MONITOR_CHECKERS)
#: Checker names, as in results.json, and their summary columns: the Spark ones, then those
#: run on the driver by their Python fold checkers (analyze.python_checkers): the queue
#: workload's kinds (Jepsen's names; lost-write, duplicate, inconsistent-offsets and phantom
#: share the append workload's columns), membership and liveness. Each name once.
CHECKERS = tuple(dict.fromkeys((*SPARK_CHECKERS, *QUEUE_KINDS, "membership", "liveness")))
ANOMALY_COLUMNS = [name.replace("-", "_") for name in CHECKERS]

RUN_COLUMNS = ["run", "test", "date", "workload", "synthetic", "verdict", "ops", "client_ops", "ok",
               "fail", "info", "availability", "latency_p50_ms", "latency_p99_ms", "nemesis", "seed",
               "commit", "malformed_lines", "error", *ANOMALY_COLUMNS]


def runs_table(rows: list[dict]) -> pd.DataFrame:
    """The per-run table from the analysis's run rows (dicts with RUN_COLUMNS keys;
    missing keys become null), in RUN_COLUMNS order, sorted by date then run."""
    df = pd.DataFrame(rows, columns=RUN_COLUMNS)
    for col in ANOMALY_COLUMNS + ["ops", "client_ops", "ok", "fail", "info", "malformed_lines"]:
        df[col] = pd.to_numeric(df[col], errors="coerce").fillna(0).astype("int64")
    for col in ("availability", "latency_p50_ms", "latency_p99_ms"):
        df[col] = pd.to_numeric(df[col], errors="coerce").astype("float64")
    df["seed"] = pd.to_numeric(df["seed"], errors="coerce").astype("Int64")
    df["synthetic"] = df["synthetic"].fillna(False).astype(bool)
    for col in ("run", "test", "date", "workload", "verdict", "nemesis", "commit", "error"):
        df[col] = df[col].astype("object").where(df[col].notna(), None)
    return df.sort_values(["date", "run"], na_position="last", kind="stable").reset_index(drop=True)


def anomaly_types_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per anomaly type: ``anomaly`` (checker name), ``runs`` (runs showing it),
    ``total`` (anomalies over all runs)."""
    return pd.DataFrame([{"anomaly": name, "runs": int((runs[col] > 0).sum()) if len(runs) else 0,
                          "total": int(runs[col].sum()) if len(runs) else 0}
                         for name, col in zip(CHECKERS, ANOMALY_COLUMNS)])


def write_tables(runs: pd.DataFrame, types: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Write ``runs.parquet``, ``runs.csv``, ``anomaly-types.parquet`` and ``anomaly-types.csv``
    into ``out_dir``; returns the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, df in (("runs", runs), ("anomaly-types", types)):
        pq, csv = out_dir / f"{name}.parquet", out_dir / f"{name}.csv"
        df.to_parquet(pq, index=False)
        df.to_csv(csv, index=False)
        paths += [pq, csv]
    return paths
