"""Nonmonotonic reads as a Spark job, with window functions (the Spark side of
checkers/nonmonotonic_read.py)."""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

#: History indices per bucket and per sub-bucket of the prefix-max scan.
BUCKET = 1 << 16
SUB_BUCKET = 1 << 6
#: Up to this many judged reads, they are broadcast to the observations of their sub-buckets.
MAX_BROADCAST_READS = 2_000_000

def nonmonotonic_reads(pairs: DataFrame, acks: DataFrame, reads: DataFrame, records: DataFrame
                       ) -> tuple[DataFrame, DataFrame]:
    """Find linearizable reads whose committed prefix is shorter than one observed
    before they were invoked, and ok reads that do not cover their range.

    1. Pairing (``pairs``: :func:`pairing.pair`, a window over each process
       in index order) gives each ok read's invoke.
    2. A read is malformed (checkers.nonmonotonic_read.malformed_read) when
       its ``from`` or high watermark is missing, ``to`` exceeds the high
       watermark, it holds other than ``end - from`` records, or one of its
       records (``records``: :func:`views.all_records`) is not ``placed``.
    3. Observations: ok appends (prefix end O+1) and well-formed
       linearizable reads (their high watermark), at their completion index.
    4. The longest prefix observed before each read's invoke
       (:func:`_prefix_before`): windows over per-bucket and per-sub-bucket
       maxima, plus the few observations in the read's own sub-bucket, so
       no single task holds a run and no window sorts every observation.
    A read is non-monotonic when its high watermark is below that prefix.
    The pages of a paged final committed read are one read (the first
    non-monotonic page is reported).

    Returns ``(nonmonotonic, malformed)``: ``run, op, invoke, node,
    high_watermark, earlier_op, earlier_high_watermark``, and ``run, op,
    node`` for ok reads whose records do not densely cover ``[from, to or
    high_watermark)``.
    """
    c = F.col
    invokes = (pairs.where((c("f") == "read") & c("ok") & c("paired"))
               .select("run", "index", "invoke"))
    covers = (c("from").isNotNull() & c("high_watermark").isNotNull()
              & (c("to").isNull() | (c("to") <= c("high_watermark")))
              & (c("nrec") == F.greatest(c("end") - c("from"), F.lit(0))))
    misplaced = records.where(~c("placed")).select("run", c("read").alias("index")).distinct()
    malformed = (reads.where(~F.coalesce(covers, F.lit(False))).select("run", "index")
                 .unionByName(misplaced).distinct())
    malformed = reads.join(malformed, ["run", "index"]).select("run", c("index").alias("op"), "node")
    lin = reads.where(c("linearizable") & F.coalesce(covers, F.lit(False))).join(
        misplaced, ["run", "index"], "left_anti")
    obs = (acks.select("run", c("index").alias("at"), (c("offset") + 1).alias("prefix"))
           .unionByName(lin.select("run", c("index").alias("at"), c("high_watermark").alias("prefix"))))
    judged = lin.join(invokes, ["run", "index"]).persist()
    broadcast_reads = judged.count() <= MAX_BROADCAST_READS
    best = _prefix_before(obs, judged.select("run", c("invoke").alias("at"), c("index").alias("read")),
                          broadcast_reads)
    found = (judged.join(best, ["run", "index"])
             .where(c("high_watermark") < c("best"))
             .select("run", c("index").alias("op"), "invoke", "node", "high_watermark",
                     c("best").alias("earlier_high_watermark"), (c("to").isNotNull() & c("final")).alias("page")))
    first_page = Window.partitionBy("run", "page").orderBy("invoke")
    found = (found.withColumn("rank", F.row_number().over(first_page))
             .where(~c("page") | (c("rank") == 1)).drop("rank", "page").persist())   # few rows, read twice
    found = (found.join(_earliest(obs, found, broadcast_reads), ["run", "op"])
             .select("run", "op", "invoke", "node", "high_watermark", "earlier_op", "earlier_high_watermark"))
    return found, malformed


def _earliest(obs: DataFrame, found: DataFrame, broadcast_reads: bool) -> DataFrame:
    """For each non-monotonic read of ``found`` (``run, op, invoke, earlier_high_watermark``),
    the first observation of ``obs`` (``run, at, prefix``) before its invoke that
    showed that longest prefix: ``run, op, earlier_op``. Kept apart from the
    prefix scan, whose maxima are then plain longs (a max over a struct
    has no hash aggregate: it sorted every observation)."""
    c = F.col
    f = found.select("run", "op", "invoke", c("earlier_high_watermark").alias("prefix"))
    return (obs.join(F.broadcast(f) if broadcast_reads else f, ["run", "prefix"])
            .where(c("at") < c("invoke")).groupBy("run", "op").agg(F.min("at").alias("earlier_op")))


def _prefix_before(obs: DataFrame, reads: DataFrame, broadcast_reads: bool) -> DataFrame:
    """For each read (``run, at`` = its invoke index, ``read``), the longest ``prefix`` of
    ``obs`` (``run, at, prefix``) with a smaller ``at``: ``run, index, best`` (null when
    there is none).

    The max before index i is the greatest of: the max over every earlier
    bucket (a window over per-bucket maxima), the max over earlier
    sub-buckets of i's bucket (a window over per-sub-bucket maxima), and the
    max over the observations in i's own sub-bucket before i (a join of the
    reads with those few observations). Only the last touches single
    observations, and each read meets at most SUB_BUCKET of them.
    """
    c = F.col
    per_sub = SUB_BUCKET
    per_bucket = BUCKET // SUB_BUCKET

    def sub(at: F.Column) -> F.Column:
        return F.floor(at / per_sub)

    # every sub-bucket holding an observation or a read has a row (a read's has max null)
    subs = (obs.select("run", sub(c("at")).alias("sb"), "prefix")
            .unionByName(reads.select("run", sub(c("at")).alias("sb"), F.lit(None).cast("bigint").alias("prefix")))
            .groupBy("run", "sb").agg(F.max("prefix").alias("smax"))
            .withColumn("bucket", F.floor(c("sb") / per_bucket)))
    earlier = Window.unboundedPreceding, -1
    subs = subs.withColumn("sub_before", F.max("smax").over(
        Window.partitionBy("run", "bucket").orderBy("sb").rowsBetween(*earlier)))
    buckets = (subs.groupBy("run", "bucket").agg(F.max("smax").alias("bmax"))
               .withColumn("bucket_before", F.max("bmax").over(
                   Window.partitionBy("run").orderBy("bucket").rowsBetween(*earlier)))
               .select("run", "bucket", "bucket_before"))
    r = reads.select("run", c("read").alias("index"), c("at").alias("invoke"), sub(c("at")).alias("sb"))
    inside = (obs.select("run", sub(c("at")).alias("sb"), "at", "prefix")
              .join(F.broadcast(r) if broadcast_reads else r, ["run", "sb"])
              .where(c("at") < c("invoke")).groupBy("run", "index").agg(F.max("prefix").alias("inside")))
    return (r.join(subs.select("run", "sb", "bucket", "sub_before"), ["run", "sb"])
            .join(buckets, ["run", "bucket"])
            .join(inside, ["run", "index"], "left")
            .select("run", "index", F.greatest("bucket_before", "sub_before", "inside").alias("best")))
