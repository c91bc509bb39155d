"""``kraft-chaos export --parquet``: histories to Parquet, for stores too large to re-read as JSON."""
from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from .ingest import read_runs
from .runs import RunInfo
from .schema import CORRUPT


def export_parquet(spark: SparkSession, runs: list[RunInfo], out: Path) -> dict:
    """Write every run's history lines, read with HISTORY_SCHEMA, to one Parquet dataset
    at ``out`` partitioned by ``run`` (the run's name with ``/`` as ``__``).

    Columns: the history fields (``value`` as its raw JSON text), ``_corrupt``
    (the raw text of a malformed line, else null: nothing is dropped). Returns
    ``{"ops": rows written, "malformed": rows with _corrupt}``.
    """
    df = read_runs(spark, runs, lambda r: r.name.replace("/", "__"), "string")
    df.write.mode("overwrite").partitionBy("run").parquet(str(out))
    n = spark.read.parquet(str(out)).agg(F.count("*").alias("ops"), F.count(CORRUPT).alias("malformed")).first()
    return {"ops": n["ops"], "malformed": n["malformed"]}
