"""Per-run statistics as Spark jobs: op counts, availability and latency (never a verdict)."""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

#: The ops of a kv run that ``check``'s stats line counts (harness/reports/summary.py, _kv_stats_line).
KV_FS = ("read", "write", "cas")
#: Width of an availability window, in ns (1 s), as in checkers/stats.py.
WINDOW_NS = 1_000_000_000


def run_stats(ops: DataFrame, pairs: DataFrame) -> DataFrame:
    """Per run: ``ops`` (well-formed ops), ``client_ops`` (client completions), ``ok``,
    ``fail``, ``info`` (completions of the run's workload ops, as ``kraft-chaos check``
    prints them: its appends when it invoked any append, else its kv reads,
    writes and cas; never describe-quorum or log reads), ``availability`` (the fraction of 1 s windows, from the
    first to the last client op, holding an ok client op other than
    describe-quorum), ``latency_p50_ms``, ``latency_p99_ms`` (ok client ops,
    invoke to completion; percentile_approx, accuracy 10,000), and
    ``nemesis_fs`` (the nemesis kinds seen: ``start-X`` ops).

    ``unpaired``: ops that break Jepsen pairing (an invoke while the
    process has one in flight, a completion with no invoke in flight or of
    another f), as history.pair_ops would refuse them.

    ``pairs``: :func:`pairing.pair` of ``ops`` (latency is a completion's
    time minus its invoke's).
    """
    c = F.col
    is_client = c("process") != "nemesis"
    is_append = c("f") == "append"
    is_kv = c("f").isin(*KV_FS)
    windows = F.greatest(F.lit(1), F.ceil((c("t1") - c("t0")) / WINDOW_NS))
    unpaired = pairs.where(~c("paired")).groupBy("run").agg(F.count("*").alias("unpaired"))
    ms = (pairs.where(c("paired") & c("ok") & c("client"))
          .select("run", ((c("time") - c("invoke_time")) / 1e6).alias("ms")))
    latency = (ms.groupBy("run")
               .agg(F.percentile_approx("ms", [0.5, 0.99], 10000).alias("q"))
               .select("run", c("q")[0].alias("latency_p50_ms"), c("q")[1].alias("latency_p99_ms")))
    counts = (ops.groupBy("run")
              .agg(F.count("*").alias("ops"),
                   F.sum(F.when(is_client & (c("type") != "invoke"), 1).otherwise(0)).alias("client_ops"),
                   *[F.sum(F.when(is_client & is_append & (c("type") == t), 1).otherwise(0)).alias(f"a_{t}")
                     for t in ("ok", "fail", "info")],
                   *[F.sum(F.when(is_client & is_kv & (c("type") == t), 1).otherwise(0)).alias(f"k_{t}")
                     for t in ("ok", "fail", "info")],
                   F.sum(F.when(is_client & is_append & (c("type") == "invoke"), 1).otherwise(0))
                   .alias("a_invoked"),
                   F.min(F.when(is_client, c("time"))).alias("t0"), F.max(F.when(is_client, c("time"))).alias("t1")))
    # apart from the counts: a set aggregate has no generated code, and would make every sum
    # above interpreted over every op
    nemesis_fs = (ops.where(~is_client).groupBy("run")
                  .agg(F.array_sort(F.collect_set(F.regexp_extract("f", r"^start-(.+)$", 1))).alias("nemesis_fs")))
    span = counts.where(c("t0").isNotNull()).select("run", "t0", "t1")
    okw = (ops.where(is_client & (c("type") == "ok") & (c("f") != "describe-quorum"))
           .join(F.broadcast(span), "run")
           .select("run", F.least(F.floor((c("time") - c("t0")) / WINDOW_NS), windows - 1).alias("w"))
           .groupBy("run").agg(F.countDistinct("w").alias("ok_windows")))
    return (counts.join(okw, "run", "left").join(latency, "run", "left").join(nemesis_fs, "run", "left")
            .join(unpaired, "run", "left").fillna({"unpaired": 0})
            .withColumn("availability", F.when(c("t0").isNotNull(),
                                               F.coalesce(c("ok_windows"), F.lit(0)) / windows))
            .withColumn("nemesis_fs", F.array_remove(F.coalesce("nemesis_fs", F.array().cast("array<string>")), ""))
            .select("*", *[F.when(c("a_invoked") > 0, c(f"a_{t}")).otherwise(c(f"k_{t}")).alias(t)
                           for t in ("ok", "fail", "info")])
            .drop("t0", "t1", "ok_windows", "a_invoked", *[f"{p}_{t}" for p in "ak" for t in ("ok", "fail", "info")]))
