"""Linearizability per (run, key) as a Spark job: each key's ops are checked on an
executor by the project's checker (checkers/linearizability), in parallel,
each with its own timeout."""
from __future__ import annotations

import json

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from workloads.kv import CLIENT_FS

from . import verdict
from .schema import KV_SCHEMA

RESULT_SCHEMA = ("run int, key string, valid string, ops long, anomalies long, "
                 "detail string, check_s double")


def _check_key(timeout_s: float):
    def check(pdf: pd.DataFrame) -> pd.DataFrame:
        from checkers.linearizability import check_history

        pdf = pdf.sort_values("index")
        run, key = int(pdf["run"].iloc[0]), str(pdf["key"].iloc[0])
        ops = []
        for row in pdf.itertuples(index=False):
            proc = row.process
            op = {"index": int(row.index), "time": int(row.time), "type": row.type,
                  "process": proc if proc == "nemesis" else int(proc), "f": row.f,
                  "value": json.loads(row.value) if isinstance(row.value, str) else None}
            if isinstance(row.node, str):
                op["node"] = row.node
            if isinstance(row.error, str):
                op["error"] = row.error
            ops.append(op)
        try:
            r = check_history(ops, model="register", by_key=True, timeout_s=timeout_s)
            valid = verdict.name(r.get("valid"))
            anomalies = r.get("anomalies") or []
            detail = json.dumps(anomalies[:1], default=str) if anomalies else None
            seconds = float(r.get("check_s") or 0.0)
        except Exception as e:   # a checker failure is this key's "unknown", not the job's end
            valid, anomalies, seconds = "unknown", [], 0.0
            detail = json.dumps({"error": f"{type(e).__name__}: {e}"})
        return pd.DataFrame([{"run": run, "key": key, "valid": valid, "ops": len(ops),
                              "anomalies": len(anomalies), "detail": detail, "check_s": seconds}])
    return check


def linearizability(ops: DataFrame, kv_runs: list[int], timeout_s: float) -> DataFrame:
    """Check the kv runs' client ops (read/write/cas of client processes, by the ``[k, v]``
    key of their value) with groupBy(run, key).applyInPandas. Returns
    RESULT_SCHEMA rows, one per (run, key): ``valid`` is "valid", "invalid"
    or "unknown" (timeout, memory bound, or an error named in ``detail``).
    """
    c = F.col
    kv = (ops.where(c("run").isin(kv_runs) & c("f").isin(*CLIENT_FS) & (c("process") != "nemesis"))
          .withColumn("key", F.from_json("value", KV_SCHEMA)[0])
          .select("run", "key", "index", "time", "type", "process", "f", "value", "node", "error"))
    return kv.groupBy("run", "key").applyInPandas(_check_key(timeout_s), RESULT_SCHEMA)
