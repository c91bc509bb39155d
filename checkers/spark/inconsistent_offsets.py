"""Inconsistent offsets as a Spark job: two different records seen at one offset, by
grouping (the Spark side of checkers/inconsistent_offsets.py)."""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .offsets import two_keys
from .views import DATA


def inconsistent_offsets(offsets: DataFrame, acks: DataFrame, records: DataFrame) -> DataFrame:
    """Observations are every ok append (offset O holds data V) and every record of every
    ok read, keyed by (type, payload); epochs are not compared. The grouping
    by (run, offset) of :func:`offsets.by_offset` flags the offsets where two
    keys were seen; their observations are then grouped by exact key (a
    second pass over the few such offsets only), and an offset with two
    or more variants is an anomaly.

    Returns ``run, offset, records`` with ``records`` an array of ``{type,
    payload, count}`` sorted by (type, payload).
    """
    c = F.col
    bad = offsets.where(two_keys()).select("run", "offset")
    obs = (acks.select("run", "offset", F.lit(DATA).alias("rtype"), c("value").alias("payload"))
           .unionByName(records.select("run", "offset", "rtype", "payload")))
    variants = (obs.join(F.broadcast(bad), ["run", "offset"])
                .groupBy("run", "offset", "rtype", "payload").agg(F.count("*").alias("count")))
    return (variants.groupBy("run", "offset")
            .agg(F.array_sort(F.collect_list(F.struct(c("rtype").alias("type"), "payload", "count")))
                 .alias("records"))
            .where(F.size("records") > 1))
