"""Nonmonotonic reads as a Spark job, with window functions (the Spark side of
checkers/nonmonotonic_read.py)."""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

#: History indices per bucket of the prefix-max scan.
BUCKET = 1 << 16

_WELL_FORMED = ("`from` is not null and high_watermark is not null"
                " and (`to` is null or `to` <= high_watermark)"
                " and size(records) = greatest(`end` - `from`, 0)"
                " and coalesce(forall(transform(records, (r, i) -> size(r) = 4"
                " and try_cast(r[0] as bigint) = `from` + i), x -> coalesce(x, false)), false)")


def nonmonotonic_reads(pairs: DataFrame, acks: DataFrame, reads: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Find linearizable reads whose committed prefix is shorter than one observed
    before they were invoked, and ok reads that do not cover their range.

    1. Pairing (``pairs``: :func:`pairing.pair`, a window over each process
       in index order) gives each ok read's invoke.
    2. Observations: ok appends (prefix end O+1) and well-formed
       linearizable reads (their high watermark), at their completion index.
    3. The longest prefix observed before each read's invoke is a running
       max in index order: per-bucket maxima over a window of buckets, plus
       a window inside the read's own bucket, so no single task holds a run.
    A read is non-monotonic when its high watermark is below that prefix.
    The pages of a paged final committed read are one read (the first
    non-monotonic page is reported).

    Returns ``(nonmonotonic, malformed)``: ``run, op, invoke, node,
    high_watermark, earlier_op, earlier_high_watermark``, and ``run, op,
    node`` for ok reads whose records do not densely cover ``[from, to or
    high_watermark)``.
    """
    c = F.col
    invokes = (pairs.where((c("f") == "read") & (c("type") == "ok") & c("paired"))
               .select("run", "index", "invoke"))
    checked = reads.withColumn("well_formed", F.expr(_WELL_FORMED))
    malformed = checked.where(~c("well_formed")).select("run", c("index").alias("op"), "node")
    lin = checked.where(c("well_formed") & c("linearizable"))
    seen_t = "struct<prefix:bigint,neg:bigint>"
    obs = (acks.select("run", c("index").alias("at"),
                       F.struct((c("offset") + 1).alias("prefix"), (-c("index")).alias("neg")).alias("seen"))
           .unionByName(lin.select("run", c("index").alias("at"),
                                   F.struct(c("high_watermark").alias("prefix"), (-c("index")).alias("neg"))
                                   .alias("seen"))))
    judged = lin.join(invokes, ["run", "index"])
    # events: observations at their completion index, reads at their invoke index
    ev = (obs.withColumn("read", F.lit(None).cast("bigint"))
          .unionByName(judged.select("run", c("invoke").alias("at"), F.lit(None).cast(seen_t).alias("seen"),
                                     c("index").alias("read")))
          .withColumn("bucket", F.floor(c("at") / BUCKET)))
    per_bucket = ev.where(c("seen").isNotNull()).groupBy("run", "bucket").agg(F.max("seen").alias("bmax"))
    buckets = (per_bucket.withColumn(
        "before", F.max("bmax").over(Window.partitionBy("run").orderBy("bucket")
                                     .rowsBetween(Window.unboundedPreceding, -1)))
        .select("run", "bucket", "before"))
    inside = Window.partitionBy("run", "bucket").orderBy("at").rowsBetween(Window.unboundedPreceding, -1)
    best = (ev.withColumn("in_bucket", F.max("seen").over(inside))
            .where(c("read").isNotNull())
            .join(buckets, ["run", "bucket"], "left")
            .select("run", c("read").alias("index"), "bucket", F.greatest("in_bucket", "before").alias("best")))
    # a read in a bucket with no observation takes the max over every earlier bucket
    earlier = per_bucket.select("run", c("bucket").alias("obs_bucket"), "bmax")
    fill = (best.where(c("best").isNull()).join(earlier, "run")
            .where(c("bucket") > c("obs_bucket")).groupBy("run", "index")
            .agg(F.max("bmax").alias("best")))
    best = best.where(c("best").isNotNull()).drop("bucket").unionByName(fill)
    found = (judged.join(best, ["run", "index"])
             .where(c("high_watermark") < c("best.prefix"))
             .select("run", c("index").alias("op"), "invoke", "node", "high_watermark",
                     (-c("best.neg")).alias("earlier_op"), c("best.prefix").alias("earlier_high_watermark"),
                     (c("to").isNotNull() & c("final")).alias("page")))
    first_page = Window.partitionBy("run", "page").orderBy("invoke")
    found = (found.withColumn("rank", F.row_number().over(first_page))
             .where(~c("page") | (c("rank") == 1)).drop("rank", "page"))
    return found, malformed
