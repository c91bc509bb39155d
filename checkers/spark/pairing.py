"""Jepsen pairing as a Spark job: each completion with its process's invoke."""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window


def pair(ops: DataFrame) -> DataFrame:
    """A window over each process's ops in index order puts every op beside the op
    before it. Returns the completions (and the invokes that break pairing):
    ``run, index, client (false for the nemesis), f, type, time, invoke, invoke_time,
    paired``;
    ``paired`` is false for an invoke while the process has one in flight, or a
    completion whose previous op is not an invoke of the same ``f`` (what
    harness.history.pair_ops refuses).
    """
    c = F.col
    w = Window.partitionBy("run", "proc").orderBy("index")
    nemesis = c("process") == "nemesis"
    proc = F.when(nemesis, F.lit(-1)).otherwise(c("process").try_cast("bigint"))
    seq = (ops.select("run", "index", proc.alias("proc"), (~nemesis).alias("client"), "f", "type", "time")
           .select("run", "index", "client", "f", "type", "time",
                   F.lag("index").over(w).alias("invoke"), F.lag("time").over(w).alias("invoke_time"),
                   F.lag("type").over(w).alias("prev"), F.lag("f").over(w).alias("prev_f")))
    ok_pair = (c("prev") == "invoke") & (c("prev_f") == c("f"))
    return (seq.where((c("type") != "invoke") | (c("prev") == "invoke"))
            .withColumn("paired", (c("type") != "invoke") & F.coalesce(ok_pair, F.lit(False)))
            .drop("prev", "prev_f"))
