"""Phantom values as a Spark job: data in a read that no client appended, or whose
append failed (the Spark side of checkers/phantom.py)."""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def phantoms(values: DataFrame, records: DataFrame) -> DataFrame:
    """From :func:`values.by_value`: values seen in a read whose append was never invoked,
    or ended in ``fail``. One anomaly per value: ``run, value (text), reason``
    ("never-attempted" | "append-failed"), ``seen_count``."""
    c = F.col
    found = (values.where((c("seen_count") > 0) & (~c("attempted") | c("failed")))
             .select("run", "pnum", "ptxt", "seen_count",
                     F.when(c("failed"), F.lit("append-failed")).otherwise(F.lit("never-attempted"))
                     .alias("reason")))
    keys = F.broadcast(found.select("run", "pnum", "ptxt"))
    text = (records.join(keys, ["run", "pnum", "ptxt"]).select("run", "pnum", "ptxt", c("payload").alias("value"))
            .dropDuplicates(["run", "pnum", "ptxt"]))
    return found.join(text, ["run", "pnum", "ptxt"]).select("run", "value", "reason", "seen_count")
