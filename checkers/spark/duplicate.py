"""Duplicates as a Spark job: one data value at two or more offsets of one read, by
grouping (the Spark side of checkers/duplicate.py)."""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .views import DATA


def duplicates(values: DataFrame, records: DataFrame) -> DataFrame:
    """Values read at two or more offsets (from :func:`values.by_value`) are candidates;
    their records are grouped by (run, read, value), the final committed log's
    pages as one read, and a value at two or more distinct offsets of one
    read is a duplicate. One anomaly per (run, value, offsets), as the
    single-process checker reports it: ``run, value, offsets (sorted),
    op_count`` (reads showing it)."""
    c = F.col
    candidates = values.where(c("lo") != c("hi")).select("run", "pnum", "ptxt")
    per_read = (records.where(c("rtype") == DATA)
                .join(F.broadcast(candidates), ["run", "pnum", "ptxt"])
                .groupBy("run", "group", "pnum", "ptxt")
                .agg(F.array_sort(F.collect_set("offset")).alias("offsets"), F.first("payload").alias("value"))
                .where(F.size("offsets") >= 2))
    return (per_read.groupBy("run", "pnum", "ptxt", "offsets")
            .agg(F.count("*").alias("op_count"), F.first("value").alias("value"))
            .select("run", "value", "offsets", "op_count"))
