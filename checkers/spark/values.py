"""One grouping of appended and read values by (run, value), shared by the phantom and
duplicate jobs: each record is shuffled once."""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .views import DATA, payload_key


def by_value(ops: DataFrame, records: DataFrame) -> DataFrame:
    """Group by (run, pnum, ptxt): the append invokes and fails of each value, and the
    data records holding it.

    Returns ``run, pnum, ptxt, attempted`` (an append of it was invoked),
    ``failed`` (one ended in fail), ``seen_count`` (read records holding
    it), ``lo``/``hi`` (the smallest and largest offset it was read at:
    they differ when it was read at two offsets). Every aggregate is
    fixed-width, so this is one hash aggregate.
    """
    c = F.col
    appends = (ops.where((c("f") == "append") & c("type").isin("invoke", "fail") & c("value").isNotNull())
               .select("run", *payload_key(c("value")), (c("type") == "invoke").alias("inv"),
                       (c("type") == "fail").alias("fail"), F.lit(None).cast("bigint").alias("offset")))
    seen = (records.where(c("rtype") == DATA)
            .select("run", "pnum", "ptxt", F.lit(False).alias("inv"), F.lit(False).alias("fail"), "offset"))
    return (appends.unionByName(seen).groupBy("run", "pnum", "ptxt")
            .agg(F.max("inv").alias("attempted"), F.max("fail").alias("failed"),
                 F.count("offset").alias("seen_count"),
                 F.min("offset").alias("lo"), F.max("offset").alias("hi")))
