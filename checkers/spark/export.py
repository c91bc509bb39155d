"""``kraft-chaos export --parquet``: histories to Parquet, for stores too large to re-read as JSON."""
from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from .ingest import file_key, file_key_column
from .runs import RunInfo
from .schema import CORRUPT, HISTORY_SCHEMA


def export_parquet(spark: SparkSession, runs: list[RunInfo], out: Path) -> dict:
    """Write every run's history lines, read with HISTORY_SCHEMA, to one Parquet dataset
    at ``out`` partitioned by ``run`` (the run's name with ``/`` as ``__``).

    Columns: the history fields (``value`` as its raw JSON text), ``_corrupt``
    (the raw text of a malformed line, else null: nothing is dropped). Returns
    ``{"ops": rows written, "malformed": rows with _corrupt}``.
    """
    names = spark.createDataFrame([(file_key(spark, r), r.name.replace("/", "__")) for r in runs],
                                  "uri string, run string")
    df = (spark.read.schema(HISTORY_SCHEMA).option("mode", "PERMISSIVE")
          .option("columnNameOfCorruptRecord", CORRUPT).json([str(r.history) for r in runs])
          .withColumn("uri", file_key_column())
          .join(F.broadcast(names), "uri").drop("uri"))
    df.write.mode("overwrite").partitionBy("run").parquet(str(out))
    written = spark.read.parquet(str(out))
    return {"ops": written.count(), "malformed": written.where(F.col(CORRUPT).isNotNull()).count()}
